"""Hybrid search and the text index's statistics, as the read floor offers them.

Owns nothing of retrieval (``engine.index.hybrid`` does); it is the one place the orchestrator's
search channel, message channel and task terms reach the text index, imported lazily so
``import engine.query`` never loads the search stack. Must not write the index.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.config import Settings
    from engine.errors import WarningSink
    from engine.index.embeddings import Embedder
    from engine.index.fts import ChunkRow
    from engine.index.hybrid import SearchHit
    from engine.repo.layout import RepoLayout


def search_hits(
    layout: RepoLayout,
    settings: Settings,
    query: str,
    *,
    mode: str = "hybrid",
    limit: int = 10,
    on_warning: WarningSink | None = None,
    rescore: bool = True,
) -> list[SearchHit]:
    """The best ``limit`` hits for ``query`` (``rescore=False``: the fusion's own order)."""
    from engine.index.hybrid import search

    return search(layout, settings, query, mode=mode, limit=limit, on_warning=on_warning, rescore=rescore)


def phrase_chunks(layout: RepoLayout, settings: Settings, phrase: str, limit: int) -> list[ChunkRow]:
    """Chunks that hold the words of ``phrase`` in order (a message a report quotes)."""
    from engine.index import hybrid

    return hybrid.phrase_chunks(layout, settings, phrase, limit)


def term_statistics(layout: RepoLayout, settings: Settings, words: list[str]) -> tuple[int, dict[str, int]]:
    """The number of chunks in the text index and, per word, how many contain it."""
    from engine.index import hybrid

    return hybrid.term_statistics(layout, settings, words)


def name_frequencies(layout: RepoLayout, settings: Settings, words: list[str]) -> dict[str, int]:
    """Per word, how many chunks have it in their definition's name."""
    from engine.index import hybrid

    return hybrid.name_frequencies(layout, settings, words)


def shared_embedder(layout: RepoLayout, settings: Settings, embedder: Embedder) -> Embedder:
    """``embedder``, or the shared query service's loaded copy of it when this process asks the
    service (`semfora ask`, `context`): turn memory then loads no model here."""
    from engine.index.vectors import shared_embedder as through_service

    return through_service(layout, settings, embedder)
