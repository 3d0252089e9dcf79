"""Hybrid ranking: RRF fusion, JSON shape, rerank blend and cache, expansion, graceful LLM absence."""

from __future__ import annotations

import re

import pytest

from engine.errors import EngineWarning, UsageError
from engine.index.fusion import SEARCH_RRF_K
from engine.index.hybrid import search
from engine.index.rerank import RerankCandidate, blend_score, rerank, retrieval_weight
from engine.store.cache import ResultCache


def test_fused_hits_carry_every_source_rank_and_the_contract_shape(indexed_repo) -> None:
    layout, settings = indexed_repo()
    hits = search(layout, settings, "should_strip_auth", limit=5)
    top = hits[0]
    assert top.symbol == "AuthMiddleware.should_strip_auth" and top.file == "app/auth.py"
    assert top.sources["fts"] is not None and top.sources["symbols"] == 1 and top.sources["vector"] is None
    # agreeing sources add up: two rank-1 opinions beat any single list's rank 1
    assert top.score == pytest.approx(2 / (SEARCH_RRF_K + 1), rel=0.05) or top.score > 1 / (SEARCH_RRF_K + 1)
    data = top.to_json()
    assert set(data) >= {"file", "symbol", "start_line", "end_line", "score", "sources", "snippet"}
    assert set(data["sources"]) == {"fts", "vector", "symbols"}
    assert "should_strip_auth" in data["snippet"]
    assert top.start_line == 10 and top.end_line == 11


def test_modes_restrict_sources(indexed_repo) -> None:
    layout, settings = indexed_repo()
    fts_only = search(layout, settings, "redirect", mode="fts")
    assert fts_only and all(h.sources["symbols"] is None for h in fts_only)
    sym_only = search(layout, settings, "redirect", mode="symbols")
    assert sym_only[0].symbol == "redirect" and all(h.sources["fts"] is None for h in sym_only)


def test_bad_mode_and_limit_are_usage_errors(indexed_repo) -> None:
    layout, settings = indexed_repo()
    with pytest.raises(UsageError):
        search(layout, settings, "x", mode="grep")
    with pytest.raises(UsageError):
        search(layout, settings, "x", limit=0)


def test_blend_uses_normalised_rank_with_position_weights() -> None:
    assert retrieval_weight(1) == 0.75 and retrieval_weight(4) == 0.60 and retrieval_weight(11) == 0.40
    assert blend_score(1, 0.0) == pytest.approx(0.75)
    assert blend_score(2, 1.0) == pytest.approx(0.75 * 0.5 + 0.25)
    # a confident reranker can lift a long-tail candidate over a weak top-10 one
    assert blend_score(12, 1.0) > blend_score(9, 0.0)


class _Scripted:
    version = "scripted:1"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores
        self.calls = 0

    def score(self, query: str, document: str) -> float:
        self.calls += 1
        return next((v for k, v in self.scores.items() if k in document), 0.0)


def test_rerank_reorders_and_caches_by_query_content_and_model(tmp_path) -> None:
    cands = [RerankCandidate(f"k{i}", f"h{i}", f"doc {i} " + ("target" if i == 5 else "")) for i in range(8)]
    cache = ResultCache(tmp_path / "cache.db")
    model = _Scripted({"target": 1.0})
    blended = rerank("q", cands, model, cache, mode="blend")
    only = rerank("q", cands, model, cache, mode="only")
    assert only.order[0][0] == "k5"  # rerank alone puts the target first
    assert blended.order[0][0] == "k0"  # the blend still trusts retrieval rank 1
    assert [k for k, _ in blended.order].index("k5") < 5  # but lifts the target from rank 6
    assert model.calls == 8 and only.cache_hits == 8  # second pass fully cached
    assert cache.invalidate_content(["h5"]) == 1
    rerank("q", cands, model, cache)
    assert model.calls == 9
    cache.close()


def test_llm_rerank_through_ollama_changes_the_order(fake_ollama, indexed_repo) -> None:
    files = {
        f"app/m{i}.py": f"def move_{i}(location):\n    return location + location * {i}\n" for i in range(4)
    }
    files["app/target.py"] = "def url_for(endpoint):\n    # location\n    return endpoint\n"
    layout, settings = indexed_repo(files)
    fake_ollama.responder = lambda model, prompt: "10" if "def url_for" in prompt else "0"
    plain = [h.symbol for h in search(layout, settings, "location", limit=5)]
    reranked = [h.symbol for h in search(layout, settings, "location", limit=5, rerank=True)]
    assert plain.index("url_for") >= 2
    assert reranked.index("url_for") < plain.index("url_for")
    calls = len(fake_ollama.requests_to("/api/generate"))
    assert calls == 5
    search(layout, settings, "location", limit=5, rerank=True)
    assert len(fake_ollama.requests_to("/api/generate")) == calls  # all scores came from cache.db


def test_expansion_adds_rewrites_and_caches_them(fake_ollama, indexed_repo) -> None:
    layout, settings = indexed_repo()
    fake_ollama.responder = lambda model, prompt: "1. user lookup\n2. getUserById cache"
    hits = search(layout, settings, "find a person record", expand=True)
    assert any(h.symbol == "getUserById" for h in hits)
    search(layout, settings, "find a person record", expand=True)
    assert len(fake_ollama.requests_to("/api/generate")) == 1


def test_dead_llm_warns_once_and_search_goes_on(indexed_repo) -> None:
    layout, settings = indexed_repo()  # OLLAMA_HOST is a closed port
    warnings: list[EngineWarning] = []
    first = search(layout, settings, "redirect", expand=True, rerank=True, on_warning=warnings.append)
    second = search(layout, settings, "redirect", expand=True, rerank=True, on_warning=warnings.append)
    assert first and first[0].symbol == "redirect" and [h.symbol for h in second] == [h.symbol for h in first]
    assert len([w for w in warnings if re.search("expansion", w.message)]) == 1
    assert len([w for w in warnings if re.search("rerank", w.message)]) == 1
    assert {w.code for w in warnings} == {"EXPANSION_OFF", "RERANK_OFF"}


def test_slow_llm_is_abandoned_within_the_timeout(fake_ollama, monkeypatch, indexed_repo) -> None:
    import time

    from engine.config import load_settings

    monkeypatch.setenv("SEMFORA_SEARCH__PROVIDER_TIMEOUT", "0.3")
    layout, _ = indexed_repo()
    settings = load_settings(layout.root).settings
    fake_ollama.delay = 5.0
    started = time.monotonic()
    hits = search(layout, settings, "redirect", rerank=True, expand=True, on_warning=lambda m: None)
    assert hits and time.monotonic() - started < 3


EXPRESS_LIKE_JS = """'use strict';
var res = Object.create(null);

res.clearCookie = function clearCookie(name, options) {
  return this.cookie(name, '', options);
};

res.sendFile = function sendFile(path, options, callback) {
  return send(path, options, callback);
};

res.sendStatus = function sendStatus(statusCode) {
  return this.status(statusCode).send(String(statusCode));
};

module.exports = res;
"""


@pytest.mark.parametrize("query", ["clear cookie", "send file", "send status code"])
def test_composed_names_of_javascript_assignments_are_found(indexed_repo, query: str) -> None:
    """Express writes methods as `res.clearCookie = function ...`: "clear cookie" finds it (it crashed)."""
    layout, settings = indexed_repo({"lib/response.js": EXPRESS_LIKE_JS})
    hits = search(layout, settings, query, mode="symbols", limit=5)
    wanted = "res." + "".join(w if i == 0 else w.capitalize() for i, w in enumerate(query.split()[:2]))
    assert hits and hits[0].symbol == wanted, [h.symbol for h in hits]
