"""Optional reranking of the top fused candidates, blended with their retrieval rank.

Owns the rerankers (a local LLM through Ollama, or embedding similarity), the rerank
score cache (sha256(query) + chunk content hash + model version) and the
position-aware blend. It never retrieves: it reorders what hybrid search found.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from engine.errors import SemforaError
from engine.store.cache import ResultCache

log = logging.getLogger("semfora.index.rerank")

# How many fused candidates the reranker sees (localseek): enough for the long tail, cheap enough for a local LLM.
RERANK_TOP = 20
# Position-aware share of the retrieval score in the blend (localseek): trust exact/top matches,
# let the reranker decide more of the long tail.
RETRIEVAL_WEIGHT_TOP3 = 0.75
RETRIEVAL_WEIGHT_TOP10 = 0.60
RETRIEVAL_WEIGHT_REST = 0.40
# Characters of a candidate shown to an LLM reranker: the head of a function says what it does.
RERANK_DOC_CHARS = 1500
CACHE_NAMESPACE = "rerank"

BlendMode = Literal["blend", "only"]


class Reranker(Protocol):
    """Scores how well each document answers the query, each score in [0, 1]."""

    version: str  # model identity; part of the cache key

    def score(self, query: str, document: str) -> float: ...


@dataclass(frozen=True)
class RerankCandidate:
    key: str
    content_hash: str
    text: str


@dataclass(frozen=True)
class RerankOutcome:
    order: list[tuple[str, float]]  # (key, blended score) best first, top candidates only
    cache_hits: int
    scored: int
    failed: str | None  # why the reranker stopped, if it did


def retrieval_weight(rank: int) -> float:
    """The retrieval share of the blend at 1-based ``rank``."""
    if rank <= 3:
        return RETRIEVAL_WEIGHT_TOP3
    if rank <= 10:
        return RETRIEVAL_WEIGHT_TOP10
    return RETRIEVAL_WEIGHT_REST


def blend_score(rank: int, rerank_score: float) -> float:
    """Blend a normalised retrieval score (1/rank, in (0, 1]) with a rerank score in [0, 1].

    Raw RRF scores (about 0.016-0.1) beside rerank scores would hand every decision to
    the reranker; 1/rank keeps both on the same scale.
    """
    w = retrieval_weight(rank)
    return w * (1.0 / rank) + (1.0 - w) * rerank_score


def cache_key(query: str, content_hash: str, version: str) -> str:
    return f"{hashlib.sha256(query.encode('utf-8')).hexdigest()}:{content_hash}:{version}"


def rerank(
    query: str,
    candidates: Sequence[RerankCandidate],
    reranker: Reranker,
    cache: ResultCache | None,
    *,
    mode: BlendMode = "blend",
    top: int = RERANK_TOP,
) -> RerankOutcome:
    """Score the first ``top`` candidates (in retrieval order) and reorder them.

    A failure of the reranker stops scoring; unscored candidates keep their retrieval
    score (1/rank), so a dead model degrades to plain retrieval order.
    """
    head = list(candidates[:top])
    hits = 0
    scored = 0
    failed: str | None = None
    results: list[tuple[str, float]] = []
    for rank, cand in enumerate(head, 1):
        value: float | None = None
        key = cache_key(query, cand.content_hash, reranker.version)
        if cache is not None:
            cached = cache.get(CACHE_NAMESPACE, key)
            if cached is not None:
                hits += 1
                value = float(cached)
        if value is None and failed is None:
            try:
                value = min(1.0, max(0.0, float(reranker.score(query, cand.text[:RERANK_DOC_CHARS]))))
            except SemforaError as exc:
                failed = exc.message
            else:
                scored += 1
                if cache is not None:
                    cache.put(CACHE_NAMESPACE, key, repr(value), content_hash=cand.content_hash)
        if value is None:
            results.append((cand.key, 1.0 / rank))
        elif mode == "only":
            results.append((cand.key, value))
        else:
            results.append((cand.key, blend_score(rank, value)))
    results.sort(key=lambda kv: -kv[1])
    return RerankOutcome(results, hits, scored, failed)


_NUMBER = re.compile(r"(\d+(?:\.\d+)?)")
RERANK_PROMPT = (
    "You judge code search results. Query: {query}\n\n"
    "Candidate:\n```\n{document}\n```\n\n"
    "How relevant is the candidate to the query? Answer with one integer from 0 (unrelated) to 10 (exactly it)."
)


class OllamaReranker:
    """A local LLM asked for a 0-10 relevance grade per candidate."""

    def __init__(self, host: str, model: str, timeout: float) -> None:
        from engine.services.ollama import OllamaClient

        self.model = model
        self.version = f"ollama:{model}"
        self.client = OllamaClient(host, timeout=timeout)

    def score(self, query: str, document: str) -> float:
        reply = self.client.generate(
            self.model, RERANK_PROMPT.format(query=query, document=document), options={"temperature": 0}
        )
        match = _NUMBER.search(reply)
        if match is None:
            log.info("reranker reply without a grade: %r", reply[:80])
            return 0.0
        return min(10.0, float(match.group(1))) / 10.0


class EmbeddingReranker:
    """Cosine similarity of query and candidate embeddings, for when no LLM is at hand."""

    def __init__(self, embed: Callable[[list[str]], list[list[float]]], version: str) -> None:
        self._embed = embed
        self.version = f"embed:{version}"
        self._query: tuple[str, list[float]] | None = None

    def score(self, query: str, document: str) -> float:
        if self._query is None or self._query[0] != query:
            self._query = (query, self._embed([query])[0])
        q = self._query[1]
        d = self._embed([document])[0]
        dot = sum(a * b for a, b in zip(q, d, strict=False))
        norm = math.sqrt(sum(a * a for a in q)) * math.sqrt(sum(b * b for b in d))
        return max(0.0, dot / norm) if norm else 0.0
