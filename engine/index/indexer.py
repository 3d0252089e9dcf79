"""The incremental indexer: discover, parse what changed in parallel, store, resolve graphs.

Owns ``index_repository`` (it holds ``engine.store.lock.writer_lock`` while it writes). In a git work tree, what may have
changed since the last run comes from `git status` against the recorded state (see
``changes.py``), so an unchanged tree costs one git call, not a stat of every file;
elsewhere every file is stat'ed. Unchanged files are recognised by mtime+size, then
SHA-256; only changed, added, renamed and deleted files are touched, and only the call
edges they can affect are re-resolved. A cold build streams: workers write their files'
call sites into shard databases of their own and resolution reads them back in slices,
so no process holds every row of the tree. It never blocks readers (WAL).
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import json
import marshal
import os
import sqlite3
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from engine.config import Settings
from engine.errors import EngineWarning, WarningSink
from engine.index.workers import pool_context, worker_pool
from engine.lifetime import may_fork
from engine.policy.redaction import redact_many
from engine.repo.layout import RepoLayout, check_indexable
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
from engine.store import changes
from engine.store.db import (
    PAGE_CACHE_KB,
    open_index,
    relative_module,
)
from engine.store.discovery import Candidate, Discovery, Skipped, content_problem, discover, discover_paths
from engine.store.lock import writer_lock
from engine.store.rows import identifier_parts
from engine.store.schema import create_secondary_indexes, drop_secondary_indexes

if TYPE_CHECKING:
    from engine.index.fts import ChunkRecord

# (phase, done, total): the progress shape shared with the text index. Phases are the names of
# contract 3 ("discovering", "parsing", "resolving calls", "text index"), counted in files, and a
# cold build's "writing indexes", counted in steps.
ProgressFn = Callable[[str, int, int], None]
PHASE_DISCOVER = "discovering"
PHASE_PARSE = "parsing"
PHASE_RESOLVE = "resolving calls"
# A cold build's last part, counted in steps (rows, search terms, indexes, text merge, one per slice
# of resolved calls copied in, commit, overview): on boost it takes a minute, which the bars of the
# other phases showed as "resolving calls 0/9625", then as nothing at all.
PHASE_WRITE = "writing indexes"
WRITE_STEPS = 8

# Up to this many files are parsed in this process: a pool costs more than it saves.
INLINE_PARSE_MAX = 24
# Files per worker task: big enough to amortise pickling, small enough to balance load.
BATCH_MIN, BATCH_MAX = 8, 48
# Prose files per chunking task in a cold build (prose is chunked by the parse workers too).
TEXT_BATCH_FILES = 64
# Chunk records the writer holds before writing them (a few MB of text).
TEXT_FLUSH_CHUNKS = 5000
# Tasks queued per worker, so results stream back while the parent writes them: enough that a
# worker still has work while the parent spends a few hundred ms writing a batch of rows.
TASKS_IN_FLIGHT_PER_WORKER = 6
# When more files than this need edges re-resolved, load every definition at once
# (one scan) instead of one indexed query per called name.
PRELOAD_DEFINITIONS_ABOVE = 150
# SQLite's default limit on host parameters is 999 in old builds; stay under it.
SQL_CHUNK = 500
# Page cache (KiB) during a cold build: sorting the secondary indexes in memory instead of
# spilling them to the WAL is most of the saving (Django's index is ~40 MB).
BULK_CACHE_KB = 64_000
# The table still being written while calls resolve: its indexes are built last.
LATE_TABLES = frozenset({"calls"})
# Meta keys this module writes (the text index records which worktree state it matches).
META_WORKTREE = "worktree"
META_COUNTS = "counts"
META_GENERATION = "generation"
META_DISCOVERY = "discovery"


@dataclass(frozen=True)
class IndexReport:
    """What one indexing run did. ``changed`` counts modified files only.

    ``scope`` is the set of paths this run examined (None: the whole tree), and
    ``state_before``/``state_after`` name the recorded work-tree states around it, so the
    text index can tell whether it may look at the same paths only.
    """

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
    warnings: tuple[EngineWarning, ...] = ()
    rebuild: bool = False
    text_index: object | None = None
    scope: tuple[str, ...] | None = None
    state_before: str | None = None
    state_after: str | None = None
    cold: bool = False  # built from an empty index
    text_prefilled: bool = False  # the code files' text-index rows were written by this run
    chunks_prefilled: int = 0
    # The prose files this run chunked too (a cold build): the text refresh has nothing left to list.
    prose_prefilled: tuple[str, ...] | None = None
    text_merged: bool = False  # and merged the text index's segments (the refresh need not)
    # Processes that resolved the call sites: the workers of a cold build forked for it, else 1.
    resolve_processes: int = 1

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
            "scope": "tree" if self.scope is None else len(self.scope),
        }


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
class TextResult:
    """A prose file (Markdown, YAML, reST...) cut into text-index chunks by a cold build's workers.

    It has no symbols and no row in ``files``; ``records`` is None when it could not be read.
    """

    path: str
    sha256: str | None
    size: int
    mtime_ns: int
    language: str
    records: list[ChunkRecord] | None


@dataclass(frozen=True)
class FileRows:
    """One file's analysis flattened to database rows in the worker (cheap to pickle).

    ``symbols`` rows lack the leading ``sid`` (the writer assigns it) and end with
    the symbol's search terms; ``calls`` rows carry the caller's parent for resolution
    (empty when the worker wrote them into its shard instead).
    """

    file: tuple[object, ...]
    symbols: list[tuple[object, ...]]
    calls: list[tuple[object, ...]]
    imports: list[tuple[object, ...]]
    # The same imports as ImportRef fields (names as a tuple), so the writer need not re-parse JSON.
    refs: list[tuple[object, ...]] = field(default_factory=list)
    # The file's text-index chunk records, when the worker was asked to chunk it (a cold build).
    chunks: list[tuple[object, ...]] = field(default_factory=list)


# One item to parse: (path, language, files.id).
ParseItem = tuple[str, str, int]
# One prose file to chunk: (path, language or "", sha256 or None, size, mtime_ns), as the text index lists it.
TextItem = tuple[str, str, str | None, int, int]


def _rows(path: str, file_id: int, fa: FileAnalysis, size: int, mtime_ns: int, sha: str) -> FileRows:
    module = relative_module(path)
    symbols: list[tuple[object, ...]] = []
    calls: list[tuple[object, ...]] = []
    # index.db never stores a secret a signature or doc holds: both redacted, all of a file's at once.
    count = len(fa.symbols)
    texts = redact_many([s.signature for s in fa.symbols] + [s.doc for s in fa.symbols])
    # Booleans go in as they are: SQLite stores True/False as the integers 1/0.
    for i, s in enumerate(fa.symbols):
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
                texts[i],
                texts[count + i],
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
            calls += [(file_id, sid, parent, *c) for c in s.calls]
    calls += [(file_id, None, None, *c) for c in fa.module_calls]
    imports: list[tuple[object, ...]] = [
        (file_id, i.module, _json_list(i.names), i.alias, i.line) for i in fa.imports
    ]
    refs: list[tuple[object, ...]] = [(i.module, i.names, i.alias, i.line) for i in fa.imports]
    file_row = (path, fa.language, module, size, mtime_ns, sha, fa.line_count, fa.syntax_errors, file_id)
    return FileRows(file_row, symbols, calls, imports, refs)


def _chunk_records(path: str, data: bytes, fa: FileAnalysis) -> list[tuple[object, ...]]:
    """The text index's chunk records of a file just analysed (the text layer's own chunker)."""
    from engine.index.chunking import chunk_file
    from engine.index.fts import chunk_record
    from engine.repo.text import decode_source

    text = decode_source(data).text
    return [chunk_record(c) for c in chunk_file(path, text, fa.symbols, fa.language)]


def _parse_one(root: str, path: str, language: str, file_id: int = 0, chunk: bool = False) -> ParseResult:
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
    rows = _rows(path, file_id, analysis, st.st_size, st.st_mtime_ns, sha)
    if chunk:
        rows.chunks.extend(_chunk_records(path, data, analysis))
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


def parse_batch(root: str, items: Sequence[ParseItem], chunk: bool = False) -> list[ParseResult]:
    """Read, hash and analyse each ``(path, language, file_id)`` (and cut it into chunks if asked)."""
    with _gc_paused():
        return [_parse_one(root, path, language, file_id, chunk) for path, language, file_id in items]


# --- call shards: a cold build's call sites wait here, outside the parent, until resolved ------

# Shard files are named so a crashed run's leftovers are found (and removed by the next cold build):
# ``.calls`` files hold parsed call sites, ``.db`` files the resolved ones.
SHARD_GLOB = "calls-shard-*"
# A ``.calls`` shard is a sequence of records, one per parsed batch: this header (payload bytes,
# call rows, files with calls), then the batch's call rows ``(file_id, caller_id, caller_parent,
# name, receiver, line, awaited, in_try)`` marshalled. The rows are written once and read back
# once, in order: a third of the CPU that SQLite rows cost on both sides (0.5 s of Django's build).
_RECORD_HEAD = struct.Struct("<QII")
# This process's open shard: (path, file). Each process writes only its own.
_SHARD: tuple[str, BinaryIO] | None = None


def _shard_path(shard_dir: str, tag: str, label: str, suffix: str = ".db") -> str:
    return os.path.join(shard_dir, SHARD_GLOB.replace("*", f"{tag}-{label}{suffix}"))


def _open_shard(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=OFF")
    conn.execute("PRAGMA synchronous=OFF")
    return conn


def _pending_shard(shard_dir: str, tag: str) -> tuple[str, BinaryIO]:
    """This process's shard for unresolved call sites, opened on first use."""
    global _SHARD
    path = _shard_path(shard_dir, tag, f"p{os.getpid()}", ".calls")
    if _SHARD is None or _SHARD[0] != path:
        _close_pending_shard()
        _SHARD = (path, open(path, "ab"))  # noqa: SIM115 - kept open across batches, closed above
    return _SHARD


def _close_pending_shard() -> None:
    global _SHARD
    if _SHARD is not None:
        _SHARD[1].close()
        _SHARD = None


def _spill_calls(results: list[ParseResult], shard_dir: str, tag: str) -> str:
    """Move the call rows of ``results`` into this process's shard; returns the shard's path."""
    path, out = _pending_shard(shard_dir, tag)
    rows: list[object] = []
    files = 0
    for r in results:
        if r.rows is not None and r.rows.calls:
            rows.extend(r.rows.calls)
            files += 1
            r.rows.calls.clear()
    if rows:
        payload = marshal.dumps(rows)
        out.write(_RECORD_HEAD.pack(len(payload), len(rows), files) + payload)
        out.flush()  # the parent reads the shard while this worker lives on in the pool
    return path


def _shard_records(shard: str) -> list[tuple[int, int, int, int]]:
    """Each record of a ``.calls`` shard: (start offset, end offset, call rows, files)."""
    out: list[tuple[int, int, int, int]] = []
    size = os.path.getsize(shard)
    with open(shard, "rb") as f:
        offset = 0
        while offset < size:
            head = f.read(_RECORD_HEAD.size)
            if len(head) < _RECORD_HEAD.size:
                raise RuntimeError(f"call shard {shard} ends inside a record header")
            length, rows, files = _RECORD_HEAD.unpack(head)
            end = offset + _RECORD_HEAD.size + length
            if end > size:
                raise RuntimeError(f"call shard {shard} ends inside a record")
            out.append((offset, end, rows, files))
            offset = end
            f.seek(offset)
    return out


def parse_batch_packed(
    root: str, items: Sequence[ParseItem], shard: tuple[str, str] | None = None, chunk: bool = False
) -> bytes:
    """Worker entry point: ``parse_batch`` flattened and marshalled.

    With ``shard`` (directory, run tag) the call sites go into this worker's shard database
    instead of back to the parent. The results are plain tuples, lists, strings and numbers;
    ``marshal`` serialises those about four times faster than pickle.
    """
    results = parse_batch(root, items, chunk)
    shard_path = _spill_calls(results, *shard) if shard is not None else None
    packed = [(r.path, r.size, r.mtime_ns, r.sha256, _pack_rows(r.rows), r.problem) for r in results]
    return marshal.dumps((shard_path, packed))


def _pack_rows(rows: FileRows | None) -> tuple[object, ...] | None:
    if rows is None:
        return None
    return (rows.file, rows.symbols, rows.calls, rows.imports, rows.refs, rows.chunks)


def _unpack_batch(data: bytes) -> tuple[str | None, list[ParseResult]]:
    shard_path, packed = marshal.loads(data)
    out: list[ParseResult] = []
    for path, size, mtime_ns, sha, rows, problem in packed:
        out.append(
            ParseResult(path, size, mtime_ns, sha, FileRows(*rows) if rows is not None else None, problem)
        )
    return shard_path, out


def _parse_all(
    root: Path,
    items: list[ParseItem],
    workers: int,
    progress: ProgressFn | None,
    shard: tuple[str, str] | None,
    shards: set[str],
    chunk: bool = False,
    text_items: Callable[[], Sequence[TextItem]] | None = None,
    db_path: Path | None = None,
) -> Iterator[ParseResult | TextResult]:
    """Parse ``items``, yielding results as they come; shard paths written to land in ``shards``.

    With ``text_items`` (a cold build), the prose files it lists are then chunked by the same
    workers: the list is made while the workers parse, and the parent writes their chunks as they
    come, so the text index needs no second pass over the tree.
    """
    from engine.index.pipeline import PHASE_TEXT, chunk_batch, chunk_batch_packed

    total = len(items)
    done = 0
    text_done = 0
    if progress:
        progress(PHASE_PARSE, 0, total)
    if total <= INLINE_PARSE_MAX or workers <= 1:
        for start in range(0, total, BATCH_MAX):
            parsed = parse_batch(str(root), items[start : start + BATCH_MAX], chunk)
            if shard is not None:
                shards.add(_spill_calls(parsed, *shard))
            for result in parsed:
                done += 1
                yield result
            if progress:
                progress(PHASE_PARSE, done, total)
        _close_pending_shard()
        prose = list(text_items()) if text_items is not None else []
        for start in range(0, len(prose), TEXT_BATCH_FILES):
            for chunked in chunk_batch(
                str(root), str(db_path or ""), prose[start : start + TEXT_BATCH_FILES]
            ):
                text_done += 1
                yield TextResult(*chunked)
            if progress:
                progress(PHASE_TEXT, text_done, len(prose))
        return
    context = pool_context()
    if context.get_start_method() == "fork":
        # Load grammars and compile queries once here; forked workers inherit them.
        from engine.semantic.extract import analyze_source

        for language in sorted({lang for _p, lang, _i in items}):
            analyze_source(f"warm-up.{language}", b"", language)
    size = max(BATCH_MIN, min(BATCH_MAX, total // (workers * 8) or BATCH_MIN))
    batches: list[tuple[bool, Sequence[object]]] = [
        (False, items[i : i + size]) for i in range(0, total, size)
    ]
    text_total = 0
    with worker_pool(workers, context) as pool:

        def submit(is_text: bool, batch: Sequence[object]) -> Future[bytes]:
            if is_text:
                return pool.submit(chunk_batch_packed, str(root), str(db_path or ""), batch)  # type: ignore[arg-type]
            return pool.submit(parse_batch_packed, str(root), batch, shard, chunk)  # type: ignore[arg-type]

        # Results are yielded in the order their batches were handed out, not the order the
        # workers finish them: the parent numbers symbols and text chunks as it writes them, and
        # search breaks ties between equal scores by those numbers, so one tree must give one
        # numbering whatever the timing (or the number of workers).
        pending: dict[Future[bytes], tuple[int, bool, int]] = {}  # -> (hand-out number, is text, files)
        ready: dict[int, tuple[bool, bytes]] = {}  # finished out of order, waiting for an earlier batch
        queue: Iterator[tuple[bool, Sequence[object]]] = iter(batches)
        limit = workers * TASKS_IN_FLIGHT_PER_WORKER
        sequence = itertools.count()

        def hand_out(nxt: tuple[bool, Sequence[object]]) -> None:
            pending[submit(*nxt)] = (next(sequence), nxt[0], len(nxt[1]))

        # Parsing progress counts the files of the batches the workers have finished, in whatever
        # order they finish: counted as they are written, a slow first batch held it at 0 for
        # seconds. (Every parse batch is written before any text batch, so the text phase, counted
        # as written, never interleaves with this one.)
        files_parsed = 0

        for first in queue:
            hand_out(first)
            if len(pending) >= limit:
                break
        if text_items is not None:
            prose = list(text_items())  # listed here while the workers parse the first batches
            text_total = len(prose)
            more = ((True, prose[i : i + TEXT_BATCH_FILES]) for i in range(0, text_total, TEXT_BATCH_FILES))
            queue = itertools.chain(queue, more)
            while len(pending) < limit:
                nxt = next(queue, None)
                if nxt is None:
                    break
                hand_out(nxt)
        head = 0  # the next batch to yield
        while pending or ready:
            if pending:
                finished, _rest = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    seq, is_text, files = pending.pop(fut)
                    ready[seq] = (is_text, fut.result())
                    if not is_text:
                        files_parsed += files
                        if progress:
                            progress(PHASE_PARSE, files_parsed, total)
            # Hand out the next batches before writing these results: the workers keep parsing
            # while this process writes (the consumer of this generator does that between yields).
            # Results held back behind a slow batch count against the limit, which bounds memory.
            while len(pending) + len(ready) < limit * 2 and len(pending) < limit:
                nxt = next(queue, None)
                if nxt is None:
                    break
                hand_out(nxt)
            while head in ready:
                is_text, data = ready.pop(head)
                head += 1
                if is_text:
                    for chunked in marshal.loads(data):
                        text_done += 1
                        yield TextResult(*chunked)
                    if progress:
                        progress(PHASE_TEXT, text_done, text_total)
                    continue
                shard_path, results = _unpack_batch(data)
                if shard_path is not None:
                    shards.add(shard_path)
                yield from results


# A file holding more than this share of the bytes to parse is parsed first, so that it does not finish
# last on a lone worker (on Django the three files over 300 KB). Not a share of a worker's bytes: the
# order must not depend on the number of workers (symbols are numbered in it).
PARSE_FIRST_SHARE = 0.01


def parse_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    """The order files are handed to the parse workers: the few that alone hold 1% of the bytes first
    (largest first), then the rest in an order fixed by their paths but
    unrelated to their size.

    Progress counts files. Handed out largest first, boost's first 1% of files were a quarter of its
    bytes, and the ETA said 11 minutes for a two-minute parse. Any stretch of the shuffled rest
    holds large and small files alike, so the files-per-second rate, and the ETA drawn from it,
    holds steady. The order depends only on the paths and sizes, so one tree always numbers its
    symbols the same way.
    """
    big = sum(c.size for c in candidates) * PARSE_FIRST_SHARE
    first = sorted((c for c in candidates if c.size > big), key=lambda c: (-c.size, c.path))
    rest = sorted(
        (c for c in candidates if c.size <= big),
        key=lambda c: (zlib.crc32(c.path.encode("utf-8", "surrogateescape")), c.path),
    )
    return first + rest


# --- writing -----------------------------------------------------------------------------------


def _chunks(items: Sequence[object]) -> Iterator[Sequence[object]]:
    for i in range(0, len(items), SQL_CHUNK):
        yield items[i : i + SQL_CHUNK]


def _delete_file_rows(
    conn: sqlite3.Connection, files: dict[str, int], *, keep_file_row: bool = False
) -> None:
    """Remove what the files ``path -> id`` contributed (their own rows; links into them stay)."""
    paths = list(files)
    for part in _chunks(paths):
        marks = ",".join("?" * len(part))
        conn.execute(
            f"DELETE FROM symbol_terms WHERE sid IN (SELECT sid FROM symbols WHERE file IN ({marks}))", part
        )
        conn.execute(f"DELETE FROM symbols WHERE file IN ({marks})", part)
        if not keep_file_row:
            conn.execute(f"DELETE FROM files WHERE path IN ({marks})", part)
    ids = list(files.values())
    for part in _chunks(ids):
        marks = ",".join("?" * len(part))
        conn.execute(f"DELETE FROM calls WHERE file_id IN ({marks})", part)
        conn.execute(f"DELETE FROM imports WHERE file_id IN ({marks})", part)
        conn.execute(f"DELETE FROM file_links WHERE src IN ({marks})", part)


_EMPTY_JSON_LIST = "[]"
# Rows buffered before one executemany; bounds memory while keeping inserts batched.
FLUSH_ROWS = 20_000
# The same during a cold build, smaller so the last flush (on the critical path, after the
# final file is parsed) is short; the earlier ones overlap with the workers' parsing.
BULK_FLUSH_ROWS = 2_000
_FILES_INSERT = "INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?,?,?,?,?)"
# Into an empty table (a cold build). Not OR REPLACE: a statement that may replace rows opens a
# statement journal, and with it a savepoint in which FTS5 flushes its pending postings to disk
# as a new segment: one per flush instead of one per 32 MB of postings (more to merge later).
_FILES_BULK_INSERT = "INSERT INTO files VALUES (?,?,?,?,?,?,?,?,?,?)"
_CALLS_INSERT = "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?)"


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

    In bulk mode (an empty index) it also keeps what call resolution needs from each file
    (its callable definitions and imports; the call sites themselves wait in shards).
    """

    def __init__(self, conn: sqlite3.Connection, *, bulk: bool, text: bool = False) -> None:
        self.conn = conn
        self.bulk = bulk
        self.text = text  # the workers chunk each file for the text index (a cold build)
        self.next_sid = int(conn.execute("SELECT COALESCE(MAX(sid), 0) FROM symbols").fetchone()[0]) + 1
        self.files: list[tuple[object, ...]] = []
        self.symbols: list[tuple[object, ...]] = []
        self.terms: list[tuple[object, int]] = []
        self.calls: list[tuple[object, ...]] = []
        self.imports: list[tuple[object, ...]] = []
        self.definitions: list[Definition] = []
        self.imports_by_file: dict[str, list[ImportRef]] = {}
        # A cold build's text index, filled from the chunks the workers made: records and file rows.
        self.chunk_records: list[tuple[object, ...]] = []
        self.text_files: list[tuple[object, ...]] = []
        self.chunks_written = 0
        self.text_merged = False  # the text index's segments were merged during this load
        self.pending_terms = bulk
        # Bulk: every file written, as (path, language, id), so call resolution can start before the
        # last rows are flushed (it needs the files, not the rows).
        self.graph_files: list[tuple[str, str, int]] = []
        if bulk:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS pending_terms (sid INTEGER, terms TEXT)")

    def add(self, rows: FileRows, now: float) -> None:
        f = rows.file
        self.files.append((*f[:8], now, f[8]))
        if self.bulk:
            self.graph_files.append((f[0], f[1], f[8]))  # type: ignore[arg-type]
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
            kinds = CALLABLE_KINDS
            self.definitions.extend(
                Definition(r[0], r[2], r[6], r[13], r[5], r[8])  # type: ignore[arg-type]
                for r in rows.symbols
                if r[5] in kinds
            )
            self.imports_by_file[str(f[0])] = [ImportRef(*r) for r in rows.refs]  # type: ignore[arg-type]
        # Unresolved here; _resolve_graphs sets callee_id, kind and package.
        self.calls.extend((*c, None, None, None) for c in rows.calls)
        if self.text:  # every chunked file is recorded, one without chunks too (an empty __init__.py)
            self.chunk_records.extend(rows.chunks)
            self.text_files.append((f[0], f[5], f[3], f[4], f[1]))  # path, sha256, size, mtime_ns, language
        if len(self.calls) + len(self.symbols) > (BULK_FLUSH_ROWS if self.bulk else FLUSH_ROWS):
            self.flush()

    def add_text(self, result: TextResult) -> None:
        """A prose file's chunks and its text-index file row (it has no symbols)."""
        assert result.records is not None and result.sha256 is not None
        self.chunk_records.extend(result.records)
        self.text_files.append((result.path, result.sha256, result.size, result.mtime_ns, result.language))
        if len(self.chunk_records) >= TEXT_FLUSH_CHUNKS:
            self.flush()

    def flush(self) -> None:
        c = self.conn
        c.executemany(_FILES_BULK_INSERT if self.bulk else _FILES_INSERT, self.files)
        c.executemany(f"INSERT INTO symbols VALUES ({','.join('?' * 24)})", self.symbols)
        if self.bulk:
            c.executemany("INSERT INTO temp.pending_terms VALUES (?,?)", self.terms)
            self.terms.clear()
        else:
            self.flush_terms()
        c.executemany(_CALLS_INSERT, self.calls)
        c.executemany("INSERT INTO imports VALUES (?,?,?,?,?)", self.imports)
        if self.chunk_records or self.text_files:
            from engine.index.fts import insert_records

            self.chunks_written += insert_records(c, self.chunk_records)  # type: ignore[arg-type]
            c.executemany("INSERT OR REPLACE INTO text_files VALUES (?,?,?,?,?)", self.text_files)
        for buf in (self.files, self.symbols, self.calls, self.imports, self.chunk_records, self.text_files):
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
        # In path order, whatever order the files were parsed or re-parsed in: resolution breaks
        # ties between equally good candidates by their order, and a call graph must not change
        # with the order worker results arrived in (or after an edit to an unrelated file).
        for found in self._memo.values():
            found.sort(key=_path_order)

    def __call__(self, name: str) -> list[Definition]:
        hit = self._memo.get(name)
        if hit is not None or self._complete:
            return hit or []
        found = [Definition(*r) for r in self._conn.execute(self._sql + " AND short_name = ?", (name,))]
        found.sort(key=_path_order)
        self._memo[name] = found
        return found


def _path_order(definition: Definition) -> str:
    return definition.file  # a stable sort: a file's definitions stay in source order


def _imports_by_file(
    conn: sqlite3.Connection, ids: Sequence[int] | None, path_of: dict[int, str]
) -> dict[str, list[ImportRef]]:
    out: dict[str, list[ImportRef]] = {}
    sql = "SELECT file_id, module, names, alias, line FROM imports"
    groups: Iterable[Sequence[object] | None] = [None] if ids is None else _chunks(ids)
    for part in groups:
        if part is None:
            rows = conn.execute(sql)
        else:
            rows = conn.execute(sql + f" WHERE file_id IN ({','.join('?' * len(part))})", list(part))
        for file_id, module, names, alias, line in rows:
            path = path_of.get(file_id)
            if path is not None:
                out.setdefault(path, []).append(ImportRef(module, tuple(json.loads(names)), alias, line))
    return out


@dataclass
class _Graph:
    """Every indexed file by path (language, id) and by id: what resolution looks files up by."""

    languages: dict[str, str]
    ids: dict[str, int]
    paths: dict[int, str]

    @classmethod
    def load(cls, conn: sqlite3.Connection) -> _Graph:
        return cls.of(conn.execute("SELECT path, language, id FROM files"))

    @classmethod
    def of(cls, files: Iterable[tuple[str, str, int]]) -> _Graph:
        """From ``(path, language, id)`` rows in id order (the order of ``files``'s rowids)."""
        languages: dict[str, str] = {}
        ids: dict[str, int] = {}
        for path, language, file_id in files:
            languages[path] = language
            ids[path] = file_id
        return cls(languages, ids, {i: p for p, i in ids.items()})


def _by_id(row: tuple[str, str, int]) -> int:
    return row[2]


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
    while_waiting: Callable[[Callable[[], bool]], None] | None = None,
    shard_dir: Path | None = None,
    shards: Sequence[str] = (),
    steps: _Steps | None = None,
) -> int:
    """Recompute file imports and call edges for every file whose edges could have changed;
    returns how many processes resolved the call sites.

    ``full`` recomputes everything; otherwise only the changed files, files whose
    import targets moved, and files calling a name whose definitions changed.
    """
    # A bulk load's files are known in memory: resolution starts before their last rows are written.
    graph = (
        _Graph.of(sorted(preloaded.graph_files, key=_by_id)) if preloaded is not None else _Graph.load(conn)
    )
    languages = graph.languages
    modules = ModuleIndex(languages)
    import_scope = None if (full or structure_changed) else sorted(changed & set(languages))
    if preloaded is not None:
        imports = preloaded.imports_by_file
    else:
        scope_ids = None if import_scope is None else [graph.ids[p] for p in import_scope]
        imports = _imports_by_file(conn, scope_ids, graph.paths)
    scope_files = list(languages) if import_scope is None else import_scope
    affected = set(languages) if full else set(changed)
    old_targets: dict[str, set[int]] = {}
    if full:
        conn.execute("DELETE FROM file_links")
    else:
        for part in _chunks([graph.ids[p] for p in scope_files]):
            marks = ",".join("?" * len(part))
            for src, dst in conn.execute(
                f"SELECT src, dst FROM file_links WHERE src IN ({marks})", list(part)
            ):
                old_targets.setdefault(graph.paths[src], set()).add(dst)
            conn.execute(f"DELETE FROM file_links WHERE src IN ({marks})", list(part))
    rows: list[tuple[int, int]] = []
    ids = graph.ids
    for src in scope_files:
        targets: set[int] = set()
        for imp in imports.get(src, ()):
            targets.update(ids[t] for t in modules.resolve(src, imp, languages[src]) if t in ids)
        targets.discard(ids[src])
        rows.extend((ids[src], dst) for dst in sorted(targets))
        if not full and targets != old_targets.get(src, set()):
            affected.add(src)
    conn.executemany("INSERT OR IGNORE INTO file_links VALUES (?,?)", rows)
    for name in changed_names:
        affected.update(
            graph.paths[r[0]]
            for r in conn.execute("SELECT DISTINCT file_id FROM calls WHERE name = ?", (name,))
        )
    affected &= set(languages)
    todo = sorted(affected)
    if preloaded is None:
        missing = [ids[p] for p in todo if p not in imports]
        if missing:
            imports.update(_imports_by_file(conn, missing, graph.paths))
    definitions = _Definitions(
        conn,
        preload=len(todo) > PRELOAD_DEFINITIONS_ABOVE,
        known=preloaded.definitions if preloaded is not None else None,
    )
    resolving = _FileResolver(CallResolver(definitions), modules, languages, imports, graph.paths)
    if preloaded is None:
        # Incremental: a re-exporting package may be outside this round's files.
        resolving.loader = lambda path: (
            _imports_by_file(conn, [ids[path]], graph.paths).get(path, []) if path in ids else []
        )
    resolving.resolver.module_context = resolving.context_for
    total = len(todo)
    if preloaded is not None:
        # Bulk: the call sites wait in shards; resolve them in slices (in parallel when it pays)
        # and insert each once, already resolved.
        return _resolve_bulk(conn, resolving, shards, workers, shard_dir, progress, while_waiting, steps)
    sql = "SELECT rowid, file_id, caller_id, caller_parent, name, receiver, line FROM calls"
    batch: list[tuple[object, ...]] = []
    done = 0
    for part in _chunks([ids[p] for p in todo]):
        marks = ",".join("?" * len(part))
        found = conn.execute(sql + f" WHERE file_id IN ({marks}) ORDER BY file_id", list(part)).fetchall()
        resolved = resolving.resolve_rows([row[1:] for row in found])
        batch.extend((*res, row[0]) for row, res in zip(found, resolved, strict=True))
        resolving.forget_contexts()
        done += len(part)
        if progress:
            progress(PHASE_RESOLVE, done, total)
    conn.executemany("UPDATE calls SET callee_id = ?, kind = ?, package = ? WHERE rowid = ?", batch)
    if progress and not todo:
        progress(PHASE_RESOLVE, 0, 0)
    return 1


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
        paths: dict[int, str],
    ) -> None:
        self.resolver = resolver
        self.modules = modules
        self.languages = languages
        self.imports = imports
        self.paths = paths
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
        """Resolve call rows ``(file_id, caller, parent, name, receiver, line, ...)`` in order."""
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
        file_id, _caller, parent, name, receiver = row[:5]
        path = self.paths[file_id]  # type: ignore[index]
        language = self.languages[path]
        ctx = self.contexts.get(path)
        if ctx is None:
            ctx = self.contexts[path] = file_context(path, language, self.imports.get(path, ()), self.modules)
        return self.resolver.resolve_fields(path, parent, name, receiver, language, ctx)  # type: ignore[arg-type]


# Below this many calls, resolving in one process beats forking workers.
PARALLEL_RESOLVE_MIN_CALLS = 40_000
# Slices per resolution worker: small enough to balance the two workers' loads, and the
# parent copies each finished slice while later ones still resolve.
RESOLVE_SLICES_PER_WORKER = 3
# Resolved call rows the one-process path inserts at a time.
RESOLVE_READ_ROWS = 20_000
# State a forked resolution worker inherits from its parent (never pickled).
_FORKED: _FileResolver | None = None
# Files the forked resolution workers have resolved so far (a shared counter), while they run.
_RESOLVED_FILES: Any = None
# How often the parent, waiting for a slice, reports how far the workers got.
RESOLVE_POLL_S = 0.25
# SQLite attaches at most 10 databases by default; resolved slices are attached until the commit.
MAX_SLICES = 8
SHARD_ALIAS = "calls_shard_"


@dataclass(frozen=True)
class _Slice:
    """The call records in bytes ``lo..hi`` of one shard, and where their resolved rows go."""

    shard: str
    lo: int
    hi: int
    files: int
    out: str


def _detach_shards(conn: sqlite3.Connection) -> None:
    for _seq, name, _file in conn.execute("PRAGMA database_list").fetchall():
        if name.startswith(SHARD_ALIAS):
            conn.execute(f"DETACH DATABASE {name}")


def _resolved_rows(resolving: _FileResolver, shard: str, lo: int, hi: int) -> Iterator[tuple[object, ...]]:
    """The resolved call rows of one slice (the shard's bytes ``lo..hi``), a record at a time."""
    with open(shard, "rb") as f:
        f.seek(lo)
        offset = lo
        while offset < hi:
            length, _rows, files = _RECORD_HEAD.unpack(f.read(_RECORD_HEAD.size))
            part = marshal.loads(f.read(length))
            offset += _RECORD_HEAD.size + length
            for row, res in zip(part, resolving.resolve_rows(part), strict=True):
                yield (*row, *res)
            resolving.forget_contexts()
            counter = _RESOLVED_FILES
            if counter is not None:  # a forked worker: the parent's bar counts what it finished
                with counter.get_lock():
                    counter.value += files


def _resolve_slice(job: _Slice) -> int:
    """Worker: resolve one slice and write it, resolved, into a database of its own.

    The per-row cost of resolving and binding the rows is paid here, on every core, instead
    of in the parent; the parent then copies each slice with one INSERT ... SELECT.
    """
    assert _FORKED is not None
    out = _open_shard(job.out)
    try:
        # Same column order as main.calls (the copy is positional); no types, no indexes.
        out.execute(f"CREATE TABLE calls ({', '.join(f'c{i}' for i in range(11))})")
        out.execute("BEGIN")
        cursor = out.executemany(_CALLS_INSERT, _resolved_rows(_FORKED, job.shard, job.lo, job.hi))
        count = cursor.rowcount
        out.execute("COMMIT")
    finally:
        out.close()
    return count


# A record of one shard: (shard, start offset, end offset, call rows, files).
_Record = tuple[str, int, int, int, int]


def _slices(records: Sequence[_Record], parts: int, out_dir: Path, tag: str) -> list[_Slice]:
    """Cut the shards' records into about ``parts`` runs with similar numbers of call rows."""
    step = max(1, sum(r[3] for r in records) // max(1, parts) + 1)
    out: list[_Slice] = []
    run: list[_Record] = []
    rows = 0
    for record in records:
        if run and (run[0][0] != record[0] or rows >= step):
            out.append(_run_slice(run, _shard_path(str(out_dir), tag, f"r{len(out)}")))
            run, rows = [], 0
        run.append(record)
        rows += record[3]
    if run:
        out.append(_run_slice(run, _shard_path(str(out_dir), tag, f"r{len(out)}")))
    return out


def _run_slice(run: Sequence[_Record], out: str) -> _Slice:
    """One shard's consecutive records as a slice whose resolved rows go to ``out``."""
    return _Slice(run[0][0], run[0][1], run[-1][2], sum(r[4] for r in run), out)


def _resolve_bulk(
    conn: sqlite3.Connection,
    resolving: _FileResolver,
    shards: Sequence[str],
    workers: int,
    shard_dir: Path | None,
    progress: ProgressFn | None,
    while_waiting: Callable[[Callable[[], bool]], None] | None = None,
    steps: _Steps | None = None,
) -> int:
    """Resolve every waiting call site and insert it, resolved, into ``calls``; returns the number
    of processes that resolved them.

    With several cores, forked workers share the definitions copy-on-write, each resolves
    slices into databases of its own, and the parent copies them in order; ``while_waiting``
    runs once the work is handed out (the parent builds indexes there instead of idling), with a
    function that says whether the workers are still at it (so it may do optional work too).
    """
    import multiprocessing

    global _FORKED
    tag = f"{os.getpid()}-{time.monotonic_ns()}"
    out_dir = shard_dir if shard_dir is not None else Path(shards[0]).parent if shards else Path(".")
    can_fork = "fork" in multiprocessing.get_all_start_methods() and may_fork()
    records = [(shard, *record) for shard in sorted(shards) for record in _shard_records(shard)]
    total_rows = sum(r[3] for r in records)
    parallel = workers > 1 and total_rows >= PARALLEL_RESOLVE_MIN_CALLS and can_fork
    jobs = _slices(
        records, min(MAX_SLICES, workers * RESOLVE_SLICES_PER_WORKER) if parallel else 1, out_dir, tag
    )
    total_files = sum(j.files for j in jobs)
    done_files = 0
    if progress:
        progress(PHASE_RESOLVE, 0, total_files)
    if not parallel:
        if while_waiting is not None:
            while_waiting(lambda: False)  # this process resolves: there is nothing to wait for
        for job in jobs:
            rows = _resolved_rows(resolving, job.shard, job.lo, job.hi)
            while True:
                part = list(itertools.islice(rows, RESOLVE_READ_ROWS))
                if not part:
                    break
                conn.executemany(_CALLS_INSERT, part)
            done_files += job.files
            if progress:
                progress(PHASE_RESOLVE, done_files, total_files)
        return 1
    _FORKED = resolving
    global _RESOLVED_FILES
    try:
        ctx = multiprocessing.get_context("fork")
        _RESOLVED_FILES = ctx.Value("q", 0)
        counter = _RESOLVED_FILES
        with worker_pool(workers, ctx) as pool:
            futures = [pool.submit(_resolve_slice, job) for job in jobs]
            if steps is not None:
                steps.add(len(jobs))  # each slice copied in is a step of writing
            resolved = [0]  # files of the slices the workers finished, as last reported

            def still_resolving() -> bool:
                """Whether the workers are still at it; says how far they got (the parent builds
                indexes meanwhile, and the bar stood at 0 for 40 s of boost's build)."""
                finished = [job.files for job, f in zip(jobs, futures, strict=True) if f.done()]
                # The workers count files as they resolve them (boost's slices are ~1,600 files).
                done = max(sum(finished), min(int(counter.value), total_files))
                if progress and done > resolved[0]:
                    resolved[0] = done
                    progress(PHASE_RESOLVE, resolved[0], total_files)
                return len(finished) < len(futures)

            if while_waiting is not None:
                while_waiting(still_resolving)
            for index, (job, future) in enumerate(zip(jobs, futures, strict=True)):
                while True:
                    try:
                        count = future.result(timeout=RESOLVE_POLL_S)
                        break
                    except TimeoutError:
                        still_resolving()
                still_resolving()
                # A database read inside the open transaction cannot be detached before the
                # commit: each slice gets its own name, and is detached by _detach_shards.
                conn.execute("ATTACH DATABASE ? AS ?", (job.out, f"{SHARD_ALIAS}{index}"))
                copied = conn.execute(
                    f"INSERT INTO main.calls SELECT * FROM {SHARD_ALIAS}{index}.calls"
                ).rowcount
                if copied != count:
                    raise RuntimeError(f"a resolution worker stored {count} calls, {copied} were copied")
                Path(job.out).unlink(missing_ok=True)  # the open handle keeps it readable until detached
                if steps is not None:
                    steps.step()
    finally:
        _FORKED = None
        _RESOLVED_FILES = None
        for job in jobs:
            Path(job.out).unlink(missing_ok=True)
    return workers


def _remove_shards(shard_dir: Path) -> None:
    for leftover in shard_dir.glob(SHARD_GLOB):
        leftover.unlink(missing_ok=True)


# --- the run -----------------------------------------------------------------------------------


@dataclass
class _Plan:
    to_parse: list[Candidate] = field(default_factory=list)
    touched_only: list[tuple[Candidate, str]] = field(default_factory=list)  # same content, new stat
    unchanged: int = 0
    deleted: list[str] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    still_skipped: list[Skipped] = field(default_factory=list)
    # Indexed files this plan looked at: path -> (size, mtime_ns, sha256, id).
    known: dict[str, tuple[int, int, str, int]] = field(default_factory=dict)


def _rows_for(conn: sqlite3.Connection, sql: str, scope: Sequence[str] | None) -> list[tuple[object, ...]]:
    """``sql`` (ending in a WHERE-less FROM) for every row, or for the paths in ``scope``."""
    if scope is None:
        return conn.execute(sql).fetchall()
    out: list[tuple[object, ...]] = []
    for part in _chunks(list(scope)):
        out.extend(conn.execute(sql + f" WHERE path IN ({','.join('?' * len(part))})", list(part)))
    return out


def _plan(conn: sqlite3.Connection, root: Path, found: list[Candidate], scope: Sequence[str] | None) -> _Plan:
    plan = _Plan()
    plan.known = {
        str(r[0]): (int(r[1]), int(r[2]), str(r[3]), int(r[4]))  # type: ignore[call-overload]
        for r in _rows_for(conn, "SELECT path, size, mtime_ns, sha256, id FROM files", scope)
    }
    known = plan.known
    known_skips = {
        r[0]: (r[1], r[2], r[3])
        for r in _rows_for(conn, "SELECT path, size, mtime_ns, reason FROM skipped_files", scope)
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
            plan.still_skipped.append(Skipped(cand.path, str(skip[2])))
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


class _Steps:
    """``PHASE_WRITE``'s progress: a cold build's last steps, counted as each one ends."""

    def __init__(self, progress: ProgressFn | None) -> None:
        self.progress = progress
        self.total = 0  # 0 until a cold build starts counting (``begin``)
        self.done = 0

    def begin(self, total: int) -> None:
        self.total = total  # said at the first step's end: the phase comes after parsing

    def add(self, more: int) -> None:
        if self.total:
            self.total += more

    def step(self, n: int = 1) -> None:
        if not self.total:
            return
        self.done += n
        if self.progress is not None:
            self.progress(PHASE_WRITE, min(self.done, self.total), self.total)


def index_repository(
    layout: RepoLayout,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    on_warning: WarningSink | None = None,
    text_index: bool = True,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """Bring index.db up to date with the work tree and return what changed.

    Takes the writer lock (waiting up to ``settings.index.lock_timeout``, or until ``cancel``
    is set), so two indexers never interleave; readers keep reading the previous snapshot
    until the single commit at the end.
    """
    check_indexable(layout.root)  # not `/` nor a home directory: before any walk or lock
    started = time.perf_counter()
    warnings: list[EngineWarning] = []

    def warn(w: EngineWarning) -> None:
        warnings.append(w)
        if on_warning is not None:
            on_warning(w)

    def waiting() -> None:
        warn(
            EngineWarning(
                "INDEX_WAITING",
                "another `semfora index` is writing this repository's index; waiting for it to finish "
                f"(at most {settings.index.lock_timeout:g} s)",
            )
        )

    steps = _Steps(progress)
    with writer_lock(layout, settings.index.lock_timeout, on_wait=waiting, cancel=cancel):
        if rebuild:
            for suffix in ("", "-wal", "-shm"):
                Path(str(layout.index_db) + suffix).unlink(missing_ok=True)
        conn = open_index(layout, on_warning=warn, holding_lock=True)
        rebuilt = rebuild or any(w.code in ("INDEX_CORRUPT", "INDEX_UPGRADED") for w in warnings)
        checkpoint: threading.Thread | None = None
        try:
            with _gc_paused():
                report = _run(conn, layout, settings, progress, rebuilt, started, warnings, text_index, steps)
            if report.cold:
                checkpoint = _checkpoint_beside(layout)  # opened before this connection closes
        finally:
            conn.close()
        if report.cold:
            # The overview is built while the new pages are copied into index.db (both need only
            # the committed index), and before the text refresh, which may fork workers. Its
            # connection is opened first: opening checks index.db's header against its size, and
            # while the checkpoint writes the file (and then removes the WAL, if its connection
            # were the last) the two disagree, so a cold `semfora index` failed now and then with
            # "index.db is damaged (truncated ...) while another process is writing it".
            reader: sqlite3.Connection | None = None
            try:
                reader = open_index(layout, readonly=True)
                if checkpoint is not None:
                    checkpoint.start()
                _store_overview(layout, reader)
                steps.step()
            finally:
                if checkpoint is not None:
                    if checkpoint.ident is None:  # the reader could not be opened
                        checkpoint.start()
                    checkpoint.join()
                if reader is not None:
                    reader.close()
        if text_index:
            # Still under the writer lock: two text refreshes must not interleave either.
            from engine.index.pipeline import refresh_text_index

            text = refresh_text_index(layout, settings, report, progress=progress, on_warning=warn)
            report = IndexReport(
                **{
                    **report.__dict__,
                    "text_index": text,
                    "warnings": tuple(warnings),
                    "seconds": time.perf_counter() - started,
                }
            )
        _compact_if_sparse(layout)
    return report


# SQLite's default: a commit that leaves more WAL pages than this copies them into the database.
WAL_AUTOCHECKPOINT_PAGES = 1000


def _checkpoint_beside(layout: RepoLayout) -> threading.Thread | None:
    """A thread, not yet started, that copies a cold build's committed pages from the WAL into
    index.db.

    The build commits without the checkpoint (tens of MB copied with one core idle); this thread's
    connection, opened before the builder's closes, does it while the overview is built (started
    once the overview's connection is open). Joined before the build returns. None when it cannot
    connect: the builder's connection, closing last, checkpoints instead.
    """
    try:
        conn = sqlite3.connect(str(layout.index_db), timeout=5, check_same_thread=False)
    except sqlite3.Error:
        return None  # the builder's connection checkpoints as it closes

    def run() -> None:
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            pass  # a later writer's commit copies what is left
        finally:
            conn.close()

    return threading.Thread(target=run, name="semfora-checkpoint", daemon=True)


def _store_overview(layout: RepoLayout, conn: sqlite3.Connection) -> None:
    """Build and store the overview of a freshly built index, so its first reader finds it."""
    from engine.store.overview import stored_overview

    stored_overview(layout, conn)


# A file with more than this share of free pages (dropped tables after an upgrade, merged FTS
# segments, many deleted rows) is rewritten, so the index on disk stays the size of its data.
VACUUM_FREE_SHARE = 0.25
# Below this many free pages a VACUUM would not give back enough to be worth its time.
VACUUM_MIN_FREE_PAGES = 2048


def _compact_if_sparse(layout: RepoLayout) -> None:
    """VACUUM index.db when much of it is free pages (called under the writer lock)."""
    try:
        conn = sqlite3.connect(str(layout.index_db), timeout=5)
    except sqlite3.Error:
        return
    try:
        pages = int(conn.execute("PRAGMA page_count").fetchone()[0])
        free = int(conn.execute("PRAGMA freelist_count").fetchone()[0])
        if free >= VACUUM_MIN_FREE_PAGES and free > VACUUM_FREE_SHARE * pages:
            conn.execute("VACUUM")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.OperationalError:
        return  # a reader's snapshot keeps pages busy: compact on a later run
    finally:
        conn.close()


def _store_terms_and_index(
    writer: _Writer,
    conn: sqlite3.Connection,
    still_resolving: Callable[[], bool],
    steps: _Steps | None = None,
) -> None:
    """The bulk load's work that needs no resolved call: the last rows parsed, the search terms,
    then every secondary index except those on calls (the text chunks' too); then, if the workers
    are still resolving calls, the text index's segment merge, which would otherwise run after the
    commit with the other core idle (a second of ansible's build)."""
    step = steps.step if steps is not None else (lambda n=1: None)
    writer.flush()
    step()
    still_resolving()  # it reports how far the workers got
    writer.flush_terms()
    step()
    still_resolving()
    create_secondary_indexes(conn, skip_tables=LATE_TABLES)
    step()
    still_resolving()
    if writer.text:
        from engine.index.fts import create_chunk_indexes

        create_chunk_indexes(conn)
    step()
    if writer.text and still_resolving():
        from engine.index.fts import merge_segments

        merge_segments(conn)
        writer.text_merged = True
    step()


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    files = int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
    symbols = int(conn.execute("SELECT count(*) FROM symbols").fetchone()[0])
    edges = int(conn.execute("SELECT count(*) FROM calls").fetchone()[0])  # every call site, resolved or not
    return files, symbols, edges


def _stored_counts(conn: sqlite3.Connection) -> tuple[int, int, int]:
    """The counts recorded by the last run that changed something (counted again if missing)."""
    raw = _meta(conn, META_COUNTS)
    if raw:
        try:
            data = json.loads(raw)
            return int(data["files"]), int(data["symbols"]), int(data["edges"])
        except (ValueError, KeyError, TypeError):
            pass
    return _counts(conn)


def _unchanged_report(
    conn: sqlite3.Connection, started: float, warnings: list[EngineWarning], state: changes.WorktreeState
) -> IndexReport:
    files, symbols, edges = _stored_counts(conn)
    skipped = [
        Skipped(r[0], r[1]) for r in conn.execute("SELECT path, reason FROM skipped_files ORDER BY path")
    ]
    return IndexReport(
        files=files,
        symbols=symbols,
        edges=edges,
        changed=0,
        added=0,
        deleted=0,
        renamed=0,
        skipped=len(skipped),
        seconds=time.perf_counter() - started,
        skipped_files=tuple(skipped),
        warnings=tuple(warnings),
        scope=(),
        state_before=state.token,
        state_after=state.token,
    )


def _discover(
    conn: sqlite3.Connection,
    layout: RepoLayout,
    settings: Settings,
    rebuilt: bool,
    progress: ProgressFn | None,
) -> tuple[Discovery, tuple[str, ...] | None, changes.WorktreeState | None, changes.WorktreeState | None]:
    """What to look at: (discovery, scope or None for the whole tree, state before, state now)."""
    root = layout.root
    if progress:
        progress(PHASE_DISCOVER, 0, 0)
    # the deny-list decides what is indexed: a change to it is a change to every file
    key = changes.discovery_key(settings)
    before = None if rebuilt else changes.WorktreeState.from_json(_meta(conn, META_WORKTREE))
    indexed = conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is not None
    if not indexed:
        # A first build needs the work-tree state only to record it: `git status` (most of a
        # second on a large tree, spent in git) runs beside discovery instead of before it. The
        # thread has ended before any worker is forked.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="semfora-status") as side:
            state = side.submit(changes.capture, root, key)
            found = discover(root, settings.index, deny=settings.edits.deny)
            now = state.result()
        if progress:
            progress(PHASE_DISCOVER, len(found.candidates), len(found.candidates))
        return found, None, before, now
    now = changes.capture(root, key)
    paths = changes.changed_since(root, before, now)
    if paths is None:
        found = discover(root, settings.index, deny=settings.edits.deny)
        scope = None
    else:
        found = discover_paths(root, settings.index, paths, deny=settings.edits.deny)
        scope = tuple(sorted(paths))
    if progress:
        n = len(found.candidates) if scope is None else len(scope)
        progress(PHASE_DISCOVER, n, n)
    return found, scope, before, now


def _run(
    conn: sqlite3.Connection,
    layout: RepoLayout,
    settings: Settings,
    progress: ProgressFn | None,
    rebuilt: bool,
    started: float,
    warnings: list[EngineWarning],
    text_index: bool = False,
    steps: _Steps | None = None,
) -> IndexReport:
    root = layout.root
    found, scope, before, now = _discover(conn, layout, settings, rebuilt, progress)
    if scope == () and now is not None:
        return _unchanged_report(conn, started, warnings, now)
    plan = _plan(conn, root, found.candidates, scope)
    known = plan.known
    indexed_before = int(conn.execute("SELECT count(*) FROM files").fetchone()[0])
    bulk = indexed_before == 0
    old_sha = {p: known[p][2] for p in plan.deleted}
    reparse = [c.path for c in plan.to_parse if c.path in known]
    names_before = _name_ids(conn, reparse + plan.deleted)
    workers = settings.index.workers or os.cpu_count() or 1
    now_ts = time.time()
    # A cold build with a text index cuts code files into chunks in the parse workers, which hold
    # each file's text and symbols already; the text refresh that follows does only the rest.
    prefill = bulk and text_index
    if prefill:
        from engine.index.fts import reset_tables

        reset_tables(conn)
    if bulk:
        # A cold build is derived data written in one transaction: skip the fsyncs (a crash
        # leaves an index that the next run detects and rebuilds) and give the index builds
        # enough page cache not to spill. Both are restored after the commit.
        conn.execute("PRAGMA synchronous=OFF")
        conn.execute(f"PRAGMA cache_size=-{BULK_CACHE_KB}")
    conn.execute("BEGIN")
    if bulk:
        if steps is not None:
            steps.begin(WRITE_STEPS)
        _remove_shards(layout.cache_dir)  # a killed run's leftovers
        drop_secondary_indexes(conn)
        if prefill:
            from engine.index.fts import drop_chunk_indexes

            drop_chunk_indexes(conn)
        conn.execute(f"PRAGMA threads = {min(4, workers)}")  # parallel sorter for the index builds
    for cand, _digest in plan.touched_only:
        conn.execute(
            "UPDATE files SET size=?, mtime_ns=? WHERE path=?", (cand.size, cand.mtime_ns, cand.path)
        )
    _delete_file_rows(conn, {p: known[p][3] for p in plan.deleted})
    _delete_file_rows(conn, {p: known[p][3] for p in reparse}, keep_file_row=True)
    by_path = {c.path: c for c in found.candidates}
    skipped_rows = [(s.path, 0, 0, s.reason) for s in found.skipped] + [
        (s.path, by_path[s.path].size, by_path[s.path].mtime_ns, s.reason) for s in plan.still_skipped
    ]
    if scope is None:
        conn.execute("DELETE FROM skipped_files")
    else:
        for part in _chunks(list(scope)):
            conn.execute(f"DELETE FROM skipped_files WHERE path IN ({','.join('?' * len(part))})", list(part))
    conn.executemany("INSERT OR REPLACE INTO skipped_files VALUES (?,?,?,?)", skipped_rows)
    # Files keep their id across re-parses; new ones are numbered after the highest, in path order.
    next_id = int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM files").fetchone()[0]) + 1
    file_ids: dict[str, int] = {}
    for cand in sorted(plan.to_parse, key=lambda c: c.path):
        old = known.get(cand.path)
        if old is not None:
            file_ids[cand.path] = old[3]
        else:
            file_ids[cand.path] = next_id
            next_id += 1
    writer = _Writer(conn, bulk=bulk, text=prefill)
    content_skipped: list[Skipped] = []
    parsed_ok: list[str] = []
    new_sha: dict[str, str] = {}
    shards: set[str] = set()
    shard = (str(layout.cache_dir), f"{os.getpid()}-{time.monotonic_ns()}") if bulk else None
    resolve_processes = 1
    items = [(c.path, c.language or "", file_ids[c.path]) for c in parse_order(plan.to_parse)]
    prose_done: list[str] | None = [] if prefill else None

    def prose_items() -> list[TextItem]:
        from engine.index.pipeline import prose_items as listed

        return listed(root, settings)

    try:
        for res in _parse_all(
            root,
            items,
            workers,
            progress,
            shard,
            shards,
            prefill,
            text_items=prose_items if prefill else None,
            db_path=layout.index_db,
        ):
            if isinstance(res, TextResult):
                if res.records is not None and res.sha256 is not None and prose_done is not None:
                    writer.add_text(res)
                    prose_done.append(res.path)
                continue
            if res.rows is None:
                reason = res.problem or "unreadable"
                content_skipped.append(Skipped(res.path, reason))
                conn.execute(
                    "INSERT OR REPLACE INTO skipped_files VALUES (?,?,?,?)",
                    (res.path, res.size, res.mtime_ns, reason),
                )
                continue
            writer.add(res.rows, now_ts)
            parsed_ok.append(res.path)
            new_sha[res.path] = res.sha256
        if not bulk:  # a bulk load's last rows are written while the workers resolve calls
            writer.flush()
        gone = [s.path for s in content_skipped if s.path in known]
        if gone:
            _delete_file_rows(conn, {p: known[p][3] for p in gone})
        deleted_paths = sorted(set(plan.deleted) | set(gone))
        changed_names = set() if bulk else {n for n, _ in names_before ^ _name_ids(conn, parsed_ok)}
        added_paths = [p for p in parsed_ok if p not in known]
        modified = [p for p in parsed_ok if p in known]
        deleted_shas = {old_sha.get(p) for p in plan.deleted}
        renamed = [p for p in added_paths if new_sha.get(p) in deleted_shas]
        changed_anything = bool(parsed_ok or deleted_paths or plan.touched_only or bulk)
        if parsed_ok or deleted_paths or bulk:
            resolve_processes = _resolve_graphs(
                conn,
                set(parsed_ok),
                changed_names,
                full=bulk or len(parsed_ok) > indexed_before // 2,
                structure_changed=bool(added_paths or deleted_paths),
                progress=progress,
                preloaded=writer if bulk else None,
                workers=workers,
                # The tables already loaded get their indexes while forked workers resolve calls.
                while_waiting=(lambda still: _store_terms_and_index(writer, conn, still, steps))
                if bulk
                else None,
                steps=steps,
                shard_dir=layout.cache_dir,
                shards=sorted(shards),
            )
    finally:
        for path in shards:
            Path(path).unlink(missing_ok=True)
        if shard is not None:  # and those of batches whose results never came (a stopped run)
            for leftover in layout.cache_dir.glob(SHARD_GLOB.replace("*", f"{shard[1]}-*")):
                leftover.unlink(missing_ok=True)
    writer.flush()  # no-op unless resolution was skipped
    writer.flush_terms()
    if bulk:
        create_secondary_indexes(conn)
    if prefill:
        from engine.index.fts import create_chunk_indexes

        create_chunk_indexes(conn)
    if steps is not None:
        steps.step()  # the indexes on calls
    files, symbols, edges = _counts(conn)
    meta = [
        ("last_indexed", json.dumps({"at": now_ts, "git": found.used_git})),
        (META_COUNTS, json.dumps({"files": files, "symbols": symbols, "edges": edges})),
        # Readers compare it with their settings: a path added to the deny-list since is dropped
        # by a run before they serve anything from it (Engine.follow_settings).
        (META_DISCOVERY, changes.discovery_key(settings)),
    ]
    if now is not None:
        meta.append((META_WORKTREE, now.to_json()))
    if changed_anything:
        generation = int(_meta(conn, META_GENERATION) or 0) + 1
        meta.append((META_GENERATION, str(generation)))
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta)
    if bulk:
        # Not copied into index.db by this commit: _checkpoint_beside does it on another thread.
        conn.execute("PRAGMA wal_autocheckpoint=0")
    conn.commit()
    if steps is not None:
        steps.step()
    _detach_shards(conn)
    if bulk:
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
    skipped = found.skipped + plan.still_skipped + content_skipped
    if scope is not None:  # the skips recorded earlier, outside this run's scope, still hold
        seen = {s.path for s in skipped}
        skipped += [
            Skipped(r[0], r[1])
            for r in conn.execute("SELECT path, reason FROM skipped_files")
            if r[0] not in seen
        ]
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
        cold=bulk,
        text_prefilled=prefill,
        chunks_prefilled=writer.chunks_written,
        text_merged=writer.text_merged,
        resolve_processes=resolve_processes,
        prose_prefilled=tuple(sorted(prose_done)) if prose_done is not None else None,
        scope=scope,
        state_before=before.token if before is not None else None,
        state_after=now.token if now is not None else None,
    )
