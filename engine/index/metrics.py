"""metrics.db: anonymous search events and their daily aggregates.

Owns what is recorded at each level (off | errors | metrics | debug | full). Below
``full`` nothing identifying is stored: the query becomes a keyed hash (the key lives
outside metrics.db) and results only as counts and scores, never paths or names.
A damaged metrics.db is set aside and started anew (``engine.quarantine``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import sqlite3
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from engine.policy.redaction import redact, redact_json
from engine.quarantine import RebuildableDB, set_aside

LEVELS = ("off", "errors", "metrics", "debug", "full")

SCHEMA = """
CREATE TABLE IF NOT EXISTS search_events (
    id INTEGER PRIMARY KEY,
    ts REAL NOT NULL,
    day TEXT NOT NULL,
    query_hash TEXT NOT NULL,
    mode TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    result_count INTEGER NOT NULL,
    top_score REAL,
    used_expansion INTEGER NOT NULL,
    used_rerank INTEGER NOT NULL,
    cache_hits INTEGER NOT NULL,
    error TEXT,
    timings TEXT
);
CREATE INDEX IF NOT EXISTS search_events_day ON search_events(day);
CREATE TABLE IF NOT EXISTS query_log (
    event_id INTEGER PRIMARY KEY,
    query TEXT NOT NULL,
    expansions TEXT,
    results TEXT
);
"""


@dataclass(frozen=True)
class SearchEvent:
    query: str
    mode: str
    latency_ms: float
    result_count: int
    top_score: float | None
    used_expansion: bool = False
    used_rerank: bool = False
    cache_hits: int = 0
    error: str | None = None  # an error code, never a message that could quote the query
    timings: dict[str, float] = field(default_factory=dict)
    expansions: tuple[str, ...] = ()
    results: tuple[str, ...] = ()  # "file:line" of the hits; stored only at level full


@dataclass(frozen=True)
class DailyAggregate:
    """One day of search metrics, as `semfora metrics` shows it."""

    day: str
    searches: int
    errors: int
    avg_latency_ms: float
    p95_latency_ms: float
    avg_results: float
    avg_top_score: float | None
    cache_hits: int
    expansion_rate: float
    rerank_rate: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _key_path(db_path: Path) -> Path:
    return db_path.with_name("metrics.key")


class MetricsRecorder:
    """Writes search events at ``level``; every write failure is logged, never raised into a search."""

    def __init__(self, path: Path, level: str = "metrics") -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown metrics level {level!r}")
        self.path = path
        self.level = level
        self._lock = threading.Lock()
        self._db = RebuildableDB(path, SCHEMA, "the search metrics", "recording starts anew")
        self._key: bytes | None = None

    def _hash(self, query: str) -> str:
        """A keyed hash: repeats of a query group together, but the hash cannot be looked up."""
        if self._key is None:
            key_file = _key_path(self.path)
            if key_file.is_file():
                try:
                    self._key = bytes.fromhex(key_file.read_text(encoding="ascii").strip())
                except (ValueError, UnicodeDecodeError) as exc:
                    set_aside(
                        key_file,
                        "the metrics key",
                        str(exc),
                        "a new key is made (older hashes stop grouping)",
                    )
            if self._key is None:
                self._key = secrets.token_bytes(32)
                key_file.parent.mkdir(parents=True, exist_ok=True)
                key_file.write_text(self._key.hex())
                key_file.chmod(0o600)
        return hmac.new(self._key, query.strip().lower().encode("utf-8"), hashlib.sha256).hexdigest()[:32]

    def record(self, event: SearchEvent) -> bool:
        """Store ``event`` if the level asks for it; returns whether anything was written."""
        if self.level == "off" or (self.level == "errors" and event.error is None):
            return False
        now = time.time()
        timings = json.dumps(event.timings) if self.level in ("debug", "full") and event.timings else None
        query_hash = self._hash(event.query)

        def write(conn: sqlite3.Connection) -> None:
            cur = conn.execute(
                "INSERT INTO search_events(ts, day, query_hash, mode, latency_ms, result_count, top_score, "
                "used_expansion, used_rerank, cache_hits, error, timings) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    now,
                    time.strftime("%Y-%m-%d", time.gmtime(now)),
                    query_hash,
                    event.mode,
                    round(event.latency_ms, 2),
                    event.result_count,
                    event.top_score,
                    int(event.used_expansion),
                    int(event.used_rerank),
                    event.cache_hits,
                    event.error,
                    timings,
                ),
            )
            if self.level == "full":
                conn.execute(
                    "INSERT INTO query_log VALUES (?,?,?,?)",
                    (
                        cur.lastrowid,
                        redact(event.query),  # a key pasted into a query is never stored
                        json.dumps(redact_json(list(event.expansions))),
                        json.dumps(list(event.results)),
                    ),
                )
            conn.commit()

        with self._lock:
            self._db.run(write)
        return True

    def daily(self, days: int = 14) -> list[DailyAggregate]:
        if not self.path.exists():
            return []
        cutoff = time.strftime("%Y-%m-%d", time.gmtime(time.time() - days * 86_400))

        def read(conn: sqlite3.Connection) -> list[tuple]:
            return conn.execute(
                "SELECT day, latency_ms, result_count, top_score, cache_hits, used_expansion, used_rerank, "
                "error FROM search_events WHERE day > ? ORDER BY day, latency_ms",
                (cutoff,),
            ).fetchall()

        with self._lock:
            rows = self._db.run(read)
        by_day: dict[str, list[tuple]] = {}
        for row in rows:
            by_day.setdefault(row[0], []).append(row)
        out = []
        for day, items in sorted(by_day.items(), reverse=True):
            n = len(items)
            latencies = sorted(r[1] for r in items)
            tops = [r[3] for r in items if r[3] is not None]
            out.append(
                DailyAggregate(
                    day=day,
                    searches=n,
                    errors=sum(1 for r in items if r[7]),
                    avg_latency_ms=round(sum(latencies) / n, 2),
                    p95_latency_ms=round(latencies[min(n - 1, int(0.95 * n))], 2),
                    avg_results=round(sum(r[2] for r in items) / n, 2),
                    avg_top_score=round(sum(tops) / len(tops), 4) if tops else None,
                    cache_hits=sum(r[4] for r in items),
                    expansion_rate=round(sum(r[5] for r in items) / n, 3),
                    rerank_rate=round(sum(r[6] for r in items) / n, 3),
                )
            )
        return out

    def close(self) -> None:
        with self._lock:
            self._db.close()
