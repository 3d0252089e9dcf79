"""cache.db: results worth keeping between runs (summaries, expansions, rerank scores).

Entries are keyed by ``(namespace, key)`` and tied to the content hash they were
computed from, so a change or deletion of that content invalidates them. Expiry
is by age (TTL in days) and size (LRU eviction above a cap in MB). A damaged file is
set aside and the cache starts empty (``engine.quarantine``): it only holds recomputable work.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from engine.quarantine import RebuildableDB

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    namespace    TEXT NOT NULL,
    key          TEXT NOT NULL,
    value        TEXT NOT NULL,
    content_hash TEXT,
    created      REAL NOT NULL,
    accessed     REAL NOT NULL,
    size         INTEGER NOT NULL,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS entries_content ON entries(content_hash);
CREATE INDEX IF NOT EXISTS entries_accessed ON entries(accessed);
"""

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True)
class CacheStats:
    entries: int
    bytes: int
    by_namespace: dict[str, int]
    hits: int
    misses: int


class ResultCache:
    """A small thread-safe key/value store in SQLite with TTL and an LRU size cap."""

    def __init__(self, path: Path, *, ttl_days: float = 30, max_mb: float = 200) -> None:
        self.path = path
        self.ttl_seconds = ttl_days * SECONDS_PER_DAY
        self.max_bytes = int(max_mb * 1024 * 1024)
        self._lock = threading.Lock()
        self._hits = 0
        self._misses = 0
        self._db = RebuildableDB(path, SCHEMA, "the result cache", "it starts empty (cached work is redone)")
        with self._lock:
            self._db.connect()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def get(self, namespace: str, key: str) -> str | None:
        now = time.time()

        def read(conn: sqlite3.Connection) -> str | None:
            row = conn.execute(
                "SELECT value, created FROM entries WHERE namespace=? AND key=?", (namespace, key)
            ).fetchone()
            if row is None or now - row[1] > self.ttl_seconds:
                self._misses += 1
                if row is not None:
                    conn.execute("DELETE FROM entries WHERE namespace=? AND key=?", (namespace, key))
                    conn.commit()
                return None
            conn.execute("UPDATE entries SET accessed=? WHERE namespace=? AND key=?", (now, namespace, key))
            conn.commit()
            self._hits += 1
            return str(row[0])

        with self._lock:
            return self._db.run(read)

    def put(self, namespace: str, key: str, value: str, *, content_hash: str | None = None) -> None:
        now = time.time()
        size = len(value.encode("utf-8")) + len(key)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO entries VALUES (?,?,?,?,?,?,?)",
                (namespace, key, value, content_hash, now, now, size),
            )
            conn.commit()
            self._evict(conn)

        with self._lock:
            self._db.run(write)

    def invalidate_content(self, content_hashes: list[str]) -> int:
        """Drop every entry computed from content that changed or was deleted."""
        if not content_hashes:
            return 0

        def drop(conn: sqlite3.Connection) -> int:
            total = 0
            for i in range(0, len(content_hashes), 500):
                part = content_hashes[i : i + 500]
                marks = ",".join("?" * len(part))
                cur = conn.execute(f"DELETE FROM entries WHERE content_hash IN ({marks})", part)
                total += cur.rowcount
            conn.commit()
            return total

        with self._lock:
            return self._db.run(drop)

    def _evict(self, conn: sqlite3.Connection) -> None:
        cutoff = time.time() - self.ttl_seconds
        conn.execute("DELETE FROM entries WHERE created < ?", (cutoff,))
        total = conn.execute("SELECT COALESCE(SUM(size),0) FROM entries").fetchone()[0]
        if total <= self.max_bytes:
            conn.commit()  # end the DELETE's transaction, or other writers see a locked file
            return
        excess = total - self.max_bytes
        rows = conn.execute("SELECT namespace, key, size FROM entries ORDER BY accessed ASC").fetchall()
        for namespace, key, size in rows:
            if excess <= 0:
                break
            conn.execute("DELETE FROM entries WHERE namespace=? AND key=?", (namespace, key))
            excess -= size
        conn.commit()

    def stats(self) -> CacheStats:
        def count(conn: sqlite3.Connection) -> list[tuple[str, int, int]]:
            return conn.execute(
                "SELECT namespace, COUNT(*), COALESCE(SUM(size),0) FROM entries GROUP BY namespace"
            ).fetchall()

        with self._lock:
            rows = self._db.run(count)
        return CacheStats(
            entries=sum(r[1] for r in rows),
            bytes=sum(r[2] for r in rows),
            by_namespace={r[0]: r[1] for r in rows},
            hits=self._hits,
            misses=self._misses,
        )

    def clear(self, namespace: str | None = None) -> int:
        def drop(conn: sqlite3.Connection) -> int:
            if namespace is None:
                cur = conn.execute("DELETE FROM entries")
            else:
                cur = conn.execute("DELETE FROM entries WHERE namespace=?", (namespace,))
            conn.commit()
            return cur.rowcount

        with self._lock:
            return self._db.run(drop)
