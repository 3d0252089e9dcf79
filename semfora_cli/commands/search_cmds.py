"""`semfora search`, `semfora cache stats|clear` and `semfora metrics`.

Turns parsed arguments into calls on the front door (``engine.api``) and prints text or
JSON. It holds no retrieval logic of its own.
"""

from __future__ import annotations

import argparse
import sys

from engine import api
from engine.errors import UsageError
from engine.words import plural
from semfora_cli.output import engine_warning, print_json, warn


def run_search(args: argparse.Namespace) -> int:
    if not args.query.strip():
        # As `context` does: a blank query used to print "no results", as if the code had none.
        raise UsageError("search needs a query", hint='e.g. semfora search "where are retries decided"')
    api.validate_search(args.mode, args.limit)
    api.prefer_query_service()  # one query per process: the shared service holds chromadb and the model
    engine = api.Engine.open(args.path, on_warning=engine_warning)
    with engine:

        def first_index() -> None:
            if not args.json:
                sys.stderr.write("no usable index yet: indexing the repository first...\n")

        api.ensure_text_index(engine, on_start=first_index)
        busy = api.index_busy_note(engine)  # as `context` and `ask` say it
        if busy is not None:
            warn(busy)
        found = api.search(
            engine,
            args.query,
            mode=args.mode,
            limit=args.limit,
            expand=True if args.expand else None,
            rerank=True if args.rerank else None,
            on_engine_warning=engine_warning,  # `warning: [VECTORS_OFF] ...`, the code errors.md lists
        )
    hits = found.hits
    if args.json:
        payload = found.to_json()
        if busy is not None:
            payload["warnings"].insert(0, busy)
        print_json(payload)
        return 0
    if not hits:
        print("no results")
        return 0
    for h in hits:
        # A definition no list ranked is there for its file (it sits beside the best matches).
        src = ", ".join(f"{k} {v}" for k, v in h.sources.items() if v is not None) or "same file as a match"
        label = h.symbol or f"({h.kind})"
        print(f"{h.file}:{h.start_line}-{h.end_line}  {label}  score {h.score:.4f}  [{src}]")
        for line in h.snippet.splitlines():
            print(f"    {line}")
    return 0


def run_cache(args: argparse.Namespace) -> int:
    with api.Engine.open(args.path, on_warning=engine_warning) as engine:
        if args.action == "clear":
            removed = api.clear_cache(engine)
            if args.json:
                print_json({"ok": True, "removed": removed})
            else:
                print(
                    f"removed {plural(removed, 'cached entry', 'cached entries')} from {engine.layout.cache_db}"
                )
            return 0
        report = api.cache_stats(engine)
    if args.json:
        print_json(report.to_json())
        return 0
    print(f"cache.db: {report.path}")
    print(f"entries: {report.entries} ({report.bytes / 1024:.1f} KiB of {report.max_mb} MB cap)")
    print(f"ttl: {report.ttl_days} days")
    for ns, count in sorted(report.by_namespace.items()):
        print(f"  {ns}: {count}")
    return 0


def run_metrics(args: argparse.Namespace) -> int:
    with api.Engine.open(args.path, on_warning=engine_warning) as engine:
        metrics = api.search_metrics(engine, args.days)
    if args.json:
        print_json(metrics.to_json())
        return 0
    print(f"metrics level: {metrics.level}")
    if not metrics.days:
        print("no search events recorded")
        return 0
    print(
        f"{'day':<11} {'searches':>8} {'errors':>6} {'avg ms':>8} {'p95 ms':>8} {'results':>7} {'cache':>5}"
    )
    for d in metrics.days:
        print(
            f"{d.day:<11} {d.searches:>8} {d.errors:>6} {d.avg_latency_ms:>8.1f} {d.p95_latency_ms:>8.1f} "
            f"{d.avg_results:>7.1f} {d.cache_hits:>5}"
        )
    return 0


def run(args: argparse.Namespace) -> int:
    if args.command == "search":
        return run_search(args)
    if args.command == "cache":
        return run_cache(args)
    return run_metrics(args)
