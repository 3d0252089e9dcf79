"""Reciprocal-rank fusion: the one formula, and the two damping constants with why each is what it is.

Owns ``rrf`` (the contribution of rank ``rank`` in one ranked list: ``weight / (k + rank)``),
the constants its two users pass: the hybrid search (``SEARCH_RRF_K``) and the context
gatherer's channels (``CONTEXT_RRF_K``), and the test discount (``TEST_WEIGHT``). Pure
arithmetic: no I/O, no engine imports.
"""

from __future__ import annotations

# The hybrid search's constant (Cormack et al.): damps the head so one list's rank 1 cannot drown
# agreement between lists (FTS, vectors, symbols are independent opinions of equal weight).
SEARCH_RRF_K = 60
# The context gatherer's constant: small, so within its channels (named symbols, the search's
# already-fused list) rank 1 clearly beats rank 5. Different on purpose: the search's list is
# itself a fusion, and its head is what the pack must start from.
CONTEXT_RRF_K = 10


def rrf(rank: int, k: int, weight: float = 1.0) -> float:
    """One list's contribution for an item at ``rank`` (1 = first): ``weight / (k + rank)``."""
    return weight / (k + rank)


# The test discount. Tests match a feature's words as well as its implementation does, but an
# explain/fix/extend request is about the implementation: a test's evidence counts half. It is
# applied once to each opinion of a hybrid search: to a test's contributions when the ranked lists
# are fused, and, when the fused head is rescored on its text, to the lexical opinion only (the
# fused opinion is the fused order, which already carries the discount).
TEST_WEIGHT = 0.5
