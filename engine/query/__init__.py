"""The read floor: what the orchestrator (and the front door above it) may ask of the index.

It sits under ``engine.orchestrator`` and over ``engine.store``/``engine.index``/``engine.llm``
(the ``layers`` contract), and the ``read-floor`` contract forbids the orchestrator to import
the store or the index directly: context packs and NEED rounds read the engine only through
here. It offers

- ``SymbolIndex``: symbols by name, id and file, the file a reporter's path means, callers and
  callees, fan-in and the bounded overview, over one read-only ``index.db`` connection;
- ``search_hits``, ``phrase_chunks``, ``term_statistics``, ``name_frequencies``: hybrid search
  and the text index's statistics (``SearchHit`` is the hit's frozen value);
- ``SummaryCache``: model summaries written earlier into ``cache.db``;
- the index's scoring vocabulary (``task_terms``, ``lexical_score``, ``rrf``...), so the
  orchestrator ranks with the same words and formula as the search.

It must not write anything, call a model, or import the orchestrator or the door. Importing it
is cheap: hybrid search (and what it loads) is imported inside the functions that search.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.index.fusion import CONTEXT_RRF_K, rrf
from engine.index.terms import STOPWORDS, TaskTerms, lexical_score, task_terms, tokens
from engine.query.search import name_frequencies, phrase_chunks, search_hits, term_statistics
from engine.query.summaries import SummaryCache
from engine.query.symbols import SymbolIndex

if TYPE_CHECKING:
    from engine.index.hybrid import SearchHit


def __getattr__(name: str) -> Any:
    # ``SearchHit`` lives with hybrid search, which is loaded on first use only (PEP 562).
    if name == "SearchHit":
        from engine.index.hybrid import SearchHit

        return SearchHit
    raise AttributeError(f"module 'engine.query' has no attribute {name!r}")


__all__ = [
    "CONTEXT_RRF_K",
    "STOPWORDS",
    "SearchHit",
    "SummaryCache",
    "SymbolIndex",
    "TaskTerms",
    "lexical_score",
    "name_frequencies",
    "phrase_chunks",
    "rrf",
    "search_hits",
    "task_terms",
    "term_statistics",
    "tokens",
]
