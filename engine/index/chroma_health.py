"""Whether the embedded Chroma store can be opened; a damaged one is set aside for a rebuild.

Owns one check, called right before the embedded ``PersistentClient`` is opened: read
``chroma/chroma.sqlite3`` with plain sqlite3; when SQLite calls it damaged, move the whole
``chroma/`` directory aside (its HNSW segments belong to that database), and forget in
index.db which chunks were embedded, so the next `semfora index` embeds them again. It never
opens Chroma itself and never talks to a Chroma server.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

from engine.quarantine import aside_name, is_corruption, notify
from engine.repo.layout import RepoLayout

log = logging.getLogger("semfora.index.chroma_health")

CHROMA_DB = "chroma.sqlite3"
# Below this size the whole file is checked page by page (PRAGMA quick_check); above it only
# its header and schema, so that opening a big store stays fast.
FULL_CHECK_MAX_BYTES = 64 * 1024 * 1024


def _problem(db: Path) -> str | None:
    """Why ``db`` is damaged, or None when SQLite reads it (or it does not exist yet)."""
    if not db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
    except sqlite3.DatabaseError as exc:
        return str(exc) if is_corruption(exc) else None
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        if db.stat().st_size <= FULL_CHECK_MAX_BYTES:
            verdict = conn.execute("PRAGMA quick_check").fetchone()
            if verdict and verdict[0] != "ok":
                return f"integrity check: {verdict[0]}"
    except sqlite3.DatabaseError as exc:
        return str(exc) if is_corruption(exc) else None
    finally:
        conn.close()
    return None


def store_problem(layout: RepoLayout) -> str | None:
    """Why the embedded store is damaged, or None; reads only (for checks that must not repair)."""
    return _problem(layout.chroma_dir / CHROMA_DB)


def _forget_embedded(index_db: Path) -> None:
    """Make the next vector build embed every chunk again (the vectors it recorded are gone)."""
    if not index_db.is_file():
        return
    conn = sqlite3.connect(str(index_db), timeout=30)
    try:
        conn.execute("DELETE FROM vector_state")
        conn.execute("DELETE FROM text_meta WHERE key IN ('vector_spec', 'vector_collection')")
        conn.commit()
    except sqlite3.OperationalError as exc:  # an index without a text index yet: nothing recorded
        log.debug("vector state not reset: %s", exc)
    finally:
        conn.close()


def ensure_chroma_usable(layout: RepoLayout) -> bool:
    """Set a damaged embedded Chroma store aside (said once); True when it did.

    Call it where the embedded ``PersistentClient`` is opened: Chroma then starts an empty
    store, and the next `semfora index` embeds the chunks again.
    """
    directory = layout.chroma_dir
    problem = _problem(directory / CHROMA_DB)
    if problem is None:
        return False
    aside = aside_name(directory)
    try:
        directory.rename(aside)
    except FileNotFoundError:
        return False  # another process set it aside first
    _forget_embedded(layout.index_db)
    notify(
        f"the vector store {directory / CHROMA_DB} was damaged ({problem}); moved {directory.name}/ to "
        f"{aside.name}; `semfora index` embeds its chunks again"
    )
    return True
