"""Which languages semfora understands, at what level, and how a path maps to one.

Plain data only: no tree-sitter import here, so `semfora languages` and file discovery
stay cheap. Extraction rules live in ``lang_*.py``; queries in ``queries/*.scm``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Literal

LanguageLevel = Literal["full", "definitions"]


@dataclass(frozen=True)
class LanguageInfo:
    name: str
    extensions: tuple[str, ...]
    level: LanguageLevel


# The 15 main languages: definitions, calls and imports.
FULL_LANGUAGES: tuple[LanguageInfo, ...] = (
    LanguageInfo("python", (".py", ".pyi", ".pyw"), "full"),
    LanguageInfo("javascript", (".js", ".jsx", ".mjs", ".cjs"), "full"),
    LanguageInfo("typescript", (".ts", ".mts", ".cts"), "full"),
    LanguageInfo("tsx", (".tsx",), "full"),
    LanguageInfo("go", (".go",), "full"),
    LanguageInfo("rust", (".rs",), "full"),
    LanguageInfo("java", (".java",), "full"),
    LanguageInfo("c", (".c", ".h"), "full"),
    LanguageInfo("cpp", (".cpp", ".cc", ".cxx", ".c++", ".hpp", ".hh", ".hxx", ".h++", ".ipp"), "full"),
    LanguageInfo("csharp", (".cs",), "full"),
    LanguageInfo("ruby", (".rb", ".rake", ".gemspec"), "full"),
    LanguageInfo("php", (".php", ".phtml"), "full"),
    LanguageInfo("kotlin", (".kt", ".kts"), "full"),
    LanguageInfo("swift", (".swift",), "full"),
    LanguageInfo("bash", (".sh", ".bash", ".zsh"), "full"),
)

# Languages of the grammar pack with a definitions query in queries/<name>.scm. Perl is left out on
# purpose: its grammar's external scanner loops forever on some malformed input, which no
# timeout can interrupt, and one bad file must never hang an index run.
DEFINITION_LANGUAGES: tuple[LanguageInfo, ...] = (
    LanguageInfo("lua", (".lua",), "definitions"),
    LanguageInfo("scala", (".scala", ".sc"), "definitions"),
    LanguageInfo("elixir", (".ex", ".exs"), "definitions"),
    LanguageInfo("haskell", (".hs",), "definitions"),
    LanguageInfo("ocaml", (".ml",), "definitions"),
    LanguageInfo("dart", (".dart",), "definitions"),
    LanguageInfo("zig", (".zig",), "definitions"),
    LanguageInfo("julia", (".jl",), "definitions"),
    LanguageInfo("r", (".r", ".R"), "definitions"),
    LanguageInfo("objc", (".m", ".mm"), "definitions"),
    LanguageInfo("erlang", (".erl", ".hrl"), "definitions"),
    LanguageInfo("elm", (".elm",), "definitions"),
    LanguageInfo("solidity", (".sol",), "definitions"),
    LanguageInfo("clojure", (".clj", ".cljs", ".cljc"), "definitions"),
    LanguageInfo("fsharp", (".fs", ".fsx"), "definitions"),
    LanguageInfo("nim", (".nim",), "definitions"),
    LanguageInfo("d", (".d",), "definitions"),
    LanguageInfo("fortran", (".f90", ".f95", ".f03"), "definitions"),
    LanguageInfo("gleam", (".gleam",), "definitions"),
    LanguageInfo("hcl", (".tf", ".hcl"), "definitions"),
    LanguageInfo("proto", (".proto",), "definitions"),
    LanguageInfo("graphql", (".graphql", ".gql"), "definitions"),
    LanguageInfo("cuda", (".cu", ".cuh"), "definitions"),
    LanguageInfo("arduino", (".ino",), "definitions"),
    LanguageInfo("glsl", (".glsl", ".vert", ".frag"), "definitions"),
    LanguageInfo("hlsl", (".hlsl", ".fx"), "definitions"),
    LanguageInfo("starlark", (".star", ".bzl"), "definitions"),
    LanguageInfo("powershell", (".ps1", ".psm1"), "definitions"),
    LanguageInfo("cmake", (".cmake",), "definitions"),
    LanguageInfo("commonlisp", (".lisp", ".lsp"), "definitions"),
    LanguageInfo("elisp", (".el",), "definitions"),
    LanguageInfo("tcl", (".tcl",), "definitions"),
    LanguageInfo("vim", (".vim",), "definitions"),
    LanguageInfo("ada", (".adb", ".ads"), "definitions"),
    LanguageInfo("pascal", (".pas", ".dpr"), "definitions"),
    LanguageInfo("haxe", (".hx",), "definitions"),
    LanguageInfo("purescript", (".purs",), "definitions"),
    LanguageInfo("gdscript", (".gd",), "definitions"),
    LanguageInfo("verilog", (".v", ".sv"), "definitions"),
    LanguageInfo("thrift", (".thrift",), "definitions"),
    LanguageInfo("prisma", (".prisma",), "definitions"),
    LanguageInfo("apex", (".cls", ".trigger"), "definitions"),
    LanguageInfo("odin", (".odin",), "definitions"),
    LanguageInfo("luau", (".luau",), "definitions"),
    LanguageInfo("squirrel", (".nut",), "definitions"),
)

# Well-known file names without a telling extension.
FILENAMES: dict[str, str] = {
    "Rakefile": "ruby",
    "Gemfile": "ruby",
    "Vagrantfile": "ruby",
    ".bashrc": "bash",
    ".bash_profile": "bash",
    ".zshrc": "bash",
    ".profile": "bash",
    "CMakeLists.txt": "cmake",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    ".vimrc": "vim",
}
# Interpreter names in a ``#!`` line.
SHEBANGS: dict[str, str] = {
    "python": "python",
    "python3": "python",
    "node": "javascript",
    "bash": "bash",
    "sh": "bash",
    "zsh": "bash",
    "ruby": "ruby",
    "php": "php",
    "lua": "lua",
}


def _extension_map() -> dict[str, str]:
    out: dict[str, str] = {}
    for info in FULL_LANGUAGES + DEFINITION_LANGUAGES:
        for ext in info.extensions:
            out.setdefault(ext, info.name)
    return out


_BY_EXTENSION = _extension_map()
_BY_NAME = {info.name: info for info in FULL_LANGUAGES + DEFINITION_LANGUAGES}


def list_languages() -> list[LanguageInfo]:
    """Every supported language, the full ones first."""
    return list(FULL_LANGUAGES + DEFINITION_LANGUAGES)


def language_info(name: str) -> LanguageInfo | None:
    return _BY_NAME.get(name)


def language_for_path(path: str, first_line: bytes | None = None) -> str | None:
    """Language by extension, then well-known file name, then (if given) the shebang line."""
    pure = PurePath(path)
    suffix = pure.suffix
    if suffix:
        found = _BY_EXTENSION.get(suffix) or _BY_EXTENSION.get(suffix.lower())
        if found is not None:
            return found
    found = FILENAMES.get(pure.name)
    if found is not None:
        return found
    if first_line and first_line.startswith(b"#!"):
        words = first_line[2:].decode("utf-8", "replace").split()
        if words:
            interpreter = words[1] if words[0].endswith("/env") and len(words) > 1 else words[0]
            interpreter = interpreter.rsplit("/", 1)[-1]
            return SHEBANGS.get(interpreter) or SHEBANGS.get(interpreter.rstrip("0123456789."))
    return None
