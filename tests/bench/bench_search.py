"""`make bench` entry for search: retrieval quality (recall@5/10, MRR per mode and a whole-file BM25
baseline), FTS build time and warm hybrid latency on Django, and the rerank ablation.

Writes the ``search`` section of docs/benchmarks.md. Arguments are passed to
``tests.bench.retrieval_eval`` (e.g. ``--no-vectors``, ``--vector-budget 1200``).
"""

from __future__ import annotations

import sys

from tests.bench.retrieval_eval import main as run_eval


def main() -> int:
    return run_eval(sys.argv[1:])


if __name__ == "__main__":
    raise SystemExit(main())
