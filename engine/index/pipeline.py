"""Keep the text index in step with the repository, incrementally.

Owns ``refresh_text_index``: it reads the store's ``files``/``symbols`` tables (code)
and walks prose/config files itself, rewrites only the chunks whose content changed,
drops the chunks of deleted files, and invalidates cache.db entries computed from
them. When the store's run says which paths it examined (git told it what changed) and
the text index matches the state that run started from, only those paths are looked at.
Many files are chunked in worker processes (each reads its files and their symbols);
this process only writes rows and FTS documents. Vectors are not embedded here (see
``vectors.VectorIndexer``), so FTS and symbols are never delayed by an embedding model.
"""

from __future__ import annotations

import logging
import marshal
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.errors import EngineWarning, WarningSink
from engine.index import fts
from engine.index.chunk_source import read_source
from engine.index.chunking import CHUNKING_VERSION, PROSE_EXTENSIONS, chunk_file, content_hash, is_prose
from engine.policy.names import is_secret_name
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol
from engine.store.cache import ResultCache
from engine.store.discovery import listed_paths
from engine.store.rows import SYMBOL_COLUMNS, row_to_symbol

log = logging.getLogger("semfora.index.pipeline")

# (phase, done, total): the same shape the store's indexer reports progress in (counts are files).
ProgressFn = Callable[[str, int, int], None]
PHASE_TEXT = "text index"

# A refresh that writes at least this share of the index's chunks merges FTS segments afterwards.
OPTIMIZE_SHARE = 0.1
# Report progress every this many files so a large first index shows movement.
PROGRESS_EVERY = 200
# Chunks buffered before they are written: large enough that per-statement costs vanish, small
# enough that the rows (a few MB of text) stay a small part of the build's memory.
INSERT_BATCH_CHUNKS = 5000
# From this many files to chunk, worker processes chunk them (below, one process is quicker).
PARALLEL_CHUNK_MIN = 200
# Files per chunking task, and tasks queued per worker so results stream back steadily.
CHUNK_BATCH_FILES = 64
CHUNK_TASKS_PER_WORKER = 6
# text_meta key: the store's work-tree state (token) this text index was last brought up to.
META_SYNCED_STATE = "synced_state"
# text_meta key: the ``chunking.CHUNKING_VERSION`` the chunk rows were made by.
META_CHUNKING = "chunking_version"


@dataclass(frozen=True)
class TextIndexReport:
    files_changed: int
    files_deleted: int
    chunks_written: int
    chunks_deleted: int
    chunks_total: int
    cache_invalidated: int
    seconds: float
    changed_paths: tuple[str, ...] = ()
    deleted_paths: tuple[str, ...] = ()
    compacted: bool = False
    rechunked: bool = False  # chunked again because another chunking version made the rows


@dataclass(frozen=True)
class _Candidate:
    path: str
    language: str
    sha256: str | None  # known for code files (from the store); computed from the text for prose
    size: int
    mtime_ns: int


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    return row is not None


def _rows_in_scope(conn: sqlite3.Connection, sql: str, scope: Sequence[str] | None) -> list[Any]:
    """The rows of ``sql`` (a SELECT over a table with a ``path`` column), all of them or those
    whose path is in ``scope``, asked in slices SQLite's parameter limit allows."""
    if scope is None:
        return conn.execute(sql).fetchall()
    rows: list[Any] = []
    for part in _in_chunks(scope):
        rows.extend(conn.execute(sql + f" WHERE path IN ({','.join('?' * len(part))})", part))
    return rows


def _in_chunks(items: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield list(items[i : i + size])


def _code_candidates(conn: sqlite3.Connection, scope: Sequence[str] | None) -> dict[str, _Candidate]:
    if not _table_exists(conn, "files"):
        return {}
    rows = _rows_in_scope(conn, "SELECT path, language, sha256, size, mtime_ns FROM files", scope)
    return {p: _Candidate(p, lang, sha, size, mtime) for p, lang, sha, size, mtime in rows}


def _prose_candidates(
    root: Path, settings: Settings, scope: Sequence[str] | None = None
) -> dict[str, _Candidate]:
    exclude = set(settings.index.exclude_dirs)
    if scope is not None:
        paths: Iterable[str] = scope
    else:
        paths = listed_paths(root, exclude)
    out: dict[str, _Candidate] = {}
    for rel in paths:
        if os.path.splitext(rel)[1].lower() not in PROSE_EXTENSIONS:
            continue
        parts = rel.split("/")
        if any(p in exclude for p in parts[:-1]) or is_secret_name(rel, settings.edits.deny):
            continue  # a secret file is never chunked, indexed or embedded
        try:
            st = os.lstat(os.path.join(root, rel))  # one system call: a symlink is not followed
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode) or st.st_size > settings.index.max_file_bytes:
            continue
        out[rel] = _Candidate(rel, "", None, st.st_size, st.st_mtime_ns)
    return out


def prose_items(root: Path, settings: Settings) -> list[_Item]:
    """The prose files of the whole tree as chunking items (a cold build chunks them with the code)."""
    return [
        (c.path, c.language, c.sha256, c.size, c.mtime_ns) for c in _prose_candidates(root, settings).values()
    ]


def _symbols_by_file(conn: sqlite3.Connection, files: list[str]) -> dict[str, list[Symbol]]:
    out: dict[str, list[Symbol]] = {f: [] for f in files}
    if not files or not _table_exists(conn, "symbols"):
        return out
    for part in _in_chunks(files):
        rows = conn.execute(
            f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE file IN ({','.join('?' * len(part))})", part
        )
        for row in rows:
            bucket = out.get(row[4])
            if bucket is not None:
                bucket.append(row_to_symbol(row))
    return out


def _read_text(path: Path) -> str | None:
    """One file's text for chunking (kept for callers that hold an absolute path)."""
    return read_source(path.parent, path.name)


# --- chunking, in worker processes when there are many files -----------------------------------

# One file to chunk: (path, language or "", sha256 or None, size, mtime_ns).
_Item = tuple[str, str, str | None, int, int]
# One file chunked: (path, sha256, size, mtime_ns, language, records) with records None if unreadable.
_Chunked = tuple[str, str | None, int, int, str, list[fts.ChunkRecord] | None]


def chunk_batch(root: str, db_path: str, items: Sequence[_Item]) -> list[_Chunked]:
    """Read each file and cut it into chunk records; code files get their symbols from index.db."""
    code = [path for path, _lang, _sha, _size, _mtime in items if not is_prose(path)]
    symbols: dict[str, list[Symbol]] = {}
    if code:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            symbols = _symbols_by_file(conn, code)
        finally:
            conn.close()
    base = Path(root)
    out: list[_Chunked] = []
    real_dirs: dict[str, bool] = {}
    for path, language, sha, size, mtime in items:
        text = read_source(base, path, real_dirs)
        if text is None:
            out.append((path, None, size, mtime, language, None))
            continue
        digest = sha or content_hash(text)
        lang = language or "text"
        records = [fts.chunk_record(c) for c in chunk_file(path, text, symbols.get(path, ()), lang)]
        out.append((path, digest, size, mtime, lang, records))
    return out


def chunk_batch_packed(root: str, db_path: str, items: Sequence[_Item]) -> bytes:
    """Worker entry point: ``chunk_batch`` marshalled (plain tuples; far cheaper than pickle)."""
    return marshal.dumps(chunk_batch(root, db_path, items))


def _chunk_all(
    root: Path, db_path: Path, items: list[_Item], workers: int, progress: ProgressFn | None
) -> Iterator[_Chunked]:
    """Chunk ``items``, in worker processes when there are many, yielding each file as it is done."""
    total = len(items)
    done = 0
    if total < PARALLEL_CHUNK_MIN or workers <= 1:
        for start in range(0, total, CHUNK_BATCH_FILES):
            for result in chunk_batch(str(root), str(db_path), items[start : start + CHUNK_BATCH_FILES]):
                done += 1
                yield result
            if progress:
                progress(PHASE_TEXT, done, total)
        return
    from engine.index.workers import worker_pool

    batches = [items[i : i + CHUNK_BATCH_FILES] for i in range(0, total, CHUNK_BATCH_FILES)]
    with worker_pool(workers) as pool:
        pending: set[Future[bytes]] = set()
        queue = iter(batches)
        for batch in queue:
            pending.add(pool.submit(chunk_batch_packed, str(root), str(db_path), batch))
            if len(pending) >= workers * CHUNK_TASKS_PER_WORKER:
                break
        while pending:
            finished, pending = wait(pending, return_when=FIRST_COMPLETED)
            for _fut in finished:  # more work out first: the workers chunk while this process writes
                nxt = next(queue, None)
                if nxt is not None:
                    pending.add(pool.submit(chunk_batch_packed, str(root), str(db_path), nxt))
            for fut in finished:
                for result in marshal.loads(fut.result()):
                    done += 1
                    yield result
                if progress:
                    progress(PHASE_TEXT, done, total)


# --- the refresh ------------------------------------------------------------------------------


def open_cache(layout: RepoLayout, settings: Settings) -> ResultCache:
    return ResultCache(layout.cache_db, ttl_days=settings.cache.ttl_days, max_mb=settings.cache.max_mb)


def _meta(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM text_meta WHERE key = ?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _scope(conn: sqlite3.Connection, report: Any, rebuild: bool) -> tuple[str, ...] | None:
    """The paths to look at when the store's run examined only those and this index matched the
    state that run started from; None for the whole tree."""
    scope = getattr(report, "scope", None)
    before = getattr(report, "state_before", None)
    if rebuild or scope is None or before is None:
        return None
    return tuple(scope) if _meta(conn, META_SYNCED_STATE) == before else None


@dataclass
class _Writes:
    """Rows waiting to be written, and what the refresh has done so far."""

    records: list[fts.ChunkRecord]
    files: list[tuple[str, str, int, int, str]]
    chunks_written: int = 0
    chunks_deleted: int = 0

    def flush(self, conn: sqlite3.Connection) -> None:
        self.chunks_written += fts.insert_records(conn, self.records)
        conn.executemany("INSERT OR REPLACE INTO text_files VALUES (?,?,?,?,?)", self.files)
        self.records.clear()
        self.files.clear()


def refresh_text_index(
    layout: RepoLayout,
    settings: Settings,
    report: Any = None,
    *,
    progress: ProgressFn | None = None,
    rebuild: bool = False,
    on_warning: WarningSink | None = None,
) -> TextIndexReport:
    """Bring the chunk table and FTS up to date with the store and the prose files on disk.

    ``report`` (the store's IndexReport) gives its ``rebuild`` flag and, when git told the store
    what changed, the paths to look at; which files changed is decided here from content hashes,
    so a missed event cannot leave stale chunks behind.
    """
    started = time.perf_counter()
    prefilled = bool(getattr(report, "text_prefilled", False))
    # A cold store build that wrote the code files' chunks itself asks for the rest, not a rebuild.
    rebuild = rebuild or (bool(getattr(report, "rebuild", False)) and not prefilled)
    conn = fts.connect(layout.index_db)
    compacted = False
    try:
        if rebuild:
            fts.drop_text_tables(conn)
            conn.commit()
            conn.close()
            conn = fts.connect(layout.index_db)
        scope = _scope(conn, report, rebuild)
        made_by = _meta(conn, META_CHUNKING)
        rechunk = not prefilled and made_by != CHUNKING_VERSION and fts.chunk_count(conn) > 0
        if rechunk and on_warning is not None:
            # Said before the work: on a large tree it takes a while with no file changed.
            on_warning(
                EngineWarning(
                    "TEXT_INDEX_RECHUNKED",
                    f"the full-text index is cut into chunks again from the files (chunking version "
                    f"{made_by or 1} -> {CHUNKING_VERSION}: another semfora version made it); vectors are "
                    "kept and only the chunks that changed are embedded again",
                )
            )
        if rechunk or (scope != () and not rebuild and fts.compaction_due(conn)):
            # Chunks made by another chunking version, or too many dead FTS documents: rebuild the
            # FTS table and chunk rows from the files (vectors stay; only changed chunks re-embed).
            fts.clear_chunks(conn)
            compacted = True
            scope = None
        if scope == ():
            state_after = getattr(report, "state_after", None)
            if _meta(conn, META_SYNCED_STATE) != state_after and state_after is not None:
                conn.execute(
                    "INSERT OR REPLACE INTO text_meta VALUES (?, ?)", (META_SYNCED_STATE, state_after)
                )
                conn.commit()
            return TextIndexReport(
                0, 0, 0, 0, fts.chunk_count(conn), 0, round(time.perf_counter() - started, 3)
            )
        prose_done = getattr(report, "prose_prefilled", None)
        if prefilled and prose_done is not None and scope is None and not compacted:
            # The cold build chunked every code and prose file: nothing is left to list or compare.
            result = _finish_prefilled(conn, report, list(prose_done))
        else:
            result = _refresh(
                conn, layout, settings, scope, progress, report, optimize=prefilled or compacted
            )
    finally:
        conn.close()
    old_hashes, really_changed, deleted, writes, total_chunks = result
    if prefilled:  # the store's run chunked its code files: they changed in this refresh too
        done_here = set(really_changed)
        code = [p for p in getattr(report, "changed_paths", ()) if p not in done_here]
        really_changed = sorted(code + really_changed)
        writes.chunks_written += int(getattr(report, "chunks_prefilled", 0))
    invalidated = 0
    if old_hashes:
        cache = open_cache(layout, settings)
        try:
            invalidated = cache.invalidate_content(sorted(set(old_hashes)))
        finally:
            cache.close()
    return TextIndexReport(
        files_changed=len(really_changed),
        files_deleted=len(deleted),
        chunks_written=writes.chunks_written,
        chunks_deleted=writes.chunks_deleted,
        chunks_total=total_chunks,
        cache_invalidated=invalidated,
        seconds=round(time.perf_counter() - started, 3),
        changed_paths=tuple(really_changed),
        deleted_paths=tuple(deleted),
        compacted=compacted,
        rechunked=rechunk,
    )


def _record_state(conn: sqlite3.Connection, report: Any, *, changed: bool) -> None:
    """Commit the refresh with the work-tree state it matches (and a new generation if it changed)."""
    if changed:
        conn.execute("INSERT OR REPLACE INTO text_meta VALUES ('generation', ?)", (str(time.time_ns()),))
    conn.execute("INSERT OR REPLACE INTO text_meta VALUES (?, ?)", (META_CHUNKING, CHUNKING_VERSION))
    state_after = getattr(report, "state_after", None)
    if state_after is not None:
        conn.execute("INSERT OR REPLACE INTO text_meta VALUES (?, ?)", (META_SYNCED_STATE, state_after))
    else:
        conn.execute("DELETE FROM text_meta WHERE key = ?", (META_SYNCED_STATE,))
    conn.commit()


def _finish_prefilled(
    conn: sqlite3.Connection, report: Any, prose: list[str]
) -> tuple[list[str], list[str], list[str], _Writes, int]:
    """Record the state a cold build's own text index matches, and merge its FTS segments
    (unless the build did, while its workers resolved calls)."""
    _record_state(conn, report, changed=True)
    total_chunks = fts.chunk_count(conn)
    if not getattr(report, "text_merged", False):
        fts.optimize(conn)
    return [], sorted(prose), [], _Writes([], []), total_chunks


def _refresh(
    conn: sqlite3.Connection,
    layout: RepoLayout,
    settings: Settings,
    scope: tuple[str, ...] | None,
    progress: ProgressFn | None,
    report: Any,
    *,
    optimize: bool = False,
) -> tuple[list[str], list[str], list[str], _Writes, int]:
    known_rows = _rows_in_scope(conn, "SELECT path, sha256, size, mtime_ns FROM text_files", scope)
    known = {p: (sha, size, mtime) for p, sha, size, mtime in known_rows}
    candidates = _code_candidates(conn, scope)
    for path, cand in _prose_candidates(layout.root, settings, scope).items():
        candidates.setdefault(path, cand)

    changed: list[_Candidate] = []
    for path, cand in candidates.items():
        old = known.get(path)
        if old is None:
            changed.append(cand)
        elif cand.sha256 is not None:
            if cand.sha256 != old[0]:
                changed.append(cand)
        elif (cand.size, cand.mtime_ns) != (old[1], old[2]):
            changed.append(cand)  # prose: confirmed by hash below
    deleted = sorted(set(known) - set(candidates))

    writes = _Writes([], [])
    old_hashes: list[str] = []
    for path in deleted:
        stored = fts.chunks_of_file(conn, path)
        old_hashes.extend(stored.values())
        old_hashes.append(known[path][0])  # entries keyed by the file's own sha256
        writes.chunks_deleted += fts.delete_chunks(conn, list(stored))
        conn.execute("DELETE FROM text_files WHERE path=?", (path,))

    really_changed: list[str] = []
    items: list[_Item] = [(c.path, c.language, c.sha256, c.size, c.mtime_ns) for c in changed]
    if progress is not None:
        progress(PHASE_TEXT, 0, len(items))
    workers = settings.index.workers or os.cpu_count() or 1
    for path, sha, size, mtime, language, records in _chunk_all(
        layout.root, layout.index_db, items, workers, progress
    ):
        old_row = known.get(path)
        if records is None or sha is None:
            gone = fts.chunks_of_file(conn, path)
            old_hashes.extend(gone.values())
            if old_row is not None:
                old_hashes.append(old_row[0])
            writes.chunks_deleted += fts.delete_chunks(conn, list(gone))
            conn.execute("DELETE FROM text_files WHERE path=?", (path,))
            continue
        if old_row is not None and old_row[0] == sha:
            conn.execute("UPDATE text_files SET size=?, mtime_ns=? WHERE path=?", (size, mtime, path))
            continue
        # A file never recorded has no chunks (both are written in one transaction): a cold
        # build skips one query per file.
        spans = fts.spans_of_file(conn, path) if old_row is not None else {}
        fresh: list[fts.ChunkRecord] = []
        moved: list[tuple[int, int, str]] = []
        new_ids: set[str] = set()
        for record in records:
            cid, _file, lo, hi, _kind, _lang, chash = record[0][:7]
            new_ids.add(str(cid))
            span = spans.get(str(cid))
            if span is None or span[0] != chash:
                fresh.append(record)
            elif (span[1], span[2]) != (lo, hi):
                moved.append((int(lo), int(hi), str(cid)))  # type: ignore[call-overload]
        fresh_ids = {str(r[0][0]) for r in fresh}
        stale = [cid for cid in spans if cid not in new_ids or cid in fresh_ids]
        old_hashes.extend(spans[cid][0] for cid in stale)
        if old_row is not None:
            old_hashes.append(old_row[0])  # entries keyed by the file's own sha256
        writes.chunks_deleted += fts.delete_chunks(conn, stale)
        fts.move_chunks(conn, moved)
        # Chunk ids include the path, so this file's inserts can wait for a batch of others'.
        writes.records.extend(fresh)
        writes.files.append((path, sha, size, mtime, language))
        really_changed.append(path)
        if len(writes.records) >= INSERT_BATCH_CHUNKS:
            writes.flush(conn)
    writes.flush(conn)
    _record_state(conn, report, changed=bool(really_changed or deleted))
    total_chunks = fts.chunk_count(conn)
    if optimize or writes.chunks_written >= max(1, OPTIMIZE_SHARE * total_chunks):
        fts.optimize(conn)
    return old_hashes, really_changed, deleted, writes, total_chunks
