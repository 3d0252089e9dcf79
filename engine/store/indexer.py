"""The incremental indexer: discover, parse what changed in parallel, store, resolve graphs.

Owns ``index_repository`` and the single-writer lock. Unchanged files are
recognised by mtime+size, then SHA-256; only changed, added, renamed and deleted
files are touched, and only the call edges they can affect are re-resolved.
It never holds every symbol in memory and never blocks readers (WAL).
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import marshal
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from multiprocessing.context import BaseContext
from pathlib import Path

from engine import flock
from engine.config import Settings
from engine.errors import LockBusy
from engine.lifetime import die_with_parent
from engine.policy.redaction import redact
from engine.semantic.graph import (
    CALLABLE_KINDS,
    SELF_RECEIVERS,
    CallResolver,
    Definition,
    FileContext,
    ModuleIndex,
    file_context,
)
from engine.semantic.model import FileAnalysis, ImportRef
from engine.store.db import (
    PAGE_CACHE_KB,
    StoreWarning,
    WarningSink,
    identifier_parts,
    open_index,
    relative_module,
)
from engine.store.discovery import Candidate, Skipped, content_problem, discover
from engine.store.layout import RepoLayout
from engine.store.schema import create_secondary_indexes, drop_secondary_indexes

# (message, done, total): the progress shape shared with the text index.
ProgressFn = Callable[[str, int, int], None]

# Up to this many files are parsed in this process: a pool costs more than it saves.
INLINE_PARSE_MAX = 24
# Files per worker task: big enough to amortise pickling, small enough to balance load.
BATCH_MIN, BATCH_MAX = 8, 48
# Tasks queued per worker, so results stream back while the parent writes them.
TASKS_IN_FLIGHT_PER_WORKER = 3
# When more files than this need edges re-resolved, load every definition at once
# (one scan) instead of one indexed query per called name.
PRELOAD_DEFINITIONS_ABOVE = 150
# SQLite's default limit on host parameters is 999 in old builds; stay under it.
SQL_CHUNK = 500
# Page cache (KiB) during a cold build: the Django index is ~64 MB, and sorting its
# secondary indexes in memory instead of spilling to the WAL is most of the saving.
BULK_CACHE_KB = 64_000
# The table still being written while calls resolve: its indexes are built last.
LATE_TABLES = frozenset({"calls"})


@dataclass(frozen=True)
class IndexReport:
    """What one indexing run did. ``changed`` counts modified files only."""

    files: int
    symbols: int
    edges: int
    changed: int
    added: int
    deleted: int
    renamed: int
    skipped: int
    seconds: float
    changed_paths: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    skipped_files: tuple[Skipped, ...] = ()
    warnings: tuple[StoreWarning, ...] = ()
    rebuild: bool = False
    text_index: object | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "files": self.files,
            "symbols": self.symbols,
            "edges": self.edges,
            "changed": self.changed,
            "added": self.added,
            "deleted": self.deleted,
            "renamed": self.renamed,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 3),
            "changed_paths": list(self.changed_paths),
            "deleted_paths": list(self.deleted_paths),
            "skipped_files": [{"path": s.path, "reason": s.reason} for s in self.skipped_files],
            "warnings": [{"code": w.code, "message": w.message} for w in self.warnings],
        }


@contextmanager
def writer_lock(layout: RepoLayout, timeout: float) -> Iterator[None]:
    """Hold ``index.lock`` exclusively; wait up to ``timeout`` seconds, then raise LockBusy."""
    fd = flock.acquire(layout.cache_dir / "index.lock", timeout)
    if fd is None:
        raise LockBusy(
            "another `semfora index` is writing this repository's index",
            code="INDEX_LOCKED",
            hint=f"waited {timeout:g}s; try again when it finishes",
        )
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


# --- parsing (runs in worker processes) --------------------------------------------------------


@dataclass(frozen=True)
class ParseResult:
    path: str
    size: int
    mtime_ns: int
    sha256: str
    rows: FileRows | None
    problem: str | None


@dataclass(frozen=True)
class FileRows:
    """One file's analysis flattened to database rows in the worker (cheap to pickle).

    ``symbols`` rows lack the leading ``sid`` (the writer assigns it) and end with
    the symbol's search terms; ``calls`` rows carry the caller's parent for resolution.
    """

    file: tuple[object, ...]
    symbols: list[tuple[object, ...]]
    calls: list[tuple[object, ...]]
    imports: list[tuple[object, ...]]
    # The same imports as ImportRef fields (names as a tuple), so the writer need not re-parse JSON.
    refs: list[tuple[object, ...]] = field(default_factory=list)


def _rows(path: str, fa: FileAnalysis, size: int, mtime_ns: int, sha: str) -> FileRows:
    module = relative_module(path)
    symbols: list[tuple[object, ...]] = []
    calls: list[tuple[object, ...]] = []
    # Booleans go in as they are: SQLite stores True/False as the integers 1/0.
    for s in fa.symbols:
        short = _short(s.name)
        symbols.append(
            (
                s.id,
                s.name,
                short,
                short.lower(),
                s.qualified_name,
                s.kind,
                path,
                module,
                s.language,
                s.start_line,
                s.end_line,
                redact(s.signature),  # index.db never stores a secret a signature or doc holds
                redact(s.doc),
                s.parent,
                s.exported,
                _json_list(s.decorators),
                s.is_async,
                s.arity,
                s.control_flow,
                s.max_nesting,
                s.risk.level,
                _json_list(s.risk.reasons),
                s.body_hash,
                tuple(_terms(s.name)),
            )
        )
        if s.calls:
            sid, parent = s.id, s.parent
            calls += [(path, sid, parent, *c) for c in s.calls]
    calls += [(path, None, None, *c) for c in fa.module_calls]
    imports: list[tuple[object, ...]] = [
        (path, i.module, _json_list(i.names), i.alias, i.line) for i in fa.imports
    ]
    refs: list[tuple[object, ...]] = [(i.module, i.names, i.alias, i.line) for i in fa.imports]
    file_row = (path, fa.language, module, size, mtime_ns, sha, fa.line_count, fa.syntax_errors)
    return FileRows(file_row, symbols, calls, imports, refs)


def _parse_one(root: str, path: str, language: str) -> ParseResult:
    from engine.semantic.extract import analyze_source

    full = os.path.join(root, path)
    try:
        with open(full, "rb") as fh:
            st = os.fstat(fh.fileno())
            data = fh.read()
    except OSError as exc:
        return ParseResult(path, 0, 0, "", None, f"unreadable: {exc.strerror}")
    sha = hashlib.sha256(data).hexdigest()
    problem = content_problem(path, data)
    if problem is not None:
        return ParseResult(path, st.st_size, st.st_mtime_ns, sha, None, problem)
    try:
        analysis = analyze_source(path, data, language, sha256=sha)
    except Exception as exc:  # an extractor bug on one file is reported, not fatal
        # One pathological file must not abort the run: it is reported as skipped instead.
        return ParseResult(
            path, st.st_size, st.st_mtime_ns, sha, None, f"extraction failed: {type(exc).__name__}"
        )
    rows = _rows(path, analysis, st.st_size, st.st_mtime_ns, sha)
    return ParseResult(path, st.st_size, st.st_mtime_ns, sha, rows, None)


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a burst of allocation.

    Extraction and row building make millions of short-lived, acyclic objects (freed by
    reference counting); the collector's repeated scans of them cost 6-10% of a cold build.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def parse_batch(root: str, items: Sequence[tuple[str, str]]) -> list[ParseResult]:
    """Read, hash and analyse each ``(path, language)``."""
    with _gc_paused():
        return [_parse_one(root, path, language) for path, language in items]


def parse_batch_packed(root: str, items: Sequence[tuple[str, str]]) -> bytes:
    """Worker entry point: ``parse_batch`` flattened and marshalled.

    The results are plain tuples, lists, strings and numbers; ``marshal`` serialises
    those about four times faster than pickle, and this runs once per file.
    """
    packed = [
        (r.path, r.size, r.mtime_ns, r.sha256, _pack_rows(r.rows), r.problem)
        for r in parse_batch(root, items)
    ]
    return marshal.dumps(packed)


def _pack_rows(rows: FileRows | None) -> tuple[object, ...] | None:
    if rows is None:
        return None
    return (rows.file, rows.symbols, rows.calls, rows.imports, rows.refs)


def _unpack_batch(data: bytes) -> list[ParseResult]:
    out: list[ParseResult] = []
    for path, size, mtime_ns, sha, rows, problem in marshal.loads(data):
        out.append(
            ParseResult(path, size, mtime_ns, sha, FileRows(*rows) if rows is not None else None, problem)
        )
    return out


def _pool_context() -> BaseContext:
    import multiprocessing

    # fork is fastest (workers inherit loaded grammars) but unsafe once threads run.
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    from multiprocessing import forkserver

    # Start the helper processes now, while stderr is a real file: a host that captures
    # stderr (Textual's fileno() is -1) would otherwise make them fail to spawn.
    with _stderr_with_fd():
        forkserver.ensure_running()
    return multiprocessing.get_context("forkserver")


@contextmanager
def _stderr_with_fd() -> Iterator[None]:
    """Point ``sys.stderr`` at the process's real stderr while child processes are spawned."""
    import sys

    try:
        valid = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (OSError, ValueError, AttributeError):
        valid = False
    if valid or sys.__stderr__ is None:
        yield
        return
    captured, sys.stderr = sys.stderr, sys.__stderr__
    try:
        yield
    finally:
        sys.stderr = captured


def _parse_all(
    root: Path, items: list[tuple[str, str]], workers: int, progress: ProgressFn | None
) -> Iterator[ParseResult]:
    total = len(items)
    done = 0
    if total <= INLINE_PARSE_MAX or workers <= 1:
        for path, language in items:
            yield _parse_one(str(root), path, language)
            done += 1
            if progress:
                progress("parsing", done, total)
        return
    context = _pool_context()
    if context.get_start_method() == "fork":
        # Load grammars and compile queries once here; forked workers inherit them.
        from engine.semantic.extract import analyze_source

        for language in sorted({lang for _p, lang in items}):
            analyze_source(f"warm-up.{language}", b"", language)
    size = max(BATCH_MIN, min(BATCH_MAX, total // (workers * 8) or BATCH_MIN))
    batches = [items[i : i + size] for i in range(0, total, size)]
    # Workers die with semfora (a killed `index` must leave no orphan holding index.lock).
    parent = os.getpid() if context.get_start_method() == "fork" else None
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=die_with_parent, initargs=(parent,)
    ) as pool:
        pending: set[Future[bytes]] = set()
        queue = iter(batches)
        limit = workers * TASKS_IN_FLIGHT_PER_WORKER
        for batch in queue:
            pending.add(pool.submit(parse_batch_packed, str(root), batch))
            if len(pending) >= limit:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                for result in _unpack_batch(fut.result()):
                    done += 1
                    yield result
                if progress:
                    progress("parsing", done, total)
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(parse_batch_packed, str(root), nxt))


# --- writing -----------------------------------------------------------------------------------


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), SQL_CHUNK):
        yield items[i : i + SQL_CHUNK]


def _delete_file_rows(conn: sqlite3.Connection, paths: Sequence[str], *, keep_file_row: bool = False) -> None:
    for part in _chunks(paths):
        marks = ",".join("?" * len(part))
        conn.execute(
            f"DELETE FROM symbol_terms WHERE sid IN (SELECT sid FROM symbols WHERE file IN ({marks}))", part
        )
        for table, column in (("symbols", "file"), ("calls", "file"), ("imports", "file")):
            conn.execute(f"DELETE FROM {table} WHERE {column} IN ({marks})", part)
        conn.execute(f"DELETE FROM file_imports WHERE src IN ({marks})", part)
        if not keep_file_row:
            conn.execute(f"DELETE FROM files WHERE path IN ({marks})", part)


_EMPTY_JSON_LIST = "[]"
# Rows buffered before one executemany; bounds memory while keeping inserts batched.
FLUSH_ROWS = 20_000
# The same during a cold build, smaller so the last flush (on the critical path, after the
# final file is parsed) is short; the earlier ones overlap with the workers' parsing.
BULK_FLUSH_ROWS = 2_000


def _json_list(values: Sequence[str]) -> str:
    return json.dumps(list(values)) if values else _EMPTY_JSON_LIST


def _short(name: str) -> str:
    """The last segment of a dotted name: ``res.send`` is called as ``send``."""
    return name.rsplit(".", 1)[-1] or name


# Expands the pending (sid, JSON array) rows into (term, sid) rows in key order, all in SQLite.
EXPAND_TERMS_SQL = "INSERT INTO symbol_terms SELECT j.value, p.sid FROM temp.pending_terms p, json_each(p.terms) j ORDER BY 1, 2"


def _json_terms(terms: Iterable[str]) -> str:
    """A JSON array of identifier parts; they are ASCII letters and digits, so no escaping."""
    return '["' + '","'.join(terms) + '"]' if terms else "[]"


@lru_cache(maxsize=65536)
def _terms(name: str) -> frozenset[str]:
    return frozenset(identifier_parts(name))


class _Writer:
    """Buffers the rows of parsed files and writes them in batches.

    In bulk mode (an empty index) it also keeps each call and import in memory,
    so resolution does not have to read 100k+ rows back from the database.
    """

    def __init__(self, conn: sqlite3.Connection, *, bulk: bool) -> None:
        self.conn = conn
        self.bulk = bulk
        self.next_sid = int(conn.execute("SELECT COALESCE(MAX(sid), 0) FROM symbols").fetchone()[0]) + 1
        self.files: list[tuple[object, ...]] = []
        self.symbols: list[tuple[object, ...]] = []
        self.terms: list[tuple[object, int]] = []
        self.calls: list[tuple[object, ...]] = []
        self.imports: list[tuple[object, ...]] = []
        self.all_calls: list[tuple[object, ...]] = []
        self.definitions: list[Definition] = []
        self.imports_by_file: dict[str, list[ImportRef]] = {}
        self.pending_terms = bulk
        if bulk:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS pending_terms (sid INTEGER, terms TEXT)")

    def add(self, rows: FileRows, now: float) -> None:
        self.files.append((*rows.file, now))
        sid = self.next_sid
        symbols, terms = self.symbols, self.terms
        if self.bulk:
            # One (sid, JSON array) row per symbol; SQLite expands them at the end (json_each).
            for row in rows.symbols:
                symbols.append((sid, *row[:-1]))
                terms.append((sid, _json_terms(row[-1])))  # type: ignore[arg-type]
                sid += 1
        else:
            for row in rows.symbols:
                symbols.append((sid, *row[:-1]))
                terms.extend([(t, sid) for t in row[-1]])  # type: ignore[attr-defined]
                sid += 1
        self.next_sid = sid
        self.imports.extend(rows.imports)
        if self.bulk:
            self.all_calls.extend(rows.calls)  # inserted once, resolved, by _resolve_graphs
            kinds = CALLABLE_KINDS
            self.definitions.extend(
                Definition(r[0], r[2], r[6], r[13], r[5], r[8])  # type: ignore[arg-type]
                for r in rows.symbols
                if r[5] in kinds
            )
            self.imports_by_file[str(rows.file[0])] = [ImportRef(*r) for r in rows.refs]  # type: ignore[arg-type]
        else:
            self.calls.extend(rows.calls)
        if len(self.calls) + len(self.symbols) > (BULK_FLUSH_ROWS if self.bulk else FLUSH_ROWS):
            self.flush()

    def flush(self) -> None:
        c = self.conn
        c.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?)", self.files)
        c.executemany(f"INSERT INTO symbols VALUES ({','.join('?' * 24)})", self.symbols)
        if self.bulk:
            c.executemany("INSERT INTO temp.pending_terms VALUES (?,?)", self.terms)
            self.terms.clear()
        else:
            self.flush_terms()
        c.executemany("INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,NULL,NULL,NULL)", self.calls)
        c.executemany("INSERT INTO imports VALUES (?,?,?,?,?)", self.imports)
        for buf in (self.files, self.symbols, self.calls, self.imports):
            buf.clear()

    def flush_terms(self) -> None:
        """Insert the search terms. In bulk mode each symbol's terms waited in
        ``temp.pending_terms`` as one JSON array; SQLite expands and sorts them in one
        statement (appending to the (term, sid) b-tree in key order, with no Python per
        term), which the parent runs while workers resolve calls."""
        if not self.bulk:
            self.conn.executemany("INSERT INTO symbol_terms VALUES (?,?)", self.terms)
            self.terms.clear()
            return
        if self.terms:
            self.conn.executemany("INSERT INTO temp.pending_terms VALUES (?,?)", self.terms)
            self.terms.clear()
        if self.pending_terms:
            try:
                self.conn.execute(EXPAND_TERMS_SQL)
            except sqlite3.OperationalError:  # an SQLite built without JSON: expand here
                rows = self.conn.execute("SELECT sid, terms FROM temp.pending_terms").fetchall()
                expanded = sorted((term, sid) for sid, terms in rows for term in json.loads(terms))
                self.conn.executemany("INSERT INTO symbol_terms VALUES (?,?)", expanded)
            self.conn.execute("DELETE FROM temp.pending_terms")


def _name_ids(conn: sqlite3.Connection, paths: Sequence[str]) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for part in _chunks(paths):
        marks = ",".join("?" * len(part))
        out.update(
            conn.execute(f"SELECT short_name, id FROM symbols WHERE file IN ({marks})", part).fetchall()
        )
    return out


# --- graphs ------------------------------------------------------------------------------------


class _Definitions:
    """Callable definitions by name: one scan when many files need them, else per-name queries."""

    def __init__(
        self, conn: sqlite3.Connection, preload: bool, known: list[Definition] | None = None
    ) -> None:
        self._conn = conn
        self._memo: dict[str, list[Definition]] = {}
        self._complete = preload or known is not None
        kinds = ",".join(f"'{k}'" for k in sorted(CALLABLE_KINDS))
        self._sql = (
            f"SELECT id, short_name, file, parent, kind, language FROM symbols WHERE kind IN ({kinds})"
        )
        if known is not None:
            for d in known:
                self._memo.setdefault(d.name, []).append(d)
        elif preload:
            for row in conn.execute(self._sql):
                self._memo.setdefault(row[1], []).append(Definition(*row))

    def __call__(self, name: str) -> list[Definition]:
        hit = self._memo.get(name)
        if hit is not None or self._complete:
            return hit or []
        found = [Definition(*r) for r in self._conn.execute(self._sql + " AND short_name = ?", (name,))]
        self._memo[name] = found
        return found


def _imports_by_file(conn: sqlite3.Connection, paths: Sequence[str] | None) -> dict[str, list[ImportRef]]:
    out: dict[str, list[ImportRef]] = {}
    sql = "SELECT file, module, names, alias, line FROM imports"
    groups: Iterable[Sequence[str] | None] = [None] if paths is None else _chunks(paths)
    for part in groups:
        if part is None:
            rows = conn.execute(sql)
        else:
            rows = conn.execute(sql + f" WHERE file IN ({','.join('?' * len(part))})", list(part))
        for file, module, names, alias, line in rows:
            out.setdefault(file, []).append(ImportRef(module, tuple(json.loads(names)), alias, line))
    return out


def _resolve_graphs(
    conn: sqlite3.Connection,
    changed: set[str],
    changed_names: set[str],
    *,
    full: bool,
    structure_changed: bool,
    progress: ProgressFn | None,
    preloaded: _Writer | None = None,
    workers: int = 1,
    while_waiting: Callable[[], None] | None = None,
    shard_dir: Path | None = None,
) -> None:
    """Recompute file imports and call edges for every file whose edges could have changed.

    ``full`` recomputes everything; otherwise only the changed files, files whose
    import targets moved, and files calling a name whose definitions changed.
    """
    languages = dict(conn.execute("SELECT path, language FROM files").fetchall())
    modules = ModuleIndex(languages)
    import_scope = None if (full or structure_changed) else sorted(changed & set(languages))
    imports = preloaded.imports_by_file if preloaded is not None else _imports_by_file(conn, import_scope)
    scope_files = list(languages) if import_scope is None else import_scope
    affected = set(languages) if full else set(changed)
    old_targets: dict[str, set[str]] = {}
    if full:
        conn.execute("DELETE FROM file_imports")
    else:
        for part in _chunks(scope_files):
            marks = ",".join("?" * len(part))
            for src, dst in conn.execute(
                f"SELECT src, dst FROM file_imports WHERE src IN ({marks})", list(part)
            ):
                old_targets.setdefault(src, set()).add(dst)
            conn.execute(f"DELETE FROM file_imports WHERE src IN ({marks})", list(part))
    rows: list[tuple[str, str]] = []
    for src in scope_files:
        targets: set[str] = set()
        for imp in imports.get(src, ()):
            targets.update(modules.resolve(src, imp, languages[src]))
        targets.discard(src)
        rows.extend((src, dst) for dst in sorted(targets))
        if not full and targets != old_targets.get(src, set()):
            affected.add(src)
    conn.executemany("INSERT OR IGNORE INTO file_imports VALUES (?,?)", rows)
    for name in changed_names:
        affected.update(r[0] for r in conn.execute("SELECT DISTINCT file FROM calls WHERE name = ?", (name,)))
    affected &= set(languages)
    todo = sorted(affected)
    if preloaded is None:
        missing = [p for p in todo if p not in imports]
        if missing:
            imports.update(_imports_by_file(conn, missing))
    definitions = _Definitions(
        conn,
        preload=len(todo) > PRELOAD_DEFINITIONS_ABOVE,
        known=preloaded.definitions if preloaded is not None else None,
    )
    resolving = _FileResolver(CallResolver(definitions), modules, languages, imports)
    if preloaded is None:
        # Incremental: a re-exporting package may be outside this round's files.
        resolving.loader = lambda path: _imports_by_file(conn, [path]).get(path, [])
    resolving.resolver.module_context = resolving.context_for
    total = len(todo)
    batch: list[tuple[object, ...]] = []
    if preloaded is not None:
        # Bulk: the calls were kept in memory; resolve them (in parallel when it pays) and
        # insert each once, already resolved.
        _resolve_bulk(conn, resolving, preloaded.all_calls, workers, shard_dir, while_waiting)
        if progress:
            progress("resolving calls", total, total)
        return
    sql = "SELECT rowid, file, caller_id, caller_parent, name, receiver, line FROM calls"
    for part in _chunks(todo):
        marks = ",".join("?" * len(part))
        rows = conn.execute(sql + f" WHERE file IN ({marks}) ORDER BY file", list(part)).fetchall()
        resolved = resolving.resolve_rows([row[1:] for row in rows])
        batch.extend((*res, row[0]) for row, res in zip(rows, resolved, strict=True))
        resolving.forget_contexts()
    conn.executemany("UPDATE calls SET callee_id = ?, kind = ?, package = ? WHERE rowid = ?", batch)
    if progress:
        progress("resolving calls", total, total)


Resolution = tuple[str | None, str, str | None]  # callee_id, kind, package


class _FileResolver:
    """Resolves call rows file by file, memoising within a file: the same (name, receiver)
    resolves the same way there (self-calls also by the caller's class), and test files call
    self.assertEqual hundreds of times each."""

    def __init__(
        self,
        resolver: CallResolver,
        modules: ModuleIndex,
        languages: dict[str, str],
        imports: dict[str, list[ImportRef]],
    ) -> None:
        self.resolver = resolver
        self.modules = modules
        self.languages = languages
        self.imports = imports
        self.contexts: dict[str, FileContext] = {}
        self.memo: dict[tuple[object, ...], Resolution] = {}
        self.memo_file: object = None
        # Reads a file's imports when they were not loaded up front (incremental rounds).
        self.loader: Callable[[str], list[ImportRef]] | None = None

    def context_for(self, path: str) -> FileContext | None:
        """The import context of any indexed file (to follow a package's re-exports)."""
        ctx = self.contexts.get(path)
        if ctx is not None:
            return ctx
        language = self.languages.get(path)
        if language is None:
            return None
        refs = self.imports.get(path)
        if refs is None and self.loader is not None:
            refs = self.imports[path] = self.loader(path)
        ctx = self.contexts[path] = file_context(path, language, refs or (), self.modules)
        return ctx

    def forget_contexts(self) -> None:
        self.contexts.clear()

    def __call__(self, row: Sequence[object]) -> Resolution:
        return self.resolve_rows((row,))[0]

    def resolve_rows(self, rows: Iterable[Sequence[object]]) -> list[Resolution]:
        """Resolve call rows ``(file, caller, parent, name, receiver, line, ...)`` in order."""
        out: list[Resolution] = []
        append = out.append
        memo = self.memo
        self_receivers = SELF_RECEIVERS
        for row in rows:
            file, _caller, parent, name, receiver = row[:5]
            if file != self.memo_file:
                memo.clear()
                self.memo_file = file
            key = (name, receiver, parent if receiver is None or receiver in self_receivers else None)
            hit = memo.get(key)
            if hit is None:
                hit = memo[key] = self._resolve(row)
            append(hit)
        return out

    def _resolve(self, row: Sequence[object]) -> Resolution:
        path, _caller, parent, name, receiver = row[:5]
        language = self.languages[path]  # type: ignore[index]
        ctx = self.contexts.get(path)  # type: ignore[call-overload]
        if ctx is None:
            ctx = self.contexts[path] = file_context(  # type: ignore[index]
                path,  # type: ignore[arg-type]
                language,
                self.imports.get(path, ()),  # type: ignore[call-overload]
                self.modules,
            )
        return self.resolver.resolve_fields(path, parent, name, receiver, language, ctx)  # type: ignore[arg-type]


# Below this many calls, resolving in one process beats forking workers.
PARALLEL_RESOLVE_MIN_CALLS = 40_000
# Slices per resolution worker: small enough to balance the two workers' loads, and the
# parent copies each finished slice while later ones still resolve.
RESOLVE_SLICES_PER_WORKER = 3
# State a forked resolution worker inherits from its parent (never pickled).
_FORKED: tuple[_FileResolver, list[tuple[object, ...]]] | None = None
_CALLS_COLUMNS = 11
_CALLS_INSERT = f"INSERT INTO calls VALUES ({','.join('?' * _CALLS_COLUMNS)})"
# Shard files written by resolution workers are named so a crashed run's leftovers are found.
SHARD_GLOB = "calls-shard-*.db"
# SQLite attaches at most 10 databases by default; shards are attached together until the commit.
MAX_SHARDS = 8
SHARD_ALIAS = "calls_shard_"


def _detach_shards(conn: sqlite3.Connection) -> None:
    for _seq, name, _file in conn.execute("PRAGMA database_list").fetchall():
        if name.startswith(SHARD_ALIAS):
            conn.execute(f"DETACH DATABASE {name}")


def _resolved_rows(
    resolving: _FileResolver, calls: Sequence[tuple[object, ...]], lo: int, hi: int
) -> Iterator[tuple[object, ...]]:
    part = calls[lo:hi]
    for row, res in zip(part, resolving.resolve_rows(part), strict=True):
        yield (*row, *res)


def _resolve_to_shard(job: tuple[int, int, str]) -> int:
    """Worker: resolve calls[lo:hi] and write them, resolved, into a shard database of its own.

    The per-row cost of binding 170k call rows is paid here, on both cores, instead of in
    the parent; the parent then copies each shard with one INSERT ... SELECT.
    """
    assert _FORKED is not None
    resolving, calls = _FORKED
    lo, hi, path = job
    shard = sqlite3.connect(path, isolation_level=None)
    try:
        shard.execute("PRAGMA journal_mode=OFF")
        shard.execute("PRAGMA synchronous=OFF")
        # Same column order as main.calls (the copy is positional); no types, no indexes.
        shard.execute(f"CREATE TABLE calls ({', '.join(f'c{i}' for i in range(_CALLS_COLUMNS))})")
        shard.execute("BEGIN")
        shard.executemany(_CALLS_INSERT, _resolved_rows(resolving, calls, lo, hi))
        shard.execute("COMMIT")
    finally:
        shard.close()
    return hi - lo


def _remove_shards(shard_dir: Path) -> None:
    for leftover in shard_dir.glob(SHARD_GLOB):
        leftover.unlink(missing_ok=True)


def _resolve_bulk(
    conn: sqlite3.Connection,
    resolving: _FileResolver,
    calls: list[tuple[object, ...]],
    workers: int,
    shard_dir: Path | None,
    while_waiting: Callable[[], None] | None = None,
) -> None:
    """Resolve every call and insert it, resolved, into ``calls`` (in the list's order).

    With several cores, forked workers share the definitions copy-on-write, each resolves
    slices into shard files, and the parent copies them in order; ``while_waiting`` runs
    once the work is handed out (the parent builds indexes there instead of idling).
    """
    import multiprocessing

    global _FORKED
    can_fork = "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1
    if workers <= 1 or len(calls) < PARALLEL_RESOLVE_MIN_CALLS or not can_fork or shard_dir is None:
        if while_waiting is not None:
            while_waiting()
        for lo in range(0, len(calls), FLUSH_ROWS):
            conn.executemany(_CALLS_INSERT, _resolved_rows(resolving, calls, lo, lo + FLUSH_ROWS))
        return
    # Cut on file boundaries so each worker's per-file memo stays whole.
    step = len(calls) // min(MAX_SHARDS, workers * RESOLVE_SLICES_PER_WORKER) + 1
    cuts = [0]
    while cuts[-1] < len(calls):
        end = min(len(calls), cuts[-1] + step)
        while end < len(calls) and calls[end][0] == calls[end - 1][0]:
            end += 1
        cuts.append(end)
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    jobs = [
        (lo, hi, str(shard_dir / SHARD_GLOB.replace("*", f"{tag}-{i}")))
        for i, (lo, hi) in enumerate(itertools.pairwise(cuts))
    ]
    _FORKED = (resolving, calls)
    try:
        ctx = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=ctx, initializer=die_with_parent, initargs=(os.getpid(),)
        ) as pool:
            done = pool.map(_resolve_to_shard, jobs)
            if while_waiting is not None:
                while_waiting()
            for index, ((lo, hi, path), count) in enumerate(zip(jobs, done, strict=True)):
                if count != hi - lo:
                    raise RuntimeError(f"a resolution worker stored {count} of {hi - lo} calls")
                # A database read inside the open transaction cannot be detached before the
                # commit: each shard gets its own name, and is detached by _detach_shards.
                conn.execute("ATTACH DATABASE ? AS ?", (path, f"{SHARD_ALIAS}{index}"))
                conn.execute(f"INSERT INTO main.calls SELECT * FROM {SHARD_ALIAS}{index}.calls")
                Path(path).unlink(missing_ok=True)  # the open handle keeps it readable until detached
    finally:
        _FORKED = None
        for _lo, _hi, path in jobs:
            Path(path).unlink(missing_ok=True)


# --- the run -----------------------------------------------------------------------------------


@dataclass
class _Plan:
    to_parse: list[Candidate] = field(default_factory=list)
    touched_only: list[tuple[Candidate, str]] = field(default_factory=list)  # same content, new stat
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    still_skipped: list[Skipped] = field(default_factory=list)


def _plan(conn: sqlite3.Connection, root: Path, found: list[Candidate]) -> _Plan:
    plan = _Plan()
    known = {r[0]: (r[1], r[2], r[3]) for r in conn.execute("SELECT path, size, mtime_ns, sha256 FROM files")}
    known_skips = {
        r[0]: (r[1], r[2], r[3])
        for r in conn.execute("SELECT path, size, mtime_ns, reason FROM skipped_files")
    }
    present: set[str] = set()
    for cand in found:
        if cand.language is None:
            continue
        present.add(cand.path)
        old = known.get(cand.path)
        if old is not None and (old[0], old[1]) == (cand.size, cand.mtime_ns):
            plan.unchanged += 1
            continue
        skip = known_skips.get(cand.path)
        if old is None and skip is not None and (skip[0], skip[1]) == (cand.size, cand.mtime_ns):
            plan.still_skipped.append(Skipped(cand.path, skip[2]))
            continue
        if old is not None:
            try:
                digest = hashlib.sha256((root / cand.path).read_bytes()).hexdigest()
            except OSError:
                digest = ""
            if digest == old[2]:
                plan.touched_only.append((cand, digest))
                continue
        plan.to_parse.append(cand)
    plan.deleted = sorted(set(known) - present)
    return plan


def index_repository(
    layout: RepoLayout,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    on_warning: WarningSink | None = None,
    text_index: bool = True,
) -> IndexReport:
    """Bring index.db up to date with the work tree and return what changed.

    Takes the writer lock (waiting up to ``settings.index.lock_timeout``), so two
    indexers never interleave; readers keep reading the previous snapshot until
    the single commit at the end.
    """
    started = time.perf_counter()
    warnings: list[StoreWarning] = []

    def warn(w: StoreWarning) -> None:
        warnings.append(w)
        if on_warning is not None:
            on_warning(w)

    with writer_lock(layout, settings.index.lock_timeout):
        if rebuild:
            for suffix in ("", "-wal", "-shm"):
                Path(str(layout.index_db) + suffix).unlink(missing_ok=True)
        conn = open_index(layout, on_warning=warn, holding_lock=True)
        rebuilt = rebuild or any(w.code == "INDEX_CORRUPT" for w in warnings)
        try:
            with _gc_paused():
                report = _run(conn, layout, settings, progress, rebuilt, started, warnings)
        finally:
            conn.close()
        if text_index:
            # Still under the writer lock: two text refreshes must not interleave either.
            from engine.index.pipeline import refresh_text_index

            text = refresh_text_index(layout, settings, report, progress=progress)
            report = IndexReport(
                **{**report.__dict__, "text_index": text, "seconds": time.perf_counter() - started}
            )
    return report


def _store_terms_and_index(writer: _Writer, conn: sqlite3.Connection) -> None:
    """The bulk load's work that needs no resolved call: the search terms, then every
    secondary index except those on calls."""
    writer.flush_terms()
    create_secondary_indexes(conn, skip_tables=LATE_TABLES)


def _run(
    conn: sqlite3.Connection,
    layout: RepoLayout,
    settings: Settings,
    progress: ProgressFn | None,
    rebuilt: bool,
    started: float,
    warnings: list[StoreWarning],
) -> IndexReport:
    root = layout.root
    found = discover(root, settings.index, deny=settings.edits.deny)
    plan = _plan(conn, root, found.candidates)
    known_paths = {r[0] for r in conn.execute("SELECT path FROM files")}
    bulk = not known_paths  # an empty index: load without secondary indexes, resolve from memory
    old_sha: dict[str, str] = {}
    for part in _chunks(plan.deleted):
        marks = ",".join("?" * len(part))
        old_sha.update(conn.execute(f"SELECT path, sha256 FROM files WHERE path IN ({marks})", list(part)))
    reparse = [c.path for c in plan.to_parse if c.path in known_paths]
    names_before = _name_ids(conn, reparse + plan.deleted)
    workers = settings.index.workers or os.cpu_count() or 1
    now = time.time()
    if bulk:
        # A cold build is derived data written in one transaction: skip the fsyncs (a crash
        # leaves an index that the next run detects and rebuilds) and give the index builds
        # enough page cache not to spill. Both are restored after the commit.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(f"PRAGMA cache_size=-{BULK_CACHE_KB}")
    conn.execute("BEGIN")
    if bulk:
        _remove_shards(layout.cache_dir)  # a killed run's leftovers
        drop_secondary_indexes(conn)
        conn.execute(f"PRAGMA threads = {min(4, workers)}")  # parallel sorter for the index builds
    for cand, _digest in plan.touched_only:
        conn.execute(
            "UPDATE files SET size=?, mtime_ns=? WHERE path=?", (cand.size, cand.mtime_ns, cand.path)
        )
    _delete_file_rows(conn, plan.deleted)
    _delete_file_rows(conn, reparse)
    conn.execute("DELETE FROM skipped_files")
    by_path = {c.path: c for c in found.candidates}
    conn.executemany(
        "INSERT OR REPLACE INTO skipped_files VALUES (?,?,?,?)",
        [(s.path, 0, 0, s.reason) for s in found.skipped]
        + [(s.path, by_path[s.path].size, by_path[s.path].mtime_ns, s.reason) for s in plan.still_skipped],
    )
    writer = _Writer(conn, bulk=bulk)
    content_skipped: list[Skipped] = []
    parsed_ok: list[str] = []
    new_sha: dict[str, str] = {}
    # Largest files first so one big file does not finish last on a lone worker.
    items = [(c.path, c.language or "") for c in sorted(plan.to_parse, key=lambda c: -c.size)]
    for res in _parse_all(root, items, workers, progress):
        if res.rows is None:
            reason = res.problem or "unreadable"
            content_skipped.append(Skipped(res.path, reason))
            conn.execute(
                "INSERT OR REPLACE INTO skipped_files VALUES (?,?,?,?)",
                (res.path, res.size, res.mtime_ns, reason),
            )
            continue
        writer.add(res.rows, now)
        parsed_ok.append(res.path)
        new_sha[res.path] = res.sha256
    writer.flush()
    gone = [s.path for s in content_skipped if s.path in known_paths]
    if gone:
        conn.executemany("DELETE FROM files WHERE path=?", [(p,) for p in gone])
    deleted_paths = sorted(set(plan.deleted) | set(gone))
    changed_names = set() if bulk else {n for n, _ in names_before ^ _name_ids(conn, parsed_ok)}
    added_paths = [p for p in parsed_ok if p not in known_paths]
    modified = [p for p in parsed_ok if p in known_paths]
    deleted_shas = {old_sha.get(p) for p in plan.deleted}
    renamed = [p for p in added_paths if new_sha.get(p) in deleted_shas]
    if parsed_ok or deleted_paths or bulk:
        if progress:
            progress("resolving calls", 0, max(1, len(parsed_ok)))
        _resolve_graphs(
            conn,
            set(parsed_ok),
            changed_names,
            full=bulk or len(parsed_ok) > len(known_paths) // 2,
            structure_changed=bool(added_paths or deleted_paths),
            progress=progress,
            preloaded=writer if bulk else None,
            workers=workers,
            # The tables already loaded get their indexes while forked workers resolve calls.
            while_waiting=(lambda: _store_terms_and_index(writer, conn)) if bulk else None,
            shard_dir=layout.cache_dir,
        )
    writer.flush_terms()  # no-op unless resolution was skipped
    if bulk:
        create_secondary_indexes(conn)
    conn.execute(
        "INSERT OR REPLACE INTO meta VALUES ('last_indexed', ?)",
        (json.dumps({"at": now, "git": found.used_git}),),
    )
    conn.commit()
    _detach_shards(conn)
    if bulk:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
    files = int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
    symbols = int(conn.execute("SELECT count(*) FROM symbols").fetchone()[0])
    edges = int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])  # every call is resolved now
    skipped = found.skipped + plan.still_skipped + content_skipped
    return IndexReport(
        files=files,
        symbols=symbols,
        edges=edges,
        changed=len(modified),
        added=len(added_paths) - len(renamed),
        deleted=len(deleted_paths) - len(renamed),
        renamed=len(renamed),
        skipped=len(skipped),
        seconds=time.perf_counter() - started,
        changed_paths=tuple(sorted(parsed_ok)),
        deleted_paths=tuple(deleted_paths),
        skipped_files=tuple(sorted(skipped, key=lambda s: s.path)),
        warnings=tuple(warnings),
        rebuild=rebuilt,
    )
