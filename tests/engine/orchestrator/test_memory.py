"""Session memory: LRU, TTL, resume, the episodic JSONL and recall that never crashes."""

from __future__ import annotations

import json

from engine.orchestrator.memory import (
    MAX_CACHED_SYMBOLS,
    SEARCH_TTL_SECONDS,
    Episode,
    SemforaMemory,
    SessionStore,
    TurnRecall,
)
from engine.repo.layout import RepoLayout


def test_overview_loaded_once_and_symbol_lru() -> None:
    mem = SemforaMemory()
    calls = []
    for _ in range(3):
        mem.overview(lambda: calls.append(1) or "overview text")
    assert len(calls) == 1 and mem.overview_loads == 1
    for i in range(MAX_CACHED_SYMBOLS + 5):
        mem.remember_symbol(f"s{i}", i)
        if i == MAX_CACHED_SYMBOLS - 1:
            mem.symbol("s0")  # used recently: survives
    assert mem.cached_symbol_count == MAX_CACHED_SYMBOLS
    assert mem.symbol("s0") == 0 and mem.symbol("s1") is None


def test_search_cache_expires_after_ttl() -> None:
    now = [1000.0]
    mem = SemforaMemory(clock=lambda: now[0])
    mem.remember_search("q", ["hit"])
    now[0] += SEARCH_TTL_SECONDS - 1
    assert mem.search("q") == ["hit"]
    now[0] += 2
    assert mem.search("q") is None


def test_viewed_recency() -> None:
    mem = SemforaMemory()
    mem.mark_viewed(["a", "b", "c"])
    assert mem.recency("c") == 1.0 > mem.recency("b") > mem.recency("a") > mem.recency("zzz") == 0.0


def _episode(session: str, run: str, request: str, outcome: str = "ok") -> Episode:
    return Episode(0.0, session, run, request, "edit", ("i1",), "reply about it", ("a.py",), outcome)


def test_resume_returns_the_last_session(make_repo) -> None:
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)
    first = store.open(resume=False)
    first.turns.append({"request": "add logging", "outcome": "staged", "edits": ["a.py"]})
    store.save(first)
    again = SessionStore(layout).open(resume=True)
    assert again.id == first.id and again.turns[0]["request"] == "add logging"
    assert SessionStore(layout).open(resume=False).id != first.id
    # A session nobody saved (e.g. `semfora context`) does not hide the last real one.
    assert SessionStore(layout).open(resume=True).id == first.id


def test_episodic_log_is_append_only_and_survives_a_torn_line(make_repo) -> None:
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)
    store.episodes.append(_episode("s", "r1", "add retry to fetch_page"))
    with store.episodes.path.open("a") as fh:
        fh.write('{"ts": 1, "request": "torn')  # a killed process
    assert [e.run_id for e in store.episodes.read()] == ["r1"]  # the torn line is skipped
    # The next turn's line used to land on the end of the torn one, and was lost with it.
    store.episodes.append(_episode("s", "r2", "second"))
    lines = store.episodes.path.read_text().splitlines()
    assert [json.loads(line)["run_id"] for line in lines] == ["r1", "r2"]  # the torn tail was cut
    assert [e.run_id for e in store.episodes.read()] == ["r1", "r2"]


def test_lexical_recall_threshold_and_failed_turns(make_repo) -> None:
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)
    store.episodes.append(_episode("s", "r1", "add retry with backoff to fetch_page"))
    store.episodes.append(_episode("s", "r2", "fetch_page retry crashed with traceback", outcome="failed"))
    store.episodes.append(_episode("s", "r3", "rename the css theme colours"))
    recall = TurnRecall(layout, store.episodes, embed=None)
    hits = recall.recall("make fetch_page retry with exponential backoff")
    assert [h.episode.run_id for h in hits] == ["r1"] and hits[0].source == "lexical"
    debug = recall.recall("debug why fetch_page retry crashed")
    assert "r2" in [h.episode.run_id for h in debug]
    assert recall.recall("unrelated words entirely") == []


def test_broken_vector_provider_degrades_to_lexical(make_repo) -> None:
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)
    ep = _episode("s", "r1", "add retry with backoff to fetch_page")
    store.episodes.append(ep)

    def broken(texts: list[str]) -> list[list[float]]:
        raise ConnectionError("embedding service down")

    recall = TurnRecall(layout, store.episodes, embed=broken)
    recall.remember(ep)
    assert recall.mode == "lexical"
    assert recall.recall("fetch_page retry backoff")[0].episode.run_id == "r1"


def test_vector_recall_through_the_embedding_provider(make_repo, fake_ollama, monkeypatch) -> None:
    from engine.config import load_settings
    from engine.orchestrator.core import _turn_embedder

    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    embed = _turn_embedder(layout, load_settings(layout.root).settings)
    assert embed is not None
    store = SessionStore(layout)
    recall = TurnRecall(layout, store.episodes, embed=embed)
    episodes = [
        _episode("s", "r1", "add retry with backoff to fetch_page"),
        _episode("s", "r2", "fetch_page retry backoff crashed", outcome="failed"),
        _episode("s", "r3", "rename the css theme colours"),
    ]
    for ep in episodes:
        store.episodes.append(ep)
        recall.remember(ep)
    assert recall.mode == "vector"
    hits = recall.recall("fetch_page retry backoff")
    assert [h.episode.run_id for h in hits] == ["r1"] and hits[0].source == "vector"
    assert "r2" in [h.episode.run_id for h in recall.recall("debug the fetch_page retry backoff crash")]
    assert fake_ollama.requests_to("/api/embed")


def test_turn_vectors_stay_out_of_chroma_and_apart_by_model(make_repo) -> None:
    """Turn memory writes its vectors itself (Chroma's HNSW files carry uninitialised memory, which
    once held the API key of the request the same process had just sent): no `chroma/` store appears,
    a turn's vector is a line of `turn_vectors.jsonl`, another model's vectors are never compared,
    and a torn line from a killed process is skipped."""
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)

    def embedder(spec: str, axis: int):
        def embed(texts: list[str]) -> list[list[float]]:
            return [
                [1.0 if i == axis else 0.0 for i in range(3)] if "retry" in t else [0.0, 0.0, 1.0]
                for t in texts
            ]

        embed.spec = spec  # type: ignore[attr-defined]
        return embed

    first = TurnRecall(layout, store.episodes, embed=embedder("model-a", 0))
    ep = _episode("s", "r1", "add retry with backoff to fetch_page")
    store.episodes.append(ep)
    first.remember(ep)
    vectors = store.episodes.path.with_name("turn_vectors.jsonl")
    assert [json.loads(line)["run_id"] for line in vectors.read_text().splitlines()] == ["r1"]
    with vectors.open("a") as fh:
        fh.write('{"run_id": "torn", "model": "mod')  # a killed process's last line
    hits = first.recall("retry fetch_page")
    assert [(h.episode.run_id, h.source) for h in hits] == [("r1", "vector")]
    other = TurnRecall(layout, store.episodes, embed=embedder("model-b", 1))
    # model-a's vectors are not model-b's: the turn is embedded again with model-b, then found.
    hits = other.recall("retry fetch_page")
    assert [(h.episode.run_id, h.source) for h in hits] == [("r1", "vector")]
    rows = [json.loads(line) for line in vectors.read_text().splitlines()]
    assert [(r["run_id"], r["model"], r["vector"]) for r in rows] == [
        ("r1", "model-a", [1.0, 0.0, 0.0]),
        ("r1", "model-b", [0.0, 1.0, 0.0]),
    ]
    assert other.mode == "vector"
    assert not any(p.name == "chroma" for p in layout.cache_dir.rglob("*"))


def test_a_turn_vector_after_a_torn_line_is_kept_and_found(make_repo) -> None:
    """A process killed while appending a turn's vector left a line without its newline; the next
    turn's vector was written onto the end of it, so neither could be read and recall lost that turn."""
    layout = RepoLayout.for_path(make_repo({"a.py": "x=1\n"}))
    store = SessionStore(layout)

    def embed(texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0] if "retry" in t else [0.0, 1.0] for t in texts]

    embed.spec = "model-a"  # type: ignore[attr-defined]
    recall = TurnRecall(layout, store.episodes, embed=embed)
    first = _episode("s", "r1", "rename the css theme colours")
    store.episodes.append(first)
    recall.remember(first)
    vectors = store.episodes.path.with_name("turn_vectors.jsonl")
    with vectors.open("a") as fh:
        fh.write('{"run_id": "torn", "model": "model-a", "failed": false, "vector": [0.5, ')  # killed here
    second = _episode("s", "r2", "add retry with backoff to fetch_page")
    store.episodes.append(second)
    recall.remember(second)
    rows = [json.loads(line) for line in vectors.read_text().splitlines()]
    assert [r["run_id"] for r in rows] == ["r1", "r2"] and vectors.read_text().endswith("\n")
    hits = recall.recall("retry fetch_page with backoff")
    assert [(h.episode.run_id, h.source) for h in hits] == [("r2", "vector")]
