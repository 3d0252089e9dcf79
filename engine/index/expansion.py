"""Optional query expansion: a local LLM rewrites a request into 2 more search queries.

Owns the prompt, the parsing of the reply and the expansion cache in cache.db.
It never searches; hybrid search runs the rewrites beside the original query.
"""

from __future__ import annotations

import hashlib
import json
import re

from engine.store.cache import ResultCache

# Rewrites per query (localseek): diminishing returns beyond 2-3, and each costs an FTS pass.
EXPANSION_COUNT = 2
# A rewrite longer than this is an essay, not a query.
MAX_REWRITE_CHARS = 200
CACHE_NAMESPACE = "expansion"
EXPANSION_PROMPT = (
    "Rewrite this request about a code base as {n} short keyword search queries that would find the "
    "relevant code (function names, concepts, synonyms). One query per line, nothing else.\n\n"
    "Request: {query}"
)
_LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d+[.)]|query\s*\d*:)\s*", re.I)


def parse_rewrites(reply: str, query: str, count: int = EXPANSION_COUNT) -> list[str]:
    """Lines of the reply, list markers and quotes stripped, without the query itself or repeats."""
    out: list[str] = []
    for line in reply.splitlines():
        text = _LIST_MARK.sub("", line).strip().strip('"').strip("'").strip()
        if not text or len(text) > MAX_REWRITE_CHARS or text.lower() == query.lower().strip():
            continue
        if text.lower() not in (o.lower() for o in out):
            out.append(text)
        if len(out) >= count:
            break
    return out


def cache_key(query: str, model: str) -> str:
    return hashlib.sha256(f"{model}\x00{query}".encode()).hexdigest()


class OllamaExpander:
    """Rewrites from a local Ollama model, cached in cache.db by model and query."""

    def __init__(self, host: str, model: str, timeout: float, cache: ResultCache | None) -> None:
        from engine.services.ollama import OllamaClient

        self.model = model
        self.cache = cache
        self.client = OllamaClient(host, timeout=timeout)

    def expand(self, query: str) -> tuple[list[str], bool]:
        """``(rewrites, cache_hit)``; raises the client's error when Ollama is unavailable."""
        key = cache_key(query, self.model)
        if self.cache is not None:
            cached = self.cache.get(CACHE_NAMESPACE, key)
            if cached is not None:
                return [str(x) for x in json.loads(cached)], True
        reply = self.client.generate(
            self.model, EXPANSION_PROMPT.format(n=EXPANSION_COUNT, query=query), options={"temperature": 0}
        )
        rewrites = parse_rewrites(reply, query)
        if self.cache is not None and rewrites:
            self.cache.put(CACHE_NAMESPACE, key, json.dumps(rewrites))
        return rewrites, False
