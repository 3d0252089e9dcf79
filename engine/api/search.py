"""Hybrid search, its result cache and its metrics, as the front door offers them to the faces.

The CLI (`semfora search|cache|metrics`), the app's search screen and the MCP ``search`` tool
ask here; retrieval itself stays in ``engine.index`` (imported lazily: chromadb, the embedding
model and tree-sitter are never loaded by ``import engine.api``). Must not print.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.api.values import SearchResults
from engine.policy.redaction import redact

if TYPE_CHECKING:
    from engine.api.tools import Engine
    from engine.errors import EngineWarning, WarningSink
    from engine.index.metrics import DailyAggregate
    from engine.repo.layout import RepoLayout

# Seconds a first `semfora search` waits for an indexer's SQLite lock before it reads anyway.
INDEX_PROBE_TIMEOUT = 30


def validate_search(mode: str, limit: int) -> None:
    """Raise UsageError for a mode or limit search cannot serve (before anything costs)."""
    from engine.index.hybrid import validate_request

    validate_request(mode, limit)


def prefer_query_service() -> None:
    """For one-shot processes (`semfora search`, `semfora context`): ask the shared query service
    instead of importing chromadb and loading a model in this process."""
    from engine.index.vectors import use_query_service

    use_query_service()


def text_index_missing(layout: RepoLayout) -> bool:
    """No text index to search yet (never built, or built before the text tables existed)."""
    if not layout.index_db.exists():
        return True
    conn = sqlite3.connect(str(layout.index_db), timeout=INDEX_PROBE_TIMEOUT)
    try:
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='text_chunks'").fetchone()
        if row is None:
            return True
        return conn.execute("SELECT 1 FROM text_files LIMIT 1").fetchone() is None
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()


def ensure_text_index(engine: Engine, *, on_start: Callable[[], None] | None = None) -> None:
    """Build the index the first time a search needs it; ``on_start`` hears that it begins."""
    if not text_index_missing(engine.layout):
        return
    if on_start is not None:
        on_start()
    engine.index()


def search(
    engine: Engine,
    query: str,
    *,
    mode: str = "hybrid",
    limit: int = 10,
    expand: bool | None = None,
    rerank: bool | None = None,
    on_warning: Callable[[str], None] | None = None,
    on_engine_warning: WarningSink | None = None,
    every_warning: bool = False,
) -> SearchResults:
    """Hybrid search (full-text + vectors + symbol names, fused). Every warning heard (e.g.
    vectors unavailable: full-text and symbols answered) is in the result and also told to
    ``on_warning`` (its message) and ``on_engine_warning`` (with its code) as it happens.
    A warning is heard once per process, or by every search with ``every_warning`` (a server,
    whose every reply must say what it lacks)."""
    from contextlib import nullcontext

    from engine.index.hybrid import every_warning as each_time
    from engine.index.hybrid import search as hybrid_search

    warnings: list[str] = []

    def heard(warning: EngineWarning) -> None:
        # "Ollama is not reachable at http://user:PASSWORD@host": the result is printed and served.
        said = redact(warning.message)
        warnings.append(said)
        if on_warning is not None:
            on_warning(said)
        if on_engine_warning is not None:
            on_engine_warning(warning)

    from engine.store.db import outdated_index_warning

    engine.follow_settings()  # a file deny-listed since the index was built: dropped before it is served
    outdated = outdated_index_warning(engine.layout) if engine.layout.index_db.exists() else None
    if outdated is not None:
        heard(outdated)
    with each_time() if every_warning else nullcontext():
        hits = hybrid_search(
            engine.layout,
            engine.settings,
            query,
            mode=mode,
            limit=limit,
            expand=expand,
            rerank=rerank,
            on_warning=heard,
        )
    return SearchResults(tuple(hits), tuple(warnings))


@dataclass(frozen=True)
class CacheReport:
    """The result cache's size and limits (`semfora cache stats`)."""

    path: str
    entries: int
    bytes: int
    by_namespace: dict[str, int]
    ttl_days: int
    max_mb: int

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "entries": self.entries,
            "bytes": self.bytes,
            "by_namespace": dict(self.by_namespace),
            "ttl_days": self.ttl_days,
            "max_mb": self.max_mb,
        }


def cache_stats(engine: Engine) -> CacheReport:
    from engine.store.cache import ResultCache

    cfg = engine.settings.cache
    cache = ResultCache(engine.layout.cache_db, ttl_days=cfg.ttl_days, max_mb=cfg.max_mb)
    try:
        stats = cache.stats()
    finally:
        cache.close()
    return CacheReport(
        str(engine.layout.cache_db),
        stats.entries,
        stats.bytes,
        dict(stats.by_namespace),
        cfg.ttl_days,
        cfg.max_mb,
    )


def clear_cache(engine: Engine) -> int:
    """Remove every cached entry; returns how many there were."""
    from engine.store.cache import ResultCache

    cfg = engine.settings.cache
    cache = ResultCache(engine.layout.cache_db, ttl_days=cfg.ttl_days, max_mb=cfg.max_mb)
    try:
        return cache.clear()
    finally:
        cache.close()


@dataclass(frozen=True)
class SearchMetrics:
    """Daily search metrics (`semfora metrics`) at the configured ``metrics.level``."""

    level: str
    days: tuple[DailyAggregate, ...]  # the recorder's daily aggregates

    def to_json(self) -> dict[str, Any]:
        return {"level": self.level, "days": [d.to_json() for d in self.days]}


def search_metrics(engine: Engine, days: int) -> SearchMetrics:
    from engine.index.metrics import MetricsRecorder

    level = engine.settings.metrics.level
    recorder = MetricsRecorder(engine.layout.metrics_db, level)
    try:
        daily = recorder.daily(days)
    finally:
        recorder.close()
    return SearchMetrics(level, tuple(daily))
