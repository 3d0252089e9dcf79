"""Step 3 of the pack: the call graph around the strongest hits, walked by personalised PageRank.

Owns the walk only: the seeds (the best candidates by their own evidence) restart the walk,
their callers and callees (read from the store's edges) receive mass through call edges, so
``SessionRedirectMixin.resolve_redirects`` rises when ``Session.send`` is a hit. It never
reads files and never decides what enters the pack.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.query import SymbolIndex

# Seeds of the walk: the best few candidates; more dilute the walk into the whole module.
GRAPH_SEEDS = 8
# Callers and callees followed per seed; hub functions have hundreds, the first few suffice.
NEIGHBOURS_PER_SEED = 10
# Restart probability 1 - DAMPING: 0.5 keeps the mass within one or two hops of the seeds.
DAMPING = 0.5
# Iterations of the walk: at damping 0.5 the mass left to move after 12 steps is 0.5**12.
PPR_ITERATIONS = 12


@dataclass(frozen=True)
class Link:
    """Why a symbol is in the walk: the seed it hangs off and how (``callee of `Session.send```)."""

    seed: str
    relation: str


def personalised_pagerank(
    store: SymbolIndex,
    seeds: Mapping[str, float],
    names: Mapping[str, str],
    *,
    follow: Callable[[str], bool],
    callers_of: Callable[[str], bool],
) -> tuple[dict[str, float], dict[str, Link]]:
    """Mass gained through call edges by every symbol near ``seeds`` (id -> evidence).

    Returns (symbol id -> mass above what it started with, symbol id -> its first link to a
    seed). ``follow(file)`` says whether a neighbour's file may be walked into (tests are not,
    unless the task is about them); ``callers_of(id)`` whether a seed's callers are followed
    (a class's callers are only its instantiations: noise, not context).
    """
    total = sum(seeds.values())
    if total <= 0:
        return {}, {}
    edges: dict[str, set[str]] = {}
    links: dict[str, Link] = {}
    for seed in seeds:
        relations = [("callee", store.callees(seed, 1))]
        if callers_of(seed):
            relations.append(("caller", store.callers(seed, 1)))
        for relation, nodes in relations:
            kept = [n.symbol_id for n in nodes if n.symbol_id and follow(n.file)]
            for other in kept[:NEIGHBOURS_PER_SEED]:
                if other is None or other == seed:
                    continue
                edges.setdefault(seed, set()).add(other)
                edges.setdefault(other, set()).add(seed)
                links.setdefault(other, Link(seed, f"{relation} of `{names.get(seed, seed)}`"))
    if not edges:
        return {}, {}
    personal = {k: v / total for k, v in seeds.items()}
    rank = dict(personal)
    for _ in range(PPR_ITERATIONS):
        nxt = {k: (1 - DAMPING) * v for k, v in personal.items()}
        for sym_id, score in rank.items():
            out = edges.get(sym_id)
            if not out:
                nxt[sym_id] = nxt.get(sym_id, 0.0) + DAMPING * score  # dangling: mass stays put
                continue
            share = DAMPING * score / len(out)
            for other in out:
                nxt[other] = nxt.get(other, 0.0) + share
        rank = nxt
    gained = {node: mass - personal.get(node, 0.0) * (1 - DAMPING) for node, mass in rank.items()}
    return {k: v for k, v in gained.items() if v > 0}, links
