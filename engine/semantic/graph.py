"""Call-edge resolution and the file import graph, as pure functions over the model.

Resolves a call in this order: 1) the same file, 2) a module the file imports,
3) a globally unique name, 4) ranked candidates (directory proximity); what is
left is external, with the package it most likely comes from. No I/O here: the
store hands in definitions and file lists and persists what comes out.
"""

from __future__ import annotations

import builtins
import posixpath
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.semantic.model import ImportRef

SAME_FILE = "same_file"
IMPORT = "import"
UNIQUE = "unique"
RANKED = "ranked"
EXTERNAL = "external"

# Kinds a call expression can land on; a call named like a constant is not a call to it.
CALLABLE_KINDS = frozenset({"function", "method", "class", "struct", "macro", "constructor"})
# Receivers that mean "the enclosing class" in the languages we parse.
SELF_RECEIVERS = frozenset({"self", "this", "cls", "super()", "Self", "@", "$this", "static"})
# Calls resolved by rank need at least this many shared leading directories to count;
# otherwise any same-named method anywhere would become a guessed edge.
RANKED_MIN_SHARED_DIRS = 1
# Languages whose files can call each other's definitions.
LANGUAGE_FAMILY = {
    "javascript": "js",
    "typescript": "js",
    "tsx": "js",
    "jsx": "js",
    "c": "c",
    "cpp": "c",
    "objc": "c",
}
# Families where a call without a receiver never reaches a method: Python, JS/TS, Go, Rust, PHP
# and shell need self/this/Self::/$this for that (Java, C#, C++, Kotlin, Swift, Ruby do not).
NO_IMPLICIT_RECEIVER = frozenset({"python", "js", "go", "rust", "php", "bash"})
PY_BUILTINS = frozenset(dir(builtins))
# Method names every codebase has on its own objects and on the standard containers, strings,
# files and sockets: a call ``x.send()`` on a receiver of unknown type says nothing about which
# ``send`` it reaches, so such calls resolve only through a known receiver (self, a class, a module).
COMMON_METHOD_NAMES = frozenset(
    {
        name
        for kind in (dict, list, str, bytes, set, int, float, tuple)
        for name in dir(kind)
        if not name.startswith("_")
    }
    | {
        *("send", "recv", "read", "write", "close", "open", "flush", "seek", "tell", "readline", "readlines"),
        *("get", "post", "put", "patch", "delete", "head", "options", "request", "fetch", "query"),
        *("run", "start", "stop", "call", "execute", "handle", "process", "apply", "dispatch", "emit"),
        *("connect", "accept", "bind", "listen", "shutdown", "wait", "notify", "acquire", "release"),
        *("load", "loads", "dump", "dumps", "save", "render", "parse", "validate", "check", "match"),
        *("set", "has", "reset", "next", "submit", "result", "cancel", "done", "on", "off", "then"),
        *("filter", "map", "reduce", "push", "shift", "unshift", "slice", "splice", "forEach", "some"),
        *("every", "includes", "toString", "valueOf", "init", "setup", "teardown", "build", "create"),
        *("make", "new", "free", "lock", "unlock", "log", "debug", "info", "warning", "error"),
    }
)
JS_SUFFIXES = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".d.ts")
PY_SUFFIXES = (".py", ".pyi")
SOURCE_ROOTS = ("src/", "lib/", "python/", "pkg/")


@dataclass(frozen=True)
class Definition:
    """What resolution needs to know about a candidate callee."""

    id: str
    name: str
    file: str
    parent: str | None
    kind: str
    language: str


@dataclass(frozen=True)
class CallRow:
    """One call site as stored: which symbol (None: module level) calls what."""

    file: str
    caller_id: str | None
    caller_parent: str | None
    name: str
    receiver: str | None
    line: int


@dataclass(frozen=True)
class Edge:
    file: str
    caller_id: str | None
    callee_id: str | None
    callee_name: str
    kind: str
    package: str | None
    line: int


def family(language: str) -> str:
    return LANGUAGE_FAMILY.get(language, language)


def _common_dirs(a: str, b: str) -> int:
    pa, pb = a.split("/")[:-1], b.split("/")[:-1]
    n = 0
    for x, y in zip(pa, pb, strict=False):
        if x != y:
            break
        n += 1
    return n


class ModuleIndex:
    """Maps import strings to repository files, for every language we extract imports from."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = set(paths)
        self.py: dict[str, list[str]] = {}
        self.by_stem: dict[str, list[str]] = {}
        self.dirs: dict[str, list[str]] = {}
        self._memo: dict[tuple[str, str, tuple[str, ...], str], list[str]] = {}
        for path in sorted(self.paths):
            head, tail = posixpath.split(path)
            stem = tail.split(".", 1)[0]
            self.by_stem.setdefault(stem, []).append(path)
            self.dirs.setdefault(head, []).append(path)
            if path.endswith(PY_SUFFIXES):
                dotted = path.rsplit(".", 1)[0].replace("/", ".")
                if dotted.endswith(".__init__") or dotted == "__init__":
                    dotted = dotted[: -len(".__init__")] if dotted != "__init__" else ""
                for root in SOURCE_ROOTS:
                    if dotted.startswith(root.replace("/", ".")):
                        self.py.setdefault(dotted[len(root) :], []).append(path)
                if dotted:
                    self.py.setdefault(dotted, []).append(path)

    def _py_module(self, dotted: str) -> list[str]:
        return self.py.get(dotted, [])

    def resolve(self, src: str, imp: ImportRef, language: str) -> list[str]:
        """Repository files an import in ``src`` refers to (empty: external or unknown).

        Memoised: the file-import graph and each file's call context ask the same question.
        Callers must not mutate the returned list.
        """
        key = (src, imp.module, imp.names, language)
        hit = self._memo.get(key)
        if hit is None:
            if language == "python":
                hit = self._resolve_python(src, imp)
            elif family(language) == "js":
                hit = self._resolve_relative_path(src, imp.module, JS_SUFFIXES)
            else:
                hit = self._resolve_generic(src, imp.module)
            self._memo[key] = hit
        return hit

    def _resolve_python(self, src: str, imp: ImportRef) -> list[str]:
        module = imp.module
        if module.startswith("."):
            dots = len(module) - len(module.lstrip("."))
            pkg = posixpath.dirname(src)
            for _ in range(dots - 1):
                pkg = posixpath.dirname(pkg)
            base = pkg.replace("/", ".")
            rest = module[dots:]
            module = ".".join(p for p in (base, rest) if p)
        out: list[str] = []
        for name in imp.names:
            if name != "*":
                out.extend(self._py_module(f"{module}.{name}" if module else name))
        if not out or len(out) < len([n for n in imp.names if n != "*"]):
            target = self._py_module(module)
            if not target and "." in module:
                target = self._py_module(module.rsplit(".", 1)[0]) if imp.names == () else []
            out.extend(target)
        return sorted(set(out))

    def _resolve_relative_path(self, src: str, spec: str, suffixes: Sequence[str]) -> list[str]:
        if not spec.startswith((".", "/")):
            return []
        base = posixpath.normpath(posixpath.join(posixpath.dirname(src), spec)).lstrip("/")
        if base in self.paths:
            return [base]
        for suffix in suffixes:
            if base + suffix in self.paths:
                return [base + suffix]
        for suffix in suffixes:
            if f"{base}/index{suffix}" in self.paths:
                return [f"{base}/index{suffix}"]
        return []

    def _resolve_generic(self, src: str, module: str) -> list[str]:
        """C includes, Go/Java/Rust/C#/Ruby/PHP paths: the best suffix match on path components."""
        spec = module.strip("\"'<> ")
        if spec.startswith("."):
            found = self._resolve_relative_path(src, spec, (".rb", ".php", ".h", ".hpp", ".c", ".cc", ".cpp"))
            if found:
                return found
        for sep in ("::", "\\", "."):
            if sep in spec and "/" not in spec and not spec.endswith((".h", ".hpp", ".php", ".rb")):
                spec = spec.replace(sep, "/")
        spec = spec.strip("/")
        if not spec:
            return []
        parts = spec.split("/")
        stem = parts[-1]
        want = "/".join(parts)
        best: list[str] = []
        for path in self.by_stem.get(stem.split(".")[0], []):
            no_ext = path.rsplit(".", 1)[0]
            if path.endswith("/" + want) or path == want or no_ext.endswith("/" + want) or no_ext == want:
                best.append(path)
        if best:
            return best[:5]
        # A package path (Go): every file of the directory that ends with the path.
        for head, files in self.dirs.items():
            if head == want or head.endswith("/" + want):
                return files[:20]
        return []


@dataclass
class FileContext:
    """What one file's imports make visible: files, bound names and package roots."""

    imported_files: set[str]
    bound: dict[str, tuple[list[str], str]]  # local name -> (files, original name)
    module_alias: dict[str, list[str]]  # local name of an imported module -> its files
    packages: dict[str, str]  # local name -> package root, for external calls


def package_root(module: str, language: str) -> str:
    if family(language) == "js":
        if module.startswith("@"):
            return "/".join(module.split("/")[:2])
        return module.split("/")[0]
    for sep in ("::", "/", "\\", "."):
        if sep in module:
            return module.split(sep)[0] or module
    return module


def file_context(src: str, language: str, imports: Sequence[ImportRef], modules: ModuleIndex) -> FileContext:
    ctx = FileContext(set(), {}, {}, {})
    for imp in imports:
        files = modules.resolve(src, imp, language)
        ctx.imported_files.update(files)
        root = package_root(imp.module.lstrip("."), language) if not imp.module.startswith(".") else None
        if imp.names:
            for name in imp.names:
                if name == "*":
                    continue
                local = imp.alias if imp.alias and len(imp.names) == 1 else name
                ctx.bound[local] = (files, name)
                if root and not files:
                    ctx.packages[local] = root
        else:
            local = imp.alias or imp.module.split(".")[0].split("/")[-1]
            if files:
                ctx.module_alias[local] = files
            elif root:
                ctx.packages[local] = root
                if imp.alias:
                    ctx.packages[imp.alias] = root
    return ctx


@dataclass(frozen=True)
class _Pool:
    """The callable definitions of one name in one language family, indexed by file."""

    all: tuple[Definition, ...]
    by_file: dict[str, list[Definition]]


def names_type(word: str, owner: str) -> bool:
    """A receiver named ``session`` holds a ``Session``, ``self.pool`` an ``HTTPConnectionPool``."""
    w, o = _type_word(word), _type_word(owner)
    return len(w) >= 3 and o.endswith(w)


def _type_word(word: str) -> str:
    """How ``names_type`` compares a word: lower case, without underscores."""
    return word.lower().replace("_", "")


@lru_cache(maxsize=1 << 16)
def _owner_type_word(parent: str) -> str:
    """``_type_word`` of the last segment of a definition's parent (``a.HTTPConnectionPool``)."""
    return _type_word(parent.rsplit(".", 1)[-1])


# Re-exports followed from a package to the module that defines a name (``flask`` binds
# ``send_file`` from ``flask.helpers``); two hops cover ``pkg/__init__`` -> ``pkg/sub/__init__``.
MAX_REEXPORT_HOPS = 2


class CallResolver:
    """Turns call rows into edges; ``candidates(name)`` supplies definitions by name.

    ``module_context(path)``, when given, is the FileContext of a module file: it lets a call
    through a package (``flask.send_file``) follow the package's re-export to the definition.
    """

    def __init__(
        self,
        candidates: Callable[[str], Sequence[Definition]],
        module_context: Callable[[str], FileContext | None] | None = None,
    ) -> None:
        self._candidates = candidates
        self.module_context = module_context
        self._pools: dict[tuple[str, str, bool], _Pool] = {}
        self._ranked: dict[tuple[str, str, str, str], Definition | None] = {}
        self._object_ids: dict[tuple[str, str, str], frozenset[str]] = {}

    def _follow(
        self, files: Sequence[str], original: str, fam: str, bare: bool, hops: int
    ) -> list[Definition]:
        """Definitions of ``original`` in ``files``, or where those files re-export it from."""
        pool = self._pool(original, fam, bare)
        found = [d for f in files for d in pool.by_file.get(f, ())]
        if found or hops <= 0 or self.module_context is None:
            return found
        for f in files:
            ctx = self.module_context(f)
            if ctx is None or original not in ctx.bound:
                continue
            targets, name = ctx.bound[original]
            found = self._follow([t for t in targets if t != f], name, fam, bare, hops - 1)
            if found:
                return found
        return []

    def _names_module_or_class(self, ctx: FileContext, local: str) -> bool:
        """``from . import helpers`` binds a module, ``from .app import Flask`` a class;
        ``from .globals import current_app`` binds an object, whose methods need its type."""
        files, original = ctx.bound[local]
        for f in files:
            stem = posixpath.basename(f).split(".", 1)[0]
            if stem == original or (
                stem == "__init__" and posixpath.basename(posixpath.dirname(f)) == original
            ):
                return True
        return any(d.kind in ("class", "struct") and d.file in files for d in self._candidates(original))

    def _object_call(self, pool: _Pool, name: str, file: str, fam: str, receiver: str) -> Definition | None:
        """A method called on an object of unknown type (``d.update()``, ``current_app.url_for()``):
        never a free function; a class named like the receiver when there is one; otherwise only
        a method name rare enough to be unambiguous (not ``get``, ``send`` or ``update``).
        One in the caller's own file first, then the nearest by shared directories."""
        owner_word = receiver.rsplit(".", 1)[-1].split("(")[0]
        eligible = self._object_candidates(pool, name, fam, owner_word)
        if not eligible:
            return None
        here = [d for d in pool.by_file.get(file, ()) if d.id in eligible]
        if here:
            return here[0]
        # Every file of a folder shares as many directories with a candidate elsewhere, so the
        # nearest one is the same for the whole folder (and does not depend on which file asked first).
        key = (name, fam, file.rpartition("/")[0], "?" + owner_word)
        if key not in self._ranked:
            self._ranked[key] = min(
                (d for d in pool.all if d.id in eligible), key=lambda d: (-_common_dirs(d.file, file), d.file)
            )
        return self._ranked[key]

    def _object_candidates(self, pool: _Pool, name: str, fam: str, owner_word: str) -> frozenset[str]:
        """The ids of the methods ``_object_call`` may pick for ``owner_word.name()``."""
        key = (name, fam, owner_word)
        found = self._object_ids.get(key)
        if found is None:
            methods = [d for d in pool.all if d.parent is not None]
            # names_type(owner_word, <the parent's last segment>), with the word normalised once
            # and each class name once per process (Django asks it 82k times while resolving).
            word = _type_word(owner_word)
            typed = (
                [d for d in methods if _owner_type_word(d.parent).endswith(word)]  # type: ignore[arg-type]
                if len(word) >= 3
                else []
            )
            if not typed and (name in COMMON_METHOD_NAMES or len({d.parent for d in methods}) != 1):
                typed = []
            elif not typed:
                typed = methods
            found = self._object_ids[key] = frozenset(d.id for d in typed)
        return found

    def _pool(self, name: str, fam: str, bare: bool = False) -> _Pool:
        """Callable definitions of ``name``; ``bare`` leaves out methods (a receiverless call's view)."""
        pool = self._pools.get((name, fam, bare))
        if pool is None:
            defs = tuple(
                d
                for d in self._candidates(name)
                if d.kind in CALLABLE_KINDS
                and family(d.language) == fam
                and not (bare and d.kind == "method")
            )
            by_file: dict[str, list[Definition]] = {}
            for d in defs:
                by_file.setdefault(d.file, []).append(d)
            pool = self._pools[(name, fam, bare)] = _Pool(defs, by_file)
        return pool

    def _rank(self, pool: _Pool, name: str, fam: str, file: str, plain: bool) -> Definition | None:
        """The nearest candidate by shared directories, memoised per directory."""
        folder = file.rpartition("/")[0]
        key = (name, fam, folder, "" if plain else "+")
        if key not in self._ranked:
            best = min(
                pool.all,
                key=lambda d: (-_common_dirs(d.file, file), (d.parent is None) != plain, d.file),
            )
            ok = _common_dirs(best.file, file) >= RANKED_MIN_SHARED_DIRS
            self._ranked[key] = best if ok else None
        return self._ranked[key]

    def _rank_for(
        self, pool: _Pool, name: str, file: str, fam: str, receiver: str | None, is_self: bool
    ) -> Definition | None:
        """Rank several same-named candidates; an arbitrary receiver (a variable whose type
        we do not know) only matches a method of a class named like it, or one in the same
        directory, so a common name like ``get`` does not become a hub of guessed edges."""
        if receiver is None or is_self:
            return self._rank(pool, name, fam, file, receiver is None)
        folder = file.rpartition("/")[0]
        owner = receiver.rsplit(".", 1)[-1]
        key = (name, fam, folder, "." + owner)
        if key not in self._ranked:
            typed = [d for d in pool.all if d.parent and d.parent.rsplit(".", 1)[-1] == owner]
            if typed:
                best: Definition | None = min(typed, key=lambda d: (-_common_dirs(d.file, file), d.file))
            else:
                local = [d for d in pool.all if d.file.rpartition("/")[0] == folder and d.parent is not None]
                best = min(local, key=lambda d: d.file) if local else None
            self._ranked[key] = best
        return self._ranked[key]

    def resolve(self, call: CallRow, language: str, ctx: FileContext) -> Edge:
        callee_id, kind, package = self.resolve_fields(
            call.file, call.caller_parent, call.name, call.receiver, language, ctx
        )
        return Edge(call.file, call.caller_id, callee_id, call.name, kind, package, call.line)

    def resolve_fields(
        self,
        file: str,
        caller_parent: str | None,
        name: str,
        receiver: str | None,
        language: str,
        ctx: FileContext,
    ) -> tuple[str | None, str, str | None]:
        """``(callee_id, kind, package)`` for one call: what ``resolve`` returns, without objects."""
        fam = LANGUAGE_FAMILY.get(language, language)
        bare = fam in NO_IMPLICIT_RECEIVER
        pool = self._pool(name, fam, bare and receiver is None)
        cands = pool.all
        recv_root = receiver.split(".")[0].split("(")[0] if receiver else None
        is_self = receiver in SELF_RECEIVERS
        external_recv = recv_root is not None and not is_self and recv_root in ctx.packages
        module_recv = recv_root is not None and (
            recv_root in ctx.module_alias
            or (recv_root in ctx.bound and self._names_module_or_class(ctx, recv_root))
        )
        # A receiver that is neither self, an import of a module or class, nor a package: an
        # object of unknown type (a local variable, an attribute, an imported instance).
        object_recv = receiver is not None and not is_self and not module_recv and not external_recv
        if object_recv and receiver is not None and recv_root in SELF_RECEIVERS and "." not in receiver:
            object_recv = False  # super().x(), this.x() spelled with a call

        if cands and object_recv and receiver is not None:
            # Same file first: a class defined here named like the receiver, or a rare method name.
            hit = self._object_call(pool, name, file, fam, receiver)
            if hit is not None:
                kind = (
                    SAME_FILE if hit.file == file else (IMPORT if hit.file in ctx.imported_files else RANKED)
                )
                return hit.id, kind, None
        elif cands:
            same_file = pool.by_file.get(file)
            if same_file and (receiver is None or is_self):
                if is_self:
                    best = min(same_file, key=lambda d: (d.parent != caller_parent, d.parent is None))
                else:
                    best = min(same_file, key=lambda d: (d.parent is not None) == (receiver is None))
                return best.id, SAME_FILE, None
            if receiver is None and name in ctx.bound:
                files, original = ctx.bound[name]
                bound = self._follow(files, original, fam, bare, MAX_REEXPORT_HOPS)
                if bound:
                    return bound[0].id, IMPORT, None
            if recv_root and recv_root in ctx.module_alias:
                through = self._follow(ctx.module_alias[recv_root], name, fam, False, MAX_REEXPORT_HOPS)
                if through:
                    return through[0].id, IMPORT, None
            if recv_root and recv_root in ctx.bound:
                files, original = ctx.bound[recv_root]
                in_files = [d for f in files for d in pool.by_file.get(f, ())]
                # ``Flask.url_for``: a method of the bound class; ``helpers.x``: a module's function.
                owned = [d for d in in_files if d.parent and d.parent.rsplit(".", 1)[-1] == original]
                found = owned or in_files or self._follow(files, name, fam, False, MAX_REEXPORT_HOPS)
                if found:
                    return found[0].id, IMPORT, None
            if not external_recv and not module_recv:
                if len(ctx.imported_files) < len(pool.by_file):
                    imported = [d for f in ctx.imported_files for d in pool.by_file.get(f, ())]
                else:
                    imported = [d for d in cands if d.file in ctx.imported_files]
                if is_self:
                    # ``self.update()`` in a dict subclass is an inherited method, never a function.
                    imported = [d for d in imported if d.parent is not None]
                    cands = tuple(d for d in cands if d.parent is not None)
                if imported:
                    imported.sort(key=lambda d: ((d.parent is not None) == (receiver is None), d.file))
                    return imported[0].id, IMPORT, None
                if len(cands) == 1:
                    return cands[0].id, UNIQUE, None
                ranked = self._rank_for(pool, name, file, fam, receiver, is_self) if cands else None
                if ranked is not None and (not is_self or ranked.parent is not None):
                    return ranked.id, RANKED, None
        package = None
        if recv_root and recv_root in ctx.packages:
            package = ctx.packages[recv_root]
        elif receiver is None and name in ctx.packages:
            package = ctx.packages[name]
        elif receiver is None and language == "python" and name in PY_BUILTINS:
            package = "builtins"
        return None, EXTERNAL, package
