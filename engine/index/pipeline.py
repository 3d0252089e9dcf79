"""Keep the text index in step with the repository, incrementally.

Owns ``refresh_text_index``: it reads the store's ``files``/``symbols`` tables (code)
and walks prose/config files itself, rewrites only the chunks whose content changed,
drops the chunks of deleted files, and invalidates cache.db entries computed from
them. Vectors are not embedded here (see ``vectors.VectorIndexer``), so FTS and
symbols are never delayed by an embedding model.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.index import fts
from engine.index.cache import ResultCache
from engine.index.chunking import PROSE_EXTENSIONS, Chunk, chunk_file, content_hash, is_prose
from engine.policy.names import is_secret_name
from engine.semantic.model import Symbol
from engine.store.layout import RepoLayout

log = logging.getLogger("semfora.index.pipeline")

# (message, done, total): the same shape the store's indexer reports progress in.
ProgressFn = Callable[[str, int, int], None]

# A refresh touching at least this many files is a bulk load: merge FTS segments afterwards.
OPTIMIZE_AFTER_FILES = 50
# Above this many changed files one scan of the symbols table beats batched IN (...) lookups.
ALL_SYMBOLS_AT_ONCE = 1000
# Report progress every this many files so a large first index shows movement.
PROGRESS_EVERY = 200
# Chunks buffered before they are written: large enough that per-statement costs vanish, small
# enough that the rows (a few MB of text) stay a small part of the build's memory.
INSERT_BATCH_CHUNKS = 5000


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


@dataclass(frozen=True)
class _Candidate:
    path: str
    language: str
    sha256: str | None  # known for code files (from the store); computed lazily for prose
    size: int
    mtime_ns: int


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
    return row is not None


def _code_candidates(conn: sqlite3.Connection) -> dict[str, _Candidate]:
    if not _table_exists(conn, "files"):
        return {}
    rows = conn.execute("SELECT path, language, sha256, size, mtime_ns FROM files").fetchall()
    return {p: _Candidate(p, lang, sha, size, mtime) for p, lang, sha, size, mtime in rows}


def _listed_files(root: Path) -> Iterable[str] | None:
    """Files git would show (tracked + untracked, not ignored); None outside a git work tree."""
    if not (root / ".git").exists():
        return None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "-co", "--exclude-standard"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        log.warning("git ls-files failed (%s); walking the tree instead", exc)
        return None
    if proc.returncode != 0:
        return None
    return [p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p]


def _walk(root: Path, exclude: set[str]) -> Iterable[str]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in exclude and not d.startswith(".")]
        rel_dir = Path(dirpath).relative_to(root)
        for name in filenames:
            yield (rel_dir / name).as_posix()


def _prose_candidates(root: Path, settings: Settings) -> dict[str, _Candidate]:
    exclude = set(settings.index.exclude_dirs)
    listed = _listed_files(root)
    paths = listed if listed is not None else _walk(root, exclude)
    out: dict[str, _Candidate] = {}
    for rel in paths:
        if Path(rel).suffix.lower() not in PROSE_EXTENSIONS:
            continue
        parts = rel.split("/")
        if any(p in exclude for p in parts[:-1]) or is_secret_name(rel, settings.edits.deny):
            continue  # a secret file is never chunked, indexed or embedded
        full = root / rel
        try:
            if full.is_symlink() or not full.is_file():
                continue
            st = full.stat()
        except OSError:
            continue
        if st.st_size > settings.index.max_file_bytes:
            continue
        out[rel] = _Candidate(rel, "", None, st.st_size, st.st_mtime_ns)
    return out


def _symbols_by_file(conn: sqlite3.Connection, files: list[str]) -> dict[str, list[Symbol]]:
    out: dict[str, list[Symbol]] = {f: [] for f in files}
    if not files or not _table_exists(conn, "symbols"):
        return out
    columns = "id, name, qualified_name, kind, file, language, start_line, end_line, signature, doc, parent"
    if len(files) > ALL_SYMBOLS_AT_ONCE:
        batches = [conn.execute(f"SELECT {columns} FROM symbols")]
    else:
        batches = [
            conn.execute(
                f"SELECT {columns} FROM symbols WHERE file IN ({','.join('?' * len(files[i : i + 500]))})",
                files[i : i + 500],
            )
            for i in range(0, len(files), 500)
        ]
    for cursor in batches:
        for row in cursor:
            bucket = out.get(row[4])
            if bucket is not None:
                bucket.append(
                    Symbol(
                        id=row[0],
                        name=row[1],
                        qualified_name=row[2],
                        kind=row[3],
                        file=row[4],
                        language=row[5],
                        start_line=row[6],
                        end_line=row[7],
                        signature=row[8] or "",
                        doc=row[9] or "",
                        parent=row[10],
                    )
                )
    return out


def _read_text(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _flush(conn: sqlite3.Connection, chunks: list[Chunk], files: list[tuple[str, str, int, int, str]]) -> int:
    """Write the buffered chunks and their files' rows; empties both buffers."""
    written = fts.insert_chunks(conn, chunks)
    conn.executemany("INSERT OR REPLACE INTO text_files VALUES (?,?,?,?,?)", files)
    chunks.clear()
    files.clear()
    return written


def open_cache(layout: RepoLayout, settings: Settings) -> ResultCache:
    return ResultCache(layout.cache_db, ttl_days=settings.cache.ttl_days, max_mb=settings.cache.max_mb)


def refresh_text_index(
    layout: RepoLayout,
    settings: Settings,
    report: Any = None,
    *,
    progress: ProgressFn | None = None,
    rebuild: bool = False,
) -> TextIndexReport:
    """Bring the chunk table and FTS up to date with the store and the prose files on disk.

    ``report`` (the store's IndexReport) is accepted for its ``rebuild`` flag; which
    files changed is decided here from content hashes, so a missed event cannot leave
    stale chunks behind.
    """
    started = time.perf_counter()
    rebuild = rebuild or bool(getattr(report, "rebuild", False))
    conn = fts.connect(layout.index_db)
    try:
        if rebuild:
            fts.drop_text_tables(conn)
            conn.commit()
            conn.close()
            conn = fts.connect(layout.index_db)
        known = {
            p: (sha, size, mtime)
            for p, sha, size, mtime in conn.execute("SELECT path, sha256, size, mtime_ns FROM text_files")
        }
        candidates = _code_candidates(conn)
        for path, cand in _prose_candidates(layout.root, settings).items():
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

        old_hashes: list[str] = []
        chunks_deleted = 0
        for path in deleted:
            stored = fts.chunks_of_file(conn, path)
            old_hashes.extend(stored.values())
            old_hashes.append(known[path][0])  # entries keyed by the file's own sha256
            chunks_deleted += fts.delete_chunks(conn, list(stored))
            conn.execute("DELETE FROM text_files WHERE path=?", (path,))

        symbols = _symbols_by_file(conn, [c.path for c in changed if not is_prose(c.path)])
        pending_chunks: list[Chunk] = []
        pending_files: list[tuple[str, str, int, int, str]] = []
        chunks_written = 0
        really_changed: list[str] = []
        total = len(changed)
        for n, cand in enumerate(changed, 1):
            if progress is not None and (n % PROGRESS_EVERY == 0 or n == total):
                progress("chunking files for full-text search", n, total)
            text = _read_text(layout.root / cand.path)
            if text is None:
                stored = fts.chunks_of_file(conn, cand.path)
                old_hashes.extend(stored.values())
                if cand.path in known:
                    old_hashes.append(known[cand.path][0])
                chunks_deleted += fts.delete_chunks(conn, list(stored))
                conn.execute("DELETE FROM text_files WHERE path=?", (cand.path,))
                continue
            sha = cand.sha256 or content_hash(text)
            old_row = known.get(cand.path)
            if old_row is not None and old_row[0] == sha:
                conn.execute(
                    "UPDATE text_files SET size=?, mtime_ns=? WHERE path=?",
                    (cand.size, cand.mtime_ns, cand.path),
                )
                continue
            language = cand.language or "text"
            new_chunks = chunk_file(cand.path, text, symbols.get(cand.path, ()), language)
            # A file never recorded has no chunks (both are written in one transaction): a cold
            # build skips one query per file.
            stored = fts.chunks_of_file(conn, cand.path) if old_row is not None else {}
            new_by_id = {c.id: c for c in new_chunks}
            stale = [
                cid for cid, h in stored.items() if cid not in new_by_id or new_by_id[cid].content_hash != h
            ]
            old_hashes.extend(stored[cid] for cid in stale)
            if old_row is not None:
                old_hashes.append(old_row[0])  # entries keyed by the file's own sha256
            chunks_deleted += fts.delete_chunks(conn, stale)
            # Chunk ids include the path, so this file's inserts can wait for a batch of others':
            # one FTS statement per batch instead of one per file.
            pending_chunks.extend(c for c in new_chunks if stored.get(c.id) != c.content_hash)
            pending_files.append((cand.path, sha, cand.size, cand.mtime_ns, language))
            really_changed.append(cand.path)
            if len(pending_chunks) >= INSERT_BATCH_CHUNKS:
                chunks_written += _flush(conn, pending_chunks, pending_files)
        chunks_written += _flush(conn, pending_chunks, pending_files)
        if really_changed or deleted:
            conn.execute("INSERT OR REPLACE INTO text_meta VALUES ('generation', ?)", (str(time.time_ns()),))
        conn.commit()
        if len(really_changed) + len(deleted) >= OPTIMIZE_AFTER_FILES:
            fts.optimize(conn)
        total_chunks = fts.chunk_count(conn)
    finally:
        conn.close()

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
        chunks_written=chunks_written,
        chunks_deleted=chunks_deleted,
        chunks_total=total_chunks,
        cache_invalidated=invalidated,
        seconds=round(time.perf_counter() - started, 3),
        changed_paths=tuple(really_changed),
        deleted_paths=tuple(deleted),
    )
