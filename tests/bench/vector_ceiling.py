"""How much recall vectors could add at most: per task, vector search alone, hybrid without vectors
(FTS + symbols, the lexical side), their oracle union, and hybrid with vectors (the fusion as shipped).

The union counts a task found when a gold symbol is in either list's top 10: what a perfect fusion of
the two top-10 lists could reach. Fused at or near the union means the fusion is not what limits
vectors; a union near lexical means vectors rarely find what the lexical side misses, and no fusion
can add much. The deep union (gold in the lexical top 10 or anywhere in the vector top ``DEEP``, the
candidates the fusion draws from) is the most any reordering of those candidates could reach.

Sets: the context set (``tests/bench/queries/context``, 12 corpora), the Flask + Django query set
(``tests/bench/queries/tasks.json``, bench_search's default) and, with ``--set issues``, the real issue
reports (``tests/bench/queries/issues``, 10 corpora: long queries, a title and a body). Per-task rows
are printed (and written to ``$SEMFORA_BENCH_WORK/vector-ceiling-<set>.json``) for the public part
only; the held-out part is scored only with ``--heldout`` and only as totals, so tuning never sees
its tasks.

Run: ``nice .venv/bin/python -m tests.bench.vector_ceiling [--set context|flask-django|issues] [--heldout]``
(needs the ``[local-embed]`` extra). Corpora, indexes and vectors live under ``$SEMFORA_BENCH_WORK``
(for example ``/tmp/bench-vec3``): the first run embeds every corpus, later runs reuse the vectors.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from typing import Any

from tests.bench import retrieval_eval as ev

CONFIGS = ("vector", "lexical", "union", "deep union", "fused")
# Sets read through tests.bench.tasksets (the context bench's sets): name here -> name there.
TASKSETS = {"context": "newset", "issues": "issues"}
# Depth of the lists compared (recall@10, the measure).
K = 10
# Depth of the vector list the fusion draws candidates from (hybrid.VECTOR_CANDIDATES): gold this deep
# in the vector list and missed by the lexical top 10 is the most any reordering could still bring in.
DEEP = 40


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Case:
    """One task reduced to what scoring needs: its query and its gold (file, qualified name) pairs."""

    id: str
    corpus: str
    query: str
    gold: frozenset[tuple[str, str]]


def load_cases(set_name: str, heldout: bool) -> list[Case]:
    if set_name in TASKSETS:
        from tests.bench.tasksets import SETS

        return [
            Case(t.id, t.corpus, t.query, frozenset((g.file, g.symbol) for g in t.gold))
            for t in SETS[TASKSETS[set_name]].load()
            if t.heldout == heldout
        ]
    tasks = ev.load_tasks(ev.HELDOUT if heldout else ev.TASKS)
    return [Case(t.id, t.corpus, t.query, frozenset((g[0], g[1]) for g in t.gold)) for t in tasks]


def prepare(corpus: str) -> tuple[Any, Any]:
    """The corpus indexed and embedded (incremental: a second run only checks the record)."""
    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.index.vectors import VectorIndexer
    from engine.repo.layout import RepoLayout

    root = ev.prepare_corpus(corpus)
    layout = RepoLayout(root)
    settings = load_settings(root).settings
    t = time.perf_counter()
    index_repository(layout, settings)
    report = VectorIndexer(layout, settings).run()
    log(
        f"{corpus}: {report.embedded} chunks embedded, {report.pending} pending, "
        f"{report.total} in the index ({time.perf_counter() - t:.0f} s)"
    )
    return layout, settings


def _rank(hits: list[Any], gold: frozenset[tuple[str, str]]) -> int | None:
    return next((n for n, h in enumerate(hits, 1) if (h.file, h.symbol) in gold), None)


def score_case(layout: Any, settings: Any, case: Case) -> dict[str, Any]:
    """First gold rank (1-based, None when absent from the top K) per configuration, and the union."""
    from engine.index.hybrid import search

    off = settings.model_copy(update={"search": settings.search.model_copy(update={"embedding": "none"})})
    ranks: dict[str, int | None] = {}
    deep: int | None = None
    for name, conf, mode in (
        ("vector", settings, "vector"),
        ("lexical", off, "hybrid"),
        ("fused", settings, "hybrid"),
    ):
        hits = search(
            layout, conf, case.query, mode=mode, limit=DEEP if name == "vector" else K, record_metrics=False
        )
        ranks[name] = _rank(hits[:K], case.gold)
        if name == "vector":
            deep = _rank(hits, case.gold)
    both = [r for r in (ranks["vector"], ranks["lexical"]) if r is not None]
    ranks["union"] = min(both) if both else None  # a perfect fusion puts the better of the two first
    # Gold deep in the vector list: at best it could take the lexical list's last place.
    ranks["deep union"] = ranks["lexical"] or (K if deep is not None else None)
    found = {name: ranks[name] is not None for name in ranks}
    return {"id": case.id, "corpus": case.corpus, "ranks": ranks, "found": found}


def run(set_name: str, heldout: bool) -> dict[str, Any]:
    cases = load_cases(set_name, heldout)
    rows: list[dict[str, Any]] = []
    for corpus in sorted({c.corpus for c in cases}):
        layout, settings = prepare(corpus)
        from engine.index.vectors import VectorSearcher

        VectorSearcher.forget_all()
        rows += [score_case(layout, settings, c) for c in cases if c.corpus == corpus]
    totals = {name: sum(r["found"][name] for r in rows) / len(rows) for name in CONFIGS}
    at5 = {name: sum((r["ranks"][name] or K + 1) <= 5 for r in rows) / len(rows) for name in CONFIGS}
    mrr = {name: sum(1 / r["ranks"][name] for r in rows if r["ranks"][name]) / len(rows) for name in CONFIGS}
    only = {
        "vector only": sum(r["found"]["vector"] and not r["found"]["lexical"] for r in rows),
        "lexical only": sum(r["found"]["lexical"] and not r["found"]["vector"] for r in rows),
        "fused lost (in union, not fused)": sum(
            r["found"]["union"] and not r["found"]["fused"] for r in rows
        ),
        "fused beyond union": sum(r["found"]["fused"] and not r["found"]["union"] for r in rows),
    }
    return {
        "set": set_name,
        "part": "held-out" if heldout else "public",
        "tasks": len(rows),
        "recall@10": totals,
        "recall@5": at5,
        "mrr@10": mrr,
        "counts": only,
        "rows": rows,
    }


LABELS = {
    "vector": "vector search alone",
    "lexical": "hybrid without vectors (FTS + symbols)",
    "union": "oracle union of the two top-10 lists",
    "deep union": f"oracle: lexical top 10 or vector top {DEEP}",
    "fused": "hybrid with vectors (as shipped)",
}


def render(result: dict[str, Any]) -> list[str]:
    """Table rows, one per configuration, for ``HEADER``."""
    return [
        f"| {result['set']} | {result['part']} | {result['tasks']} | {LABELS[name]} | "
        f"{result['recall@5'][name]:.3f} | {result['recall@10'][name]:.3f} | {result['mrr@10'][name]:.3f} |"
        for name in CONFIGS
    ]


def summary(result: dict[str, Any]) -> str:
    t = result["recall@10"]
    return (
        f"{result['set']}, {result['part']}: the most vectors could add is {t['union'] - t['lexical']:+.3f} "
        f"recall@10 (union − lexical; {result['counts']['vector only']} of {result['tasks']} tasks found by "
        f"vectors alone, {result['counts']['lexical only']} by the lexical side alone), "
        f"{t['deep union'] - t['lexical']:+.3f} with gold anywhere in the vector top {DEEP}; the fusion adds "
        f"{t['fused'] - t['lexical']:+.3f} recall@10, "
        f"{result['recall@5']['fused'] - result['recall@5']['lexical']:+.3f} recall@5 and "
        f"{result['mrr@10']['fused'] - result['mrr@10']['lexical']:+.3f} MRR@10."
    )


HEADER = [
    "| set | part | tasks | configuration | recall@5 | recall@10 | MRR@10 |",
    "|---|---|---|---|---|---|---|",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", choices=(*TASKSETS, "flask-django"), action="append")
    parser.add_argument("--heldout", action="store_true", help="score the held-out part too (totals only)")
    args = parser.parse_args(argv)
    ev.configure_env(ev.minilm_spec())
    lines = list(HEADER)
    notes = []
    for set_name in args.set or ["context", "flask-django"]:
        public = run(set_name, heldout=False)
        for r in public["rows"]:
            print(f"{r['id']:<40} {r['corpus']:<18} " + " ".join(f"{k}={v}" for k, v in r["ranks"].items()))
        print(json.dumps(public["counts"]))
        (ev.WORK / f"vector-ceiling-{set_name}.json").write_text(json.dumps(public, indent=1))
        lines += render(public)
        notes.append(summary(public))
        if args.heldout:
            held = run(set_name, heldout=True)
            print(json.dumps(held["counts"]))
            lines += render(held)
            notes.append(summary(held))
    print("\n".join(lines + [""] + notes))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
