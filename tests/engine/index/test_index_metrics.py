"""metrics.db levels: anonymous by default, query text only at full, nothing at off."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from engine.config import load_settings
from engine.index.hybrid import search
from engine.index.metrics import MetricsRecorder, SearchEvent

QUERY = "where do we strip the authorization header"


def _settings(layout, monkeypatch, level: str):
    monkeypatch.setenv("SEMFORA_METRICS__LEVEL", level)
    return load_settings(layout.root).settings


def _rows(path, table: str) -> list[tuple]:
    if not path.exists():
        return []
    conn = sqlite3.connect(path)
    try:
        return conn.execute(f"SELECT * FROM {table}").fetchall()
    finally:
        conn.close()


def test_metrics_level_stores_nothing_identifying(indexed_repo, monkeypatch) -> None:
    layout, _ = indexed_repo()
    settings = _settings(layout, monkeypatch, "metrics")
    hits = search(layout, settings, QUERY)
    assert hits
    events = _rows(layout.metrics_db, "search_events")
    assert len(events) == 1 and events[0][6] == len(hits)  # result_count
    assert _rows(layout.metrics_db, "query_log") == []
    raw = b"".join(p.read_bytes() for p in layout.cache_dir.glob("metrics.db*"))
    for secret in (QUERY, "authorization", "app/auth.py", "should_strip_auth", "AuthMiddleware"):
        assert secret.encode() not in raw
    plain_hash = hashlib.sha256(QUERY.encode()).hexdigest()
    assert plain_hash[:16].encode() not in raw  # the hash is keyed, not a lookup-able sha256
    search(layout, settings, QUERY)
    hashes = {r[3] for r in _rows(layout.metrics_db, "search_events")}
    assert len(hashes) == 1  # repeats still group together


def test_full_level_keeps_query_text(indexed_repo, monkeypatch) -> None:
    layout, _ = indexed_repo()
    search(layout, _settings(layout, monkeypatch, "full"), QUERY)
    log = _rows(layout.metrics_db, "query_log")
    assert log and log[0][1] == QUERY and "app/auth.py" in log[0][3]


def test_off_records_nothing_and_errors_only_errors(tmp_path) -> None:
    off = MetricsRecorder(tmp_path / "a" / "metrics.db", "off")
    assert off.record(SearchEvent("q", "hybrid", 1.0, 1, 0.1)) is False
    assert not (tmp_path / "a" / "metrics.db").exists()
    errors = MetricsRecorder(tmp_path / "b" / "metrics.db", "errors")
    assert errors.record(SearchEvent("q", "hybrid", 1.0, 1, 0.1)) is False
    assert errors.record(SearchEvent("q", "hybrid", 1.0, 0, None, error="INDEX_ERROR")) is True
    assert [r[11] for r in _rows(tmp_path / "b" / "metrics.db", "search_events")] == ["INDEX_ERROR"]


def test_debug_adds_timings_and_daily_aggregates_add_up(indexed_repo, monkeypatch) -> None:
    layout, _ = indexed_repo()
    settings = _settings(layout, monkeypatch, "debug")
    for q in ("redirect", "user by id", "nothing-matches-this-zzzz"):
        search(layout, settings, q)
    events = _rows(layout.metrics_db, "search_events")
    assert all(r[12] and "fts_ms" in r[12] for r in events)
    day = MetricsRecorder(layout.metrics_db, "debug").daily(7)[0]
    assert day.searches == 3 and day.avg_latency_ms > 0 and day.errors == 0


def test_unknown_level_is_rejected(tmp_path) -> None:
    with pytest.raises(ValueError):
        MetricsRecorder(tmp_path / "m.db", "verbose")
