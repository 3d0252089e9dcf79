"""What a change means beneath its text: import surfaces, parameters and code fingerprints.

Owns the Python import surface (module paths under ``src/`` layouts, the names a module binds,
re-exports and names served by a module ``__getattr__``), parameter lists compared by name, kind
and default, and fingerprints of a definition's code with comments, docstrings, annotations and
formatting removed. Pure functions over source text: no git, no files, no tree-sitter.
"""

from __future__ import annotations

import ast
import re
import textwrap
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath

# Directories that hold a distribution's packages without being part of the import path.
SOURCE_ROOTS = ("src/", "lib/", "python/")
# Files that are part of the repository but never of what users import.
NON_LIBRARY_FILES = frozenset(
    {"setup.py", "conftest.py", "noxfile.py", "fabfile.py", "tasks.py", "manage.py", "conf.py"}
)
# Top-level directories of tooling rather than library code.
NON_LIBRARY_DIRS = frozenset(
    {"docs", "doc", "scripts", "tools", "bin", "benchmarks", "bench", "ci", "examples", "example"}
)
PY_SUFFIXES = (".py", ".pyi")


def module_name(path: str) -> str | None:
    """Dotted import path of a Python file (``src/pkg/a.py`` -> ``pkg.a``), None for other files."""
    if not path.endswith(PY_SUFFIXES):
        return None
    rel = path
    for root in SOURCE_ROOTS:
        if rel.startswith(root):
            rel = rel[len(root) :]
            break
    parts = list(PurePosixPath(rel).with_suffix("").parts)
    if parts and parts[-1] == "__init__":
        parts.pop()
    if not parts or not all(p.isidentifier() for p in parts):
        return None
    return ".".join(parts)


def is_library_path(path: str, roots: tuple[str, ...] = ()) -> bool:
    """Part of what a package's users import: not tests, docs, examples, build scripts or tooling.

    ``roots`` are the directories that hold the library when the project says so by its layout
    (``src/``): then a top-level helper package (a test server, a benchmark) is not library code.
    """
    from engine.policy.paths import PathKind, classify_path

    if roots and not path.startswith(roots):
        return False
    if classify_path(path) is not PathKind.SOURCE:
        return False
    p = PurePosixPath(path)
    if p.name in NON_LIBRARY_FILES:
        return False
    return not (len(p.parts) > 1 and p.parts[0] in NON_LIBRARY_DIRS)


def is_private_name(name: str) -> bool:
    """``_x`` is private by convention; ``__x__`` (dunder) is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_public_module(module: str) -> bool:
    return not any(is_private_name(part) for part in module.split("."))


# --------------------------------------------------------------------------- module surface


@dataclass(frozen=True)
class ModuleSurface:
    """The names ``from module import name`` can reach."""

    names: frozenset[str]
    # ``__all__`` when it is a literal list/tuple, else None.
    all_names: frozenset[str] | None
    # String constants inside a module-level ``__getattr__`` (deprecation shims serve these).
    dynamic: frozenset[str]
    star_import: bool

    def binds(self, name: str) -> bool:
        return name in self.names or name in self.dynamic or self.star_import


def module_surface(source: str) -> ModuleSurface | None:
    """Names bound at module level (definitions, assignments, imports); None if it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    names: set[str] = set()
    dynamic: set[str] = set()
    all_names: frozenset[str] | None = None
    star = False

    def collect(body: list[ast.stmt]) -> None:
        nonlocal all_names, star
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
                if node.name == "__getattr__" and not isinstance(node, ast.ClassDef):
                    dynamic.update(
                        c.value
                        for c in ast.walk(node)
                        if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value.isidentifier()
                    )
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    for leaf in ast.walk(target):
                        if isinstance(leaf, ast.Name):
                            names.add(leaf.id)
                            if leaf.id == "__all__" and node.value is not None:
                                found = _literal_strings(node.value)
                                if found is not None:
                                    all_names = frozenset(found)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if alias.name == "*":
                        star = True
                    else:
                        names.add(alias.asname or alias.name)
            elif isinstance(node, (ast.If, ast.Try)):
                # Conditional definitions (``if TYPE_CHECKING:``, ``try: import x except ...``) still bind.
                collect(node.body)
                collect(node.orelse)
                for handler in getattr(node, "handlers", []):
                    collect(handler.body)

    collect(tree.body)
    return ModuleSurface(frozenset(names), all_names, frozenset(dynamic), star)


def _literal_strings(node: ast.expr) -> list[str] | None:
    if isinstance(node, (ast.List, ast.Tuple)):
        out = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
        return out if len(out) == len(node.elts) else None
    return None


def is_exported(surface: ModuleSurface | None, name: str) -> bool:
    """Public by the module's own declaration: in ``__all__`` when there is one, else not private."""
    if is_private_name(name):
        return False
    if surface is None or surface.all_names is None:
        return True
    return name in surface.all_names


# A package that re-exports at least this share of a submodule's public functions and classes is
# that submodule's public face (``werkzeug.datastructures`` re-exports its ``mixins`` classes): what
# it leaves out is the submodule's own business. Below it (``werkzeug`` re-exports ``run_simple``
# of ``serving``'s many names) the package merely offers a shortcut and the submodule stays public.
CURATED_SHARE = 0.5
# Directories of vendored third-party code inside a package: not the project's own import surface.
VENDORED_DIRS = frozenset(
    {"_vendor", "vendor", "vendored", "_vendored", "extern", "_extern", "thirdparty", "packages"}
)


def is_vendored_module(module: str) -> bool:
    """``pkg.packages.six``, ``pkg._vendor.x``: a vendored copy below the project's package."""
    parts = module.split(".")
    return any(p in VENDORED_DIRS for p in parts[1:-1])


def names_imported_from(package_source: str, package: str, module: str) -> set[str] | None:
    """Names the package ``__init__`` (``package_source`` of dotted ``package``) imports from its
    submodule ``module``; None when it star-imports it or does not parse."""
    tree = _parse(package_source)
    if tree is None:
        return None
    out: set[str] = set()
    pkg_parts = package.split(".")

    def visit(body: list[ast.stmt]) -> bool:
        for node in body:
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = pkg_parts[: len(pkg_parts) - (node.level - 1)] if node.level > 1 else pkg_parts
                    resolved = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    resolved = node.module or ""
                if resolved == module:
                    for alias in node.names:
                        if alias.name == "*":
                            return False
                        out.add(alias.name)
            elif isinstance(node, (ast.If, ast.Try)):
                handlers = [h.body for h in getattr(node, "handlers", [])]
                for block in (node.body, node.orelse, *handlers):
                    if not visit(block):
                        return False
        return True

    return out if visit(tree.body) else None


def curated_out(reexported: set[str], public_names: set[str], name: str) -> bool:
    """``name`` (a public top-level name of a submodule) is left out of a package that curates the
    submodule: the package re-exports most of it, and not this."""
    if not reexported or not public_names or name in reexported:
        return False
    return len(reexported & public_names) >= CURATED_SHARE * len(public_names)


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # positional-only | positional | keyword-only | *args | **kwargs
    default: str | None  # source of the default, None when required


def python_params(definition: str) -> tuple[Param, ...] | None:
    """Parameters of the first function defined in ``definition`` (its source), or None."""
    func = _first_function(definition)
    if func is None:
        return None
    a = func.args
    out: list[Param] = []
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
        kind = "positional-only" if i < len(a.posonlyargs) else "positional"
        out.append(Param(arg.arg, kind, ast.unparse(default) if default is not None else None))
    if a.vararg is not None:
        out.append(Param(a.vararg.arg, "*args", None))
    for arg, kw_default in zip(a.kwonlyargs, a.kw_defaults, strict=True):
        out.append(
            Param(arg.arg, "keyword-only", ast.unparse(kw_default) if kw_default is not None else None)
        )
    if a.kwarg is not None:
        out.append(Param(a.kwarg.arg, "**kwargs", None))
    return tuple(out)


def _first_function(definition: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    tree = _parse(definition)
    if tree is None:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return node
    return None


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError, RecursionError):
        return None


# Generic parameter lists (other languages): ``name``, ``name = default``, ``name?: T``, ``T name``.
_PARAM_NAME = re.compile(r"([A-Za-z_$][\w$]*)\s*(\?)?\s*(?::[^=]*)?(=.*)?$")


def generic_params(signature: str) -> tuple[Param, ...] | None:
    """Parameter names of a one-line signature in a C-like language (best effort), or None."""
    start = signature.find("(")
    if start < 0:
        return None
    depth, end = 0, -1
    for i in range(start, len(signature)):
        ch = signature[i]
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
            if depth == 0:
                end = i
                break
    if end < 0:
        return None
    inner = signature[start + 1 : end]
    parts, depth, current = [], 0, ""
    for ch in inner:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        parts.append(current)
    out = []
    for raw in parts:
        text = raw.strip()
        if not text:
            continue
        variadic = text.startswith("...")
        text = text.lstrip(".*&")
        # ``Type name`` (C, Java, Go ``name Type``): the identifier beside the type; take the last
        # word before any default or annotation for C-like, the first for ``name: T`` forms.
        head = text.split("=", 1)[0]
        if ":" in head:
            name = head.split(":", 1)[0].strip().rstrip("?")
        else:
            words = re.findall(r"[A-Za-z_$][\w$]*", head)
            if not words:
                continue
            name = words[-1]
        optional = "=" in text or "?" in head
        out.append(Param(name, "*args" if variadic else "positional", "…" if optional else None))
    return tuple(out)


# Languages whose callers may pass arguments by name (``f(timeout=3)``, Kotlin's ``f(timeout = 3)``,
# C#'s ``f(timeout: 3)``, PHP 8's named arguments): there renaming a parameter breaks a caller.
# JavaScript, TypeScript, Java, Go, C and Rust pass by position only.
NAMED_ARGUMENT_LANGUAGES = frozenset({"python", "kotlin", "swift", "csharp", "php", "ruby"})


def parameter_changes(
    before: tuple[Param, ...], after: tuple[Param, ...], *, named_arguments: bool = True
) -> tuple[str, ...]:
    """What breaks (or silently changes) for existing callers; compatible additions say nothing.
    ``named_arguments``: callers may pass arguments by name, so a renamed parameter breaks them.

    Positional parameters are compared by position (a rename of ``_key`` to ``key`` is not a
    removal plus an addition), keyword-only ones by name, ``*args``/``**kwargs`` by kind (their
    names are invisible to callers). Private (``_x``) parameters are nobody's business but the
    function's.
    """
    out: list[str] = []
    positional = ("positional-only", "positional")
    old_pos = [p for p in before if p.kind in positional]
    new_pos = [p for p in after if p.kind in positional]
    old_var = {p.kind for p in before if p.kind in ("*args", "**kwargs")}
    new_var = {p.kind for p in after if p.kind in ("*args", "**kwargs")}
    pairs: list[tuple[Param, Param]] = []
    dropped = _dropped_inside([p.name for p in old_pos], [p.name for p in new_pos])
    if dropped:
        # A parameter taken out from between others (``cls`` from ``(..., cls=None, silent=True)``)
        # is one removal that shifts the rest, not a rename of ``cls`` to ``silent`` and a removal
        # of ``silent``.
        by_name = {p.name: p for p in new_pos}
        pairs = [(a, by_name[a.name]) for a in old_pos if a.name in by_name]
        keyword_only = {p.name for p in after if p.kind == "keyword-only"}
        out.extend(_removed_inside(dropped, [p.name for p in old_pos], by_name, keyword_only, new_var))
    for i, a in enumerate(old_pos):
        if dropped:
            break
        if i < len(new_pos):
            b = new_pos[i]
            pairs.append((a, b))
            if a.name != b.name and a.kind == "positional" and not is_private_name(a.name):
                if any(p.name == a.name for p in after):
                    out.append("positional parameters reordered")
                elif named_arguments:
                    out.append(f"parameter {a.name!r} renamed to {b.name!r} (keyword callers break)")
        elif "*args" not in new_var and not is_private_name(a.name):
            if not any(p.name == a.name and p.kind == "keyword-only" for p in after):
                out.append(f"parameter {a.name!r} removed")
            else:
                out.append(f"parameter {a.name!r} became keyword-only")
    for b in new_pos[len(old_pos) :]:
        if b.default is None and "*args" not in old_var and not any(p.name == b.name for p in before):
            out.append(f"new required parameter {b.name!r}")
    old_kw = {p.name: p for p in before if p.kind == "keyword-only"}
    new_kw = {p.name: p for p in after if p.kind == "keyword-only"}
    for name, a in old_kw.items():
        if name in new_kw:
            pairs.append((a, new_kw[name]))
        elif (
            "**kwargs" not in new_var
            and not is_private_name(name)
            and not any(p.name == name for p in new_pos)
        ):
            out.append(f"parameter {name!r} removed")
    for name, b in new_kw.items():
        if name not in old_kw and b.default is None and not any(p.name == name for p in old_pos):
            out.append(f"new required keyword-only parameter {name!r}")
    if "*args" in old_var and "*args" not in new_var and len(new_pos) <= len(old_pos):
        out.append("*args removed")
    if "**kwargs" in old_var and "**kwargs" not in new_var and not new_kw:
        out.append("**kwargs removed")
    if any(
        a.kind == "positional" and b.kind == "positional-only" and not is_private_name(a.name)
        for a, b in pairs
    ):
        out.append("parameters became positional-only")
    for a, b in pairs:
        if a.name != b.name:
            continue
        if a.default is not None and b.default is None:
            out.append(f"parameter {a.name!r} lost its default")
        elif (
            a.default is not None
            and b.default is not None
            and a.default != b.default
            and "…" not in (a.default, b.default)
            # ``_UNSET``-style sentinels stand for "not given": the old default still applies.
            and not _is_sentinel(b.default)
        ):
            old, new = _shown_default(a.name, a.default), _shown_default(b.name, b.default)
            out.append(f"default of {a.name!r} changed from {old} to {new}")
    return tuple(sorted(set(out)))


def _shown_default(name: str, default: str) -> str:
    """A parameter's default as a change names it: masked when it is a secret (``password="..."``
    is a secret assignment wherever it is printed; the signatures beside it are masked already)."""
    from engine.policy.redaction import MASK, contains_secret

    return MASK if contains_secret(f"{name}={default}") or contains_secret(default) else default


def _dropped_inside(old: list[str], new: list[str]) -> list[str]:
    """The names taken out of ``old`` to leave ``new`` (same order), when one of them stood before
    a name that stays; [] when ``new`` is not ``old`` less some names, or only its tail went."""
    if len(new) >= len(old):
        return []
    kept = iter(old)
    if not all(name in kept for name in new):  # ``new`` is no subsequence of ``old``
        return []
    dropped = [name for name in old if name not in new]
    last_kept = max(old.index(name) for name in new) if new else -1
    return dropped if any(old.index(name) < last_kept for name in dropped) else []


def _removed_inside(
    dropped: list[str], old: list[str], kept: Mapping[str, Param], keyword_only: set[str], variadic: set[str]
) -> list[str]:
    out = []
    for name in dropped:
        if is_private_name(name):
            continue
        if name in keyword_only:
            text = f"parameter {name!r} became keyword-only"
        else:
            text = f"parameter {name!r} removed" + (
                " (**kwargs still takes it by keyword)" if "**kwargs" in variadic else ""
            )
        later = [repr(n) for n in old[old.index(name) + 1 :] if n in kept]
        if later:
            shown = ", ".join(later[:3]) + (" ..." if len(later) > 3 else "")
            text += f"; {shown} moved up a position (positional callers break)"
        out.append(text)
    return out


def _is_sentinel(default: str) -> bool:
    return bool(
        re.fullmatch(
            r"_[A-Z_]*(UNSET|MISSING|SENTINEL|DEFAULT|NOTSET)[A-Z_]*|_?(missing|sentinel|unset)", default
        )
    )


# --------------------------------------------------------------------------- fingerprints


class _Strip(ast.NodeTransformer):
    """Removes what does not change behaviour: annotations, docstrings, exception chaining, and
    (optionally) the bodies of nested definitions, which are fingerprinted on their own."""

    def __init__(self, nested_bodies: bool, aliases: Mapping[str, str] | None = None) -> None:
        self.nested_bodies = nested_bodies
        self.depth = 0
        # Local name -> dotted path it was imported as (``Popen`` -> ``subprocess.Popen``): with
        # these, ``from m import n; n()`` and ``import m; m.n()`` are the same call.
        self.aliases = dict(aliases) if aliases is not None else None

    def _strip_doc(self, body: list[ast.stmt]) -> list[ast.stmt]:
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            body = body[1:] or [ast.Pass()]
        return body

    def _definition(self, node: ast.AST) -> ast.AST | None:
        assert isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        if any(_decorator_name(d) == "overload" for d in node.decorator_list):
            return None  # a typing.overload declaration: a signature for type checkers only
        if self.depth > 0 and not self.nested_bodies:
            # A nested definition counts by its name only; its own change is reported on its own.
            return ast.Expr(value=ast.Name(id=f"<def {node.name}>", ctx=ast.Load()))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            node.type_comment = None
        else:
            # ``class A(object)`` is ``class A`` (UP004); a base's type arguments
            # (``MutableMapping[str, str | None]``) are for type checkers.
            node.bases = [
                b.value if isinstance(b, ast.Subscript) else b
                for b in node.bases
                if not (isinstance(b, ast.Name) and b.id == "object")
            ]
        node.body = self._strip_doc(node.body)
        self.depth += 1
        try:
            self.generic_visit(node)
        finally:
            self.depth -= 1
        return node

    visit_FunctionDef = _definition
    visit_AsyncFunctionDef = _definition
    visit_ClassDef = _definition

    def _import(self, node: ast.AST) -> ast.AST | None:
        # With aliases resolved, an import inside a definition only says where a name comes from
        # (moving it to the top of the module changes no behaviour the review cares about). The
        # names it binds are resolved in the statements that follow it.
        if self.aliases is None or self.depth == 0:
            return node
        if isinstance(node, ast.ImportFrom) and node.module is not None:
            for alias in node.names:
                if alias.name != "*":
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
        return None

    visit_Import = _import
    visit_ImportFrom = _import

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt] | None:
        # ``if TYPE_CHECKING: <declarations> else: <code>`` runs the code, and only the code.
        if _type_checking_only(node.test):
            out: list[ast.stmt] = []
            for child in node.orelse:
                kept = self.visit(child)
                if isinstance(kept, list):
                    out.extend(kept)
                elif kept is not None:
                    out.append(kept)
            return out or None
        self.generic_visit(node)
        return node

    def visit_arg(self, node: ast.arg) -> ast.AST:
        node.annotation = None
        node.type_comment = None
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        if node.value is None:
            return ast.Pass()
        return ast.Assign(targets=[node.target], value=self.visit(node.value))

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> ast.AST:
        # ``except E as e: raise X from e``: once the chaining is gone, an unused name is too.
        self.generic_visit(node)
        if node.name and not any(
            isinstance(n, ast.Name) and n.id == node.name for b in node.body for n in ast.walk(b)
        ):
            node.name = None
        return node

    def visit_Raise(self, node: ast.Raise) -> ast.AST:
        node.cause = None  # ``raise X from None`` changes the traceback, not the behaviour
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        # typing.cast(T, value) is value at run time.
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name == "cast" and len(node.args) == 2 and not node.keywords:
            return self.visit(node.args[1])
        if isinstance(func, ast.Subscript):
            # A generic class called with its type arguments builds what the bare class builds
            # (flask 52df9eed: ``ConfigAttribute[str | bytes | None]("SECRET_KEY")``).
            node.func = func.value
        self.generic_visit(node)
        if isinstance(func, ast.Name) and func.id == "super" and len(node.args) == 2:
            node.args = []  # super(Class, self) is super() (pyupgrade UP008)
        if isinstance(func, ast.Name) and func.id == "open" and len(node.args) == 2:
            mode = node.args[1]
            if isinstance(mode, ast.Constant) and mode.value in ("r", "rt"):
                node.args = node.args[:1]  # open(f, "r") is open(f) (UP015)
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "format"
            and isinstance(func.value, ast.Constant)
            and isinstance(func.value.value, str)
        ):
            joined = _format_call(func.value.value, node.args, node.keywords)
            if joined is not None:
                return joined
        return node

    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        self.generic_visit(node)
        if (
            isinstance(node.op, ast.Mod)
            and isinstance(node.left, ast.Constant)
            and isinstance(node.left.value, str)
        ):
            values = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            joined = _percent_format(node.left.value, values)
            if joined is not None:
                return joined
        return node

    def visit_JoinedStr(self, node: ast.JoinedStr) -> ast.AST:
        self.generic_visit(node)
        return _merged(node.values)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in _OSERROR_ALIASES:
            node.id = "OSError"  # IOError, EnvironmentError... are OSError (UP024)
            return node
        dotted = self.aliases.get(node.id) if self.aliases is not None else None
        if dotted and "." in dotted and isinstance(node.ctx, ast.Load):
            out: ast.expr = ast.Name(id=dotted.split(".")[0], ctx=ast.Load())
            for part in dotted.split(".")[1:]:
                out = ast.Attribute(value=out, attr=part, ctx=ast.Load())
            return out
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        self.generic_visit(node)
        if isinstance(node.value, ast.Name) and f"{node.value.id}.{node.attr}" in _OSERROR_ALIASES:
            return ast.Name(id="OSError", ctx=node.ctx)
        return node


def _type_checking_only(test: ast.expr) -> bool:
    """``TYPE_CHECKING``, ``typing.TYPE_CHECKING`` or a conjunction with one of them."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    if isinstance(test, ast.Attribute):
        return test.attr == "TYPE_CHECKING"
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(_type_checking_only(v) for v in test.values)
    return False


# Exception names that are OSError since Python 3.3 (pyupgrade rewrites them).
_OSERROR_ALIASES = frozenset({"IOError", "EnvironmentError", "WindowsError", "socket.error", "select.error"})
_PERCENT = re.compile(r"%(?:\(([^)]*)\))?([-#0 +]*\d*(?:\.\d+)?)([srdia%])")
_BRACES = re.compile(r"\{\{|\}\}|\{([^{}!:]*)(?:!([rsa]))?(?::([^{}]*))?\}")


def _backslash_inside(values: list[ast.expr]) -> bool:
    """A string with a backslash escape (``"\\r\\n".join(lines)``) inside a value to format: the
    f-string it would make cannot be written before Python 3.12 (``ast.unparse`` refuses it), so
    the formatting keeps its spelling."""
    return any(
        isinstance(n, ast.Constant) and isinstance(n.value, str) and "\\" in repr(n.value)
        for v in values
        for n in ast.walk(v)
    )


def _merged(values: list[ast.expr]) -> ast.JoinedStr:
    """A canonical f-string: adjacent literal parts joined."""
    out: list[ast.expr] = []
    for v in values:
        if isinstance(v, ast.Constant) and out and isinstance(out[-1], ast.Constant):
            out[-1] = ast.Constant(value=str(out[-1].value) + str(v.value))
        elif not (isinstance(v, ast.Constant) and v.value == ""):
            out.append(v)
    return ast.JoinedStr(values=out)


def _formatted(value: ast.expr, conversion: str | None) -> ast.FormattedValue:
    return ast.FormattedValue(value=value, conversion=ord(conversion) if conversion else -1, format_spec=None)


def _percent_format(fmt: str, values: list[ast.expr]) -> ast.JoinedStr | None:
    """``"%s: %r" % (a, b)`` as the f-string pyupgrade would write; None for anything fancier."""
    parts: list[ast.expr] = []
    pos = i = 0
    for m in _PERCENT.finditer(fmt):
        name, flags, kind = m.group(1), m.group(2), m.group(3)
        parts.append(ast.Constant(value=fmt[pos : m.start()]))
        pos = m.end()
        if kind == "%":
            parts.append(ast.Constant(value="%"))
            continue
        if name is not None or flags or kind not in ("s", "r") or i >= len(values):
            return None
        parts.append(_formatted(values[i], "r" if kind == "r" else None))
        i += 1
    if i != len(values) or _backslash_inside(values):
        return None
    parts.append(ast.Constant(value=fmt[pos:]))
    return _merged(parts)


def _format_call(fmt: str, args: list[ast.expr], keywords: list[ast.keyword]) -> ast.JoinedStr | None:
    """``"{} {x!r}".format(a, x=b)`` as an f-string; None when it uses more than plain fields."""
    if any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in keywords):
        return None
    named = {k.arg: k.value for k in keywords}
    parts: list[ast.expr] = []
    pos = auto = 0
    for m in _BRACES.finditer(fmt):
        parts.append(ast.Constant(value=fmt[pos : m.start()]))
        pos = m.end()
        if m.group(0) in ("{{", "}}"):
            parts.append(ast.Constant(value=m.group(0)[0]))
            continue
        field, conversion, spec = m.group(1), m.group(2), m.group(3)
        if spec:
            return None
        if field == "":
            if auto >= len(args):
                return None
            value = args[auto]
            auto += 1
        elif field.isdigit() and int(field) < len(args):
            value = args[int(field)]
        elif field in named:
            value = named[field]
        else:
            return None
        parts.append(_formatted(value, conversion))
    if _backslash_inside([p.value for p in parts if isinstance(p, ast.FormattedValue)]):
        return None
    parts.append(ast.Constant(value=fmt[pos:]))
    return _merged(parts)


def _decorator_name(node: ast.expr) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


_TYPING_GUARD = re.compile(r"^\s*if\s+(typing\.|t\.)?TYPE_CHECKING\s*:")


class NormalizedCode:
    """A definition's behaviour as a fingerprint, and (on first use) as normalized source lines:
    one statement or compound-statement header a line, imports resolved to the dotted names
    they bind."""

    def __init__(self, tree: ast.AST) -> None:
        self._tree = tree
        self.fingerprint = ast.dump(tree, annotate_fields=False, include_attributes=False)
        self._lines: tuple[str, ...] | None = None
        self._header = 0

    @property
    def lines(self) -> tuple[str, ...]:
        if self._lines is None:
            ast.fix_missing_locations(self._tree)
            source = ast.unparse(self._tree)
            self._lines = tuple(line.strip() for line in source.splitlines() if line.strip())
            for i, line in enumerate(self._lines):
                if line.startswith(("def ", "async def ", "class ")):
                    self._header = i + 1
                    break
        return self._lines

    @property
    def header(self) -> int:
        """How many leading lines are the definition's header (decorators and the ``def`` line)."""
        _ = self.lines
        return self._header


def python_normalized(text: str, aliases: Mapping[str, str] | None = None) -> NormalizedCode | None:
    """``text`` (one definition) without comments, docstrings, annotations, layout, spelling of
    string formatting and of imported names; None when it does not parse."""
    tree = _parse(text)
    if tree is None:
        return None
    return NormalizedCode(_Strip(nested_bodies=False, aliases=aliases or {}).visit(tree))


def python_fingerprint(text: str) -> str | None:
    """The definition's own behaviour as a string, or None when it does not parse."""
    tree = _parse(text)
    if tree is None:
        return None
    stripped = _Strip(nested_bodies=False).visit(tree)
    return ast.dump(stripped, annotate_fields=False, include_attributes=False)


_IDENTIFIER_FIELDS = {"id", "attr", "arg", "name"}


@dataclass(frozen=True)
class Renames:
    """Identifiers renamed between two versions of a definition whose code is otherwise equal."""

    pairs: frozenset[tuple[str, str]]
    # Every renamed name is a local variable or parameter on both sides: behaviour is unchanged.
    local: bool


def python_rename_pairs(old: str, new: str) -> Renames | None:
    """The identifiers renamed between two versions of a definition when nothing else changed
    (same structure, same constants, a one-to-one renaming); None when the change is more."""
    a, b = _parse(old), _parse(new)
    if a is None or b is None:
        return None
    a = _Strip(nested_bodies=False).visit(a)
    b = _Strip(nested_bodies=False).visit(b)
    pairs: set[tuple[str, str]] = set()
    if not _same_shape(a, b, pairs):
        return None
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    for x, y in pairs:
        if forward.setdefault(x, y) != y or backward.setdefault(y, x) != x:
            return None  # not one-to-one: a name now means something else
    renamed = frozenset((x, y) for x, y in pairs if x != y)
    local = bool(renamed) and all(x in _locals(a) and y in _locals(b) for x, y in renamed)
    return Renames(renamed, local)


def _locals(tree: ast.AST) -> set[str]:
    """Names a function binds itself: parameters, assignments, loop, ``with`` and ``except`` targets."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(getattr(node, "ctx", None), (ast.Store, ast.Del)):
            out.add(node.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            out.add(node.name)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            out.difference_update(node.names)
    return out


def _same_shape(x: object, y: object, pairs: set[tuple[str, str]]) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, ast.AST):
        assert isinstance(y, ast.AST)
        for field in x._fields:
            vx, vy = getattr(x, field, None), getattr(y, field, None)
            if field in _IDENTIFIER_FIELDS and isinstance(vx, str) and isinstance(vy, str):
                pairs.add((vx, vy))
                continue
            if not _same_shape(vx, vy, pairs):
                return False
        return True
    if isinstance(x, list):
        assert isinstance(y, list)
        return len(x) == len(y) and all(_same_shape(i, j, pairs) for i, j in zip(x, y, strict=True))
    return x == y


# Strings first so that comment markers inside them are kept; then comments of C-like and
# hash-comment languages.
_C_LIKE = re.compile(
    r"(\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)|(//[^\n]*|/\*.*?\*/)", re.S
)
_HASH = re.compile(r"(\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*')|(#[^\n]*)")
HASH_COMMENT_LANGUAGES = frozenset({"ruby", "bash", "elixir", "hcl"})


def text_fingerprint(text: str, language: str) -> str:
    """Comments and whitespace removed (languages without an AST here)."""
    pattern = _HASH if language in HASH_COMMENT_LANGUAGES else _C_LIKE
    code = pattern.sub(lambda m: m.group(1) or " ", text)
    return " ".join(code.split())


def fingerprint(text: str, language: str) -> str | None:
    if language == "python":
        return python_fingerprint(text)
    return text_fingerprint(text, language)
