"""The bounded repository overview: what a model reads first, at most ~2,500 tokens.

Built by aggregation, never enumeration: SQL GROUP BY over index.db yields per
directory counts, which are folded into at most ``MAX_MODULES`` modules. Only
those modules, a capped list of entry points and the top fan-in symbols are
named. The final TOON text is shrunk step by step until it fits the budget.
"""

from __future__ import annotations

import heapq
import json
import re
import sqlite3
import tomllib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.policy.redaction import redact, redact_json, redact_quoted
from engine.repo.layout import RepoLayout
from engine.store.rows import most_called
from engine.tokens import CHARS_PER_TOKEN, estimate_tokens

# The overview never exceeds this many tokens (``engine.tokens`` estimate), whatever the repo size.
MAX_TOKENS = 2500
# About fifty module summaries describe a large repository without listing it.
MAX_MODULES = 50
MAX_ENTRY_POINTS = 10
MAX_HUBS = 10
MAX_FRAMEWORKS = 12
MAX_DEPENDENCIES = 10
MAX_LANGUAGES = 8
# A purpose longer than this is cut: it is a hint, not documentation.
PURPOSE_CHARS = 72
# Shrink steps, applied in order until the text fits: fewer/shorter rows each time.
SHRINK_STEPS: tuple[dict[str, int], ...] = (
    {"modules": 50, "purpose": 72, "deps": 10, "hubs": 10, "entries": 10},
    {"modules": 40, "purpose": 48, "deps": 8, "hubs": 8, "entries": 8},
    {"modules": 30, "purpose": 32, "deps": 5, "hubs": 6, "entries": 6},
    {"modules": 20, "purpose": 24, "deps": 3, "hubs": 5, "entries": 5},
    {"modules": 12, "purpose": 0, "deps": 0, "hubs": 3, "entries": 3},
    {"modules": 6, "purpose": 0, "deps": 0, "hubs": 0, "entries": 0},
)
README_NAMES = ("README.md", "README.rst", "README.txt", "README", "readme.md")
PACKAGE_DOC_FILES = ("__init__.py", "doc.go", "mod.rs", "lib.rs", "index.js", "index.ts")

# Dependency name (as written in a manifest) -> framework shown in the overview.
KNOWN_FRAMEWORKS: dict[str, str] = {
    "django": "Django",
    "flask": "Flask",
    "fastapi": "FastAPI",
    "starlette": "Starlette",
    "sqlalchemy": "SQLAlchemy",
    "pydantic": "Pydantic",
    "celery": "Celery",
    "pytest": "pytest",
    "textual": "Textual",
    "numpy": "NumPy",
    "pandas": "pandas",
    "torch": "PyTorch",
    "tensorflow": "TensorFlow",
    "aiohttp": "aiohttp",
    "tornado": "Tornado",
    "click": "Click",
    "express": "Express",
    "react": "React",
    "vue": "Vue",
    "next": "Next.js",
    "@angular/core": "Angular",
    "svelte": "Svelte",
    "koa": "Koa",
    "fastify": "Fastify",
    "@nestjs/core": "NestJS",
    "jest": "Jest",
    "mocha": "Mocha",
    "vitest": "Vitest",
    "typescript": "TypeScript",
    "webpack": "webpack",
    "vite": "Vite",
    "github.com/gin-gonic/gin": "Gin",
    "github.com/labstack/echo": "Echo",
    "github.com/gofiber/fiber": "Fiber",
    "github.com/gorilla/mux": "gorilla/mux",
    "google.golang.org/grpc": "gRPC",
    "actix-web": "Actix Web",
    "axum": "Axum",
    "rocket": "Rocket",
    "tokio": "Tokio",
    "serde": "Serde",
    "diesel": "Diesel",
    "spring-boot-starter": "Spring Boot",
    "spring-boot-starter-web": "Spring Boot",
    "spring-core": "Spring",
    "junit": "JUnit",
    "junit-jupiter": "JUnit",
    "hibernate-core": "Hibernate",
    "rails": "Rails",
    "laravel/framework": "Laravel",
}


@dataclass
class _Node:
    """Counts for one directory subtree; ``own_*`` are its direct files only."""

    path: str
    files: int = 0
    symbols: int = 0
    lines: int = 0
    risk: dict[str, int] = field(default_factory=lambda: {"high": 0, "medium": 0, "low": 0})
    own_files: int = 0
    own_symbols: int = 0
    own_lines: int = 0
    own_risk: dict[str, int] = field(default_factory=lambda: {"high": 0, "medium": 0, "low": 0})
    children: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Module:
    name: str
    files: int
    symbols: int
    lines: int
    high: int
    medium: int
    low: int
    subtree: bool  # False when only the directory's own files are counted (its subdirs are listed)
    # Subdirectories listed as modules of their own, left out of this one's counts: a directory with
    # too many subdirectories to list them all keeps the ones that are not listed apart.
    apart: tuple[str, ...] = ()


def _ancestors(path: str) -> Iterator[str]:
    if path == ".":
        yield "."
        return
    parts = path.split("/")
    yield "."
    for i in range(1, len(parts) + 1):
        yield "/".join(parts[:i])


def _directory_tree(conn: sqlite3.Connection) -> dict[str, _Node]:
    """Per-directory aggregates from two GROUP BY queries (one row per directory)."""
    nodes: dict[str, _Node] = {}

    def node(path: str) -> _Node:
        n = nodes.get(path)
        if n is None:
            n = nodes[path] = _Node(path)
            if path != ".":
                parent = path.rsplit("/", 1)[0] if "/" in path else "."
                node(parent).children.append(path)
        return n

    for module, files, lines in conn.execute(
        "SELECT module, count(*), sum(line_count) FROM files GROUP BY module"
    ):
        node(module).own_files, node(module).own_lines = int(files), int(lines or 0)
        for anc in _ancestors(module):
            n = node(anc)
            n.files += int(files)
            n.lines += int(lines or 0)
    for module, risk, count in conn.execute(
        "SELECT module, risk, count(*) FROM symbols GROUP BY module, risk"
    ):
        own = node(module)
        own.own_symbols += int(count)
        own.own_risk[risk] = own.own_risk.get(risk, 0) + int(count)
        for anc in _ancestors(module):
            n = node(anc)
            n.symbols += int(count)
            n.risk[risk] = n.risk.get(risk, 0) + int(count)
    return nodes


def choose_modules(nodes: dict[str, _Node], limit: int = MAX_MODULES) -> list[Module]:
    """Split the biggest directory into its children while the module count stays within ``limit``.

    A directory with more subdirectories than there is room for (boost's ``include/boost/`` has 150)
    would stay one module holding most of the tree, and the overview would say nothing of its
    parts: when the splits that fit leave room, the biggest such directory lists its largest
    subdirectories apart and keeps the rest.
    """
    if "." not in nodes:
        return []
    chosen: dict[str, bool] = {".": True}  # path -> counts whole subtree
    heap: list[tuple[int, str]] = [(-nodes["."].files, ".")]
    _split_whole(nodes, chosen, heap, limit)
    apart: dict[str, tuple[str, ...]] = {}
    room = limit - len(chosen)
    wide = [p for p, subtree in chosen.items() if subtree and len(nodes[p].children) > 1]
    if room >= 2 and wide:
        path = max(wide, key=lambda p: (nodes[p].files, p))
        children = sorted(nodes[path].children, key=lambda c: (-nodes[c].files, c))[:room]
        apart[path] = tuple(children)
        for child in children:
            chosen[child] = True
            heapq.heappush(heap, (-nodes[child].files, child))
        _split_whole(nodes, chosen, heap, limit)
    out = []
    for path, subtree in chosen.items():
        n = nodes[path]
        if path in apart:
            out.append(_rest(n, [nodes[c] for c in apart[path]], apart[path]))
        elif subtree:
            out.append(
                Module(
                    path, n.files, n.symbols, n.lines, n.risk["high"], n.risk["medium"], n.risk["low"], True
                )
            )
        else:
            r = n.own_risk
            out.append(
                Module(path, n.own_files, n.own_symbols, n.own_lines, r["high"], r["medium"], r["low"], False)
            )
    out.sort(key=lambda m: (-m.files, m.name))
    return out[:limit]


def _split_whole(
    nodes: dict[str, _Node], chosen: dict[str, bool], heap: list[tuple[int, str]], limit: int
) -> None:
    """Replace the biggest directories in ``chosen`` by all their children while that fits ``limit``."""
    while heap:
        _neg, path = heapq.heappop(heap)
        n = nodes[path]
        if not n.children:
            continue
        keeps_self = n.own_files > 0
        after = len(chosen) - 1 + len(n.children) + (1 if keeps_self else 0)
        if after > limit:
            continue
        del chosen[path]
        if keeps_self:
            chosen[path] = False
        for child in n.children:
            chosen[child] = True
            heapq.heappush(heap, (-nodes[child].files, child))


def _rest(n: _Node, listed: list[_Node], names: tuple[str, ...]) -> Module:
    """Directory ``n`` without the subdirectories ``listed`` apart (a module each)."""

    def left(attr: str) -> int:
        return int(getattr(n, attr)) - sum(int(getattr(c, attr)) for c in listed)

    def risk(level: str) -> int:
        return n.risk[level] - sum(c.risk[level] for c in listed)

    return Module(
        n.path,
        left("files"),
        left("symbols"),
        left("lines"),
        risk("high"),
        risk("medium"),
        risk("low"),
        True,
        names,
    )


def _first_line(text: str) -> str:
    for raw in text.splitlines():
        line = raw.strip().strip("#=*-`>").strip()
        if len(line) >= 8 and not line.startswith(("[!", "![", "<", "..", ":")):
            return line
    return ""


# Manifests larger than this are not parsed for the overview (a lock file is not a manifest).
MANIFEST_MAX_BYTES = 1_000_000


def _repo_file_text(path: Path, limit: int = MANIFEST_MAX_BYTES) -> str:
    """A README, package file or manifest of the repository, never read through a symlink (a
    ``README`` or ``requirements.txt`` linked to ``/etc`` or ``~/.ssh`` is refused) and never a
    FIFO. OSError when refused or unreadable, like the reads it replaces."""
    from engine.errors import SemforaError
    from engine.policy.sandbox import open_checked

    try:
        return open_checked(path, max_bytes=limit).decode("utf-8", errors="replace")
    except SemforaError as exc:
        raise OSError(exc.message) from exc


def _doc_of_package_file(path: Path) -> str:
    try:
        head = _repo_file_text(path, 4096)
    except OSError:
        return ""
    m = re.match(r'\s*(?:#[^\n]*\n\s*)*[rRuU]?("""|\'\'\')(.*?)(?:\1|$)', head, re.S)
    if m:
        return _first_line(m.group(2))
    m = re.match(r"\s*(?://[^\n]*\n?)+", head)  # Go/Rust/JS leading comment block
    if m:
        return _first_line(re.sub(r"^\s*//[/!]?", "", m.group(0), flags=re.M))
    return ""


def infer_purpose(layout: RepoLayout, conn: sqlite3.Connection, module: Module) -> str:
    """A README line, else a package docstring, else the module's dominant definitions."""
    base = layout.root if module.name == "." else layout.root / module.name
    for name in README_NAMES:
        p = base / name
        if p.is_file():
            try:
                line = _first_line(_repo_file_text(p, 4096))
            except OSError:
                line = ""
            if line:
                return line
    for name in PACKAGE_DOC_FILES:
        doc = _doc_of_package_file(base / name)
        if doc:
            return doc
    if module.subtree and module.name != ".":
        where, params = (
            "(module = ? OR (module > ? AND module < ?))",
            [module.name, module.name + "/", module.name + "0"],
        )
    else:
        where, params = "module = ?", [module.name]
    for other in module.apart:  # listed as modules of their own: their types are theirs to name
        where += " AND NOT (module = ? OR (module > ? AND module < ?))"
        params += [other, other + "/", other + "0"]
    rows = conn.execute(
        f"SELECT kind, name FROM symbols WHERE {where} AND kind IN ('class','struct','interface','trait','enum') "
        "AND exported = 1 AND parent IS NULL ORDER BY (end_line - start_line) DESC LIMIT 12",
        params,
    ).fetchall()
    if not rows:
        rows = conn.execute(
            f"SELECT kind, name FROM symbols WHERE {where} AND kind = 'function' AND exported = 1 "
            "ORDER BY (end_line - start_line) DESC LIMIT 12",
            params,
        ).fetchall()
    if not rows:
        return ""
    label = "types" if rows[0][0] != "function" else "functions"
    return f"{label}: " + ", ".join(list(dict.fromkeys(r[1] for r in rows))[:4])


def _manifest_deps(root: Path) -> tuple[str | None, list[str], list[dict[str, str]]]:
    """(project name, dependency names, entry points) from the manifests at the root."""
    name: str | None = None
    deps: list[str] = []
    entries: list[dict[str, str]] = []
    py = root / "pyproject.toml"
    if py.is_file():
        try:
            data = tomllib.loads(_repo_file_text(py))
        except (tomllib.TOMLDecodeError, OSError):
            data = {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        name = project.get("name") or name
        for spec in project.get("dependencies", []) or []:
            deps.append(re.split(r"[\s<>=!~\[;(]", str(spec), maxsplit=1)[0])
        for extra in (project.get("optional-dependencies") or {}).values():
            deps.extend(re.split(r"[\s<>=!~\[;(]", str(s), maxsplit=1)[0] for s in extra)
        poetry = data.get("tool", {}).get("poetry", {}) if isinstance(data.get("tool"), dict) else {}
        deps.extend((poetry.get("dependencies") or {}).keys())
        for script, target in (project.get("scripts") or {}).items():
            entries.append({"kind": "console_script", "name": str(script), "where": str(target)})
    for req in sorted(root.glob("requirements*.txt"))[:3]:
        try:
            for line in _repo_file_text(req).splitlines():
                line = line.strip()
                if line and not line.startswith(("#", "-")):
                    deps.append(re.split(r"[\s<>=!~\[;(]", line, maxsplit=1)[0])
        except OSError:
            continue
    pkg = root / "package.json"
    if pkg.is_file():
        try:
            data = json.loads(_repo_file_text(pkg))
        except (json.JSONDecodeError, OSError):
            data = {}
        if isinstance(data, dict):
            name = name or data.get("name")
            for key in ("dependencies", "devDependencies", "peerDependencies"):
                if isinstance(data.get(key), dict):
                    deps.extend(data[key].keys())
            if isinstance(data.get("main"), str):
                entries.append(
                    {"kind": "package_main", "name": str(data.get("name", "main")), "where": data["main"]}
                )
            binv = data.get("bin")
            if isinstance(binv, str):
                entries.append({"kind": "bin", "name": str(data.get("name", "bin")), "where": binv})
            elif isinstance(binv, dict):
                entries.extend({"kind": "bin", "name": str(k), "where": str(v)} for k, v in binv.items())
    gomod = root / "go.mod"
    if gomod.is_file():
        try:
            text = _repo_file_text(gomod)
        except OSError:
            text = ""
        m = re.search(r"^module\s+(\S+)", text, re.M)
        name = name or (m.group(1) if m else None)
        deps.extend(re.findall(r"^\s*(?:require\s+)?([\w.\-]+\.[\w.\-]+/[\w./\-]+)\s+v", text, re.M))
    cargo = root / "Cargo.toml"
    if cargo.is_file():
        try:
            data = tomllib.loads(_repo_file_text(cargo))
        except (tomllib.TOMLDecodeError, OSError):
            data = {}
        name = name or data.get("package", {}).get("name")
        for key in ("dependencies", "dev-dependencies"):
            deps.extend((data.get(key) or {}).keys())
    pom = root / "pom.xml"
    if pom.is_file():
        try:
            text = _repo_file_text(pom)
        except OSError:
            text = ""
        deps.extend(re.findall(r"<artifactId>\s*([\w.\-]+)\s*</artifactId>", text))
    return name, deps, entries


def detect_frameworks(root: Path) -> tuple[str | None, list[str]]:
    name, deps, _entries = _manifest_deps(root)
    found: list[str] = []
    for dep in deps:
        key = dep.lower()
        label = KNOWN_FRAMEWORKS.get(key) or next(
            (v for k, v in KNOWN_FRAMEWORKS.items() if "/" in k and key.startswith(k)), None
        )
        if label and label not in found:
            found.append(label)
    return name, found[:MAX_FRAMEWORKS]


def _entry_points(layout: RepoLayout, conn: sqlite3.Connection) -> list[dict[str, str]]:
    _name, _deps, entries = _manifest_deps(layout.root)
    for (path,) in conn.execute(
        "SELECT path FROM files WHERE path = '__main__.py' OR path LIKE '%/__main__.py' ORDER BY length(path) LIMIT ?",
        (MAX_ENTRY_POINTS,),
    ):
        entries.append(
            {"kind": "__main__", "name": path.rsplit("/", 2)[-2] if "/" in path else ".", "where": path}
        )
    for qname, path, line in conn.execute(
        "SELECT qualified_name, file, start_line FROM symbols WHERE name = 'main' AND parent IS NULL "
        "AND kind = 'function' ORDER BY length(file) LIMIT ?",
        (MAX_ENTRY_POINTS,),
    ):
        entries.append({"kind": "main", "name": qname, "where": f"{path}:{line}"})
    return entries[:MAX_ENTRY_POINTS]


def _hubs(conn: sqlite3.Connection, limit: int) -> list[dict[str, Any]]:
    out = []
    for sid, n in most_called(conn, limit):
        row = conn.execute("SELECT qualified_name, file FROM symbols WHERE id = ?", (sid,)).fetchone()
        if row:
            out.append({"symbol": row[0], "file": row[1], "callers": n, "id": sid})
    return out


def _module_of(path: str, names: Collection[str]) -> str:
    """The longest of ``names`` that is ``path`` or a directory above it ("." when none is, and for
    a one-character name, as the scan over every name this replaced decided): one set lookup per
    directory level, not a prefix test per module (280k of them for Django's overview)."""
    known = names if isinstance(names, set | frozenset) else set(names)
    head = path
    while True:
        if len(head) > 1 and head in known:
            return head
        if "/" not in head:
            return "."
        head = head.rpartition("/")[0]


def _dependencies(conn: sqlite3.Connection, modules: list[Module], limit: int) -> list[dict[str, Any]]:
    """Module -> module import counts, folded from the directory graph (one row per directory pair)."""
    names = {m.name for m in modules if m.name != "."}
    counts: dict[tuple[str, str], int] = {}
    module_of: dict[str, str] = {}
    for a, b, n in conn.execute(
        "SELECT fa.module, fb.module, count(*) FROM file_links fi JOIN files fa ON fa.id = fi.src "
        "JOIN files fb ON fb.id = fi.dst WHERE fa.module != fb.module GROUP BY fa.module, fb.module"
    ):
        ma = module_of.get(a) or module_of.setdefault(a, _module_of(a, names))
        mb = module_of.get(b) or module_of.setdefault(b, _module_of(b, names))
        if ma != mb:
            counts[(ma, mb)] = counts.get((ma, mb), 0) + int(n)
    top = sorted(counts.items(), key=lambda kv: -kv[1])[:limit]
    return [{"from": a, "to": b, "imports": n} for (a, b), n in top]


@dataclass(frozen=True)
class Overview:
    data: dict[str, Any]
    toon: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.toon)


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def build_overview(layout: RepoLayout, conn: sqlite3.Connection, *, max_tokens: int = MAX_TOKENS) -> Overview:
    """The overview of an indexed repository, as data and as TOON within ``max_tokens``."""
    import toon_format

    nodes = _directory_tree(conn)
    root = nodes.get(".", _Node("."))
    languages = [
        {"name": lang, "files": int(n), "lines": int(lines or 0)}
        for lang, n, lines in conn.execute(
            "SELECT language, count(*), sum(line_count) FROM files GROUP BY language ORDER BY count(*) DESC LIMIT ?",
            (MAX_LANGUAGES,),
        )
    ]
    edges = int(conn.execute("SELECT count(*) FROM calls WHERE callee_id IS NOT NULL").fetchone()[0])
    project, frameworks = detect_frameworks(layout.root)
    all_modules = choose_modules(nodes, MAX_MODULES)
    # Masked before a purpose is clipped: a cut secret (`password="hunt…`) is no longer seen as one.
    purposes = {m.name: redact(infer_purpose(layout, conn, m)) for m in all_modules}
    entries = _entry_points(layout, conn)
    hubs = _hubs(conn, MAX_HUBS)
    deps = _dependencies(conn, all_modules, MAX_DEPENDENCIES)
    budget = max_tokens * CHARS_PER_TOKEN
    data: dict[str, Any] = {}
    text = ""
    for step in SHRINK_STEPS:
        modules = all_modules[: step["modules"]]
        data = {
            "repo": layout.root.name,
            "project": project or layout.root.name,
            "totals": {
                "files": root.files,
                "lines": root.lines,
                "symbols": root.symbols,
                "call_edges": edges,
                "modules": len(all_modules),
            },
            "risk": {"high": root.risk["high"], "medium": root.risk["medium"], "low": root.risk["low"]},
            "languages": languages,
            "frameworks": frameworks,
            "modules": [
                {
                    "name": m.name + ("/" if m.subtree and m.name != "." else ""),
                    "files": m.files,
                    "symbols": m.symbols,
                    "high": m.high,
                    "medium": m.medium,
                    "low": m.low,
                    "purpose": _clip(purposes.get(m.name, ""), step["purpose"]) if step["purpose"] else "",
                }
                for m in modules
            ],
            "entry_points": entries[: step["entries"]],
            "hubs": [{k: h[k] for k in ("symbol", "file", "callers")} for h in hubs[: step["hubs"]]],
            "dependencies": deps[: step["deps"]],
        }
        text = toon_format.dumps(data)
        if len(text) <= budget:
            break
    if len(text) > budget:  # pathological names: cut at a line boundary as the last resort
        text = text[: budget - 2].rsplit("\n", 1)[0] + "\n…"
    return Overview(data, text)


# --- stored once per index state -------------------------------------------------------------

# Root manifests the overview reads (besides each module's README and package doc file).
MANIFEST_FILES = ("pyproject.toml", "package.json", "go.mod", "Cargo.toml", "pom.xml")
# Seconds a reader waits to store a freshly built overview; an indexer holding the write
# lock means the index is about to change anyway, so it simply is not stored this time.
STORE_TIMEOUT_S = 0.05

Probe = tuple[str, int, int]  # (path relative to the root, mtime_ns, size); (-1, -1) when absent


def _probe_paths(root: Path, modules: list[str]) -> list[str]:
    """Every path whose content (or absence) the overview depends on, besides index.db."""
    paths = ["."]  # the root's listing: requirements*.txt come and go
    paths += list(MANIFEST_FILES) + [p.name for p in sorted(root.glob("requirements*.txt"))]
    for name in modules:
        base = "" if name == "." else name.rstrip("/") + "/"
        paths += [base + f for f in README_NAMES + PACKAGE_DOC_FILES]
    return paths


def _probe(root: Path, paths: list[str]) -> list[Probe]:
    out: list[Probe] = []
    for rel in paths:
        try:
            st = (root / rel).stat()
        except OSError:
            out.append((rel, -1, -1))
            continue
        out.append((rel, st.st_mtime_ns, st.st_size))
    return out


# Raised when the overview made from one index state changes (3: a directory too wide to split whole
# lists its largest subdirectories): an overview stored by an older semfora is built again.
OVERVIEW_VERSION = "3"


def _index_generation(conn: sqlite3.Connection) -> str | None:
    """The key an overview is stored under: the index state's generation and ``OVERVIEW_VERSION``."""
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
    except sqlite3.OperationalError:
        return None
    return None if row is None else f"{row[0]}/v{OVERVIEW_VERSION}"


def stored_overview(
    layout: RepoLayout, conn: sqlite3.Connection, *, max_tokens: int = MAX_TOKENS
) -> Overview:
    """The overview for the index as it is now: read from index.db when this index state (and
    every file it was built from) is the one it was stored for, else built once and stored.

    ``conn`` is a reader's connection; the store goes through a short-lived connection that
    never waits on an indexer (a busy database just means it is built again next time).
    """
    generation = _index_generation(conn)
    try:
        row = conn.execute(
            "SELECT generation, probes, data, toon FROM overview WHERE max_tokens = ?", (max_tokens,)
        ).fetchone()
    except sqlite3.OperationalError:
        row = None
    if row is not None and generation is not None and row[0] == generation:
        probes = [tuple(p) for p in json.loads(row[1])]
        if _probe(layout.root, [str(p[0]) for p in probes]) == probes:
            # Masked again: a row an older semfora stored may hold a README's or docstring's secret.
            return Overview(redact_json(json.loads(row[2])), redact_quoted(str(row[3])))
    ov = build_overview(layout, conn, max_tokens=max_tokens)
    if generation is not None:
        modules = [str(m["name"]) for m in ov.data.get("modules", [])]
        _store(layout, max_tokens, generation, _probe(layout.root, _probe_paths(layout.root, modules)), ov)
    return ov


def _store(layout: RepoLayout, max_tokens: int, generation: str, probes: list[Probe], ov: Overview) -> None:
    try:
        writer = sqlite3.connect(str(layout.index_db), timeout=STORE_TIMEOUT_S)
    except sqlite3.Error:
        return
    try:
        with writer:
            # Older index states are never asked for again.
            writer.execute("DELETE FROM overview WHERE generation != ?", (generation,))
            writer.execute(
                "INSERT OR REPLACE INTO overview VALUES (?, ?, ?, ?, ?)",
                (max_tokens, generation, json.dumps(probes), json.dumps(ov.data), ov.toon),
            )
    except sqlite3.OperationalError:
        return  # an indexer holds the write lock, or the table is not there: build it next time
    finally:
        writer.close()
