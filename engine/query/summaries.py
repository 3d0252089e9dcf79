"""Model summaries written earlier into ``cache.db``, read for context packs.

Owns the read side of the summary cache: the key ``Summarizer`` writes a symbol's summary under
(``summary_cache_key``; a test keeps the two equal) and the lookup by content hash. Writing
summaries is the summarizer's (``engine.llm.summarizer``); this never calls a model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.config import Settings
    from engine.repo.layout import RepoLayout


def summary_cache_key(settings: Settings, content_hash: str) -> str:
    """The key ``Summarizer.cache_key`` writes symbol summaries under (a test keeps them equal)."""
    return f"{settings.ollama.summary_model}|symbol|{content_hash}"


class SummaryCache:
    """One repository's stored model summaries; ``cache.db`` is opened on the first lookup."""

    def __init__(self, layout: RepoLayout, settings: Settings) -> None:
        self.layout = layout
        self.settings = settings
        self._cache: Any = None

    def close(self) -> None:
        if self._cache is not None:
            self._cache.close()
            self._cache = None

    def model_summary(self, content_hash: str) -> str | None:
        """The model's summary of the code with this body hash, or None (never written, or unreadable)."""
        from engine.llm.summarizer import NAMESPACE

        if self._cache is None:
            from engine.store.cache import ResultCache

            self._cache = ResultCache(
                self.layout.cache_db, ttl_days=self.settings.cache.ttl_days, max_mb=self.settings.cache.max_mb
            )
        raw = self._cache.get(NAMESPACE, summary_cache_key(self.settings, content_hash))
        if raw is None:
            return None
        try:
            return str(json.loads(raw)["text"])
        except (ValueError, KeyError, TypeError):
            return None
