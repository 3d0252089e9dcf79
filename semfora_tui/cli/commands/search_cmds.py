"""`semfora search`, `semfora cache stats|clear` and `semfora metrics`.

Turns parsed arguments into calls on engine.index and prints text or JSON.
It holds no retrieval logic of its own.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys

from engine.config import Settings, load_settings
from engine.errors import EngineWarning
from engine.repo.layout import RepoLayout
from semfora_tui.cli.output import print_json, warn


def _setup(args: argparse.Namespace) -> tuple[RepoLayout, Settings]:
    layout = RepoLayout.for_path(args.path)
    return layout, load_settings(layout.root).settings


def _index_missing(layout: RepoLayout) -> bool:
    if not layout.index_db.exists():
        return True
    conn = sqlite3.connect(str(layout.index_db), timeout=30)
    try:
        row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name='text_chunks'").fetchone()
        if row is None:
            return True
        return conn.execute("SELECT 1 FROM text_files LIMIT 1").fetchone() is None
    except sqlite3.DatabaseError:
        return True
    finally:
        conn.close()


def _ensure_index(layout: RepoLayout, settings: Settings, *, quiet: bool) -> None:
    if not _index_missing(layout):
        return
    from engine.index.indexer import index_repository

    if not quiet:
        sys.stderr.write("indexing the repository (first search)...\n")
    index_repository(layout, settings)


def run_search(args: argparse.Namespace) -> int:
    from engine.index.hybrid import search, validate_request
    from engine.index.vectors import use_query_service

    validate_request(args.mode, args.limit)
    use_query_service()  # one query per process: let the shared service hold chromadb and the model
    layout, settings = _setup(args)
    _ensure_index(layout, settings, quiet=args.json)
    warnings: list[str] = []

    def on_warning(warning: EngineWarning) -> None:
        warnings.append(warning.message)
        warn(warning.message)

    hits = search(
        layout,
        settings,
        args.query,
        mode=args.mode,
        limit=args.limit,
        expand=True if args.expand else None,
        rerank=True if args.rerank else None,
        on_warning=on_warning,
    )
    if args.json:
        print_json({"results": [h.to_json() for h in hits], "warnings": warnings})
        return 0
    if not hits:
        print("no results")
        return 0
    for h in hits:
        src = ", ".join(f"{k} {v}" for k, v in h.sources.items() if v is not None)
        label = h.symbol or f"({h.kind})"
        print(f"{h.file}:{h.start_line}-{h.end_line}  {label}  score {h.score:.4f}  [{src}]")
        for line in h.snippet.splitlines():
            print(f"    {line}")
    return 0


def run_cache(args: argparse.Namespace) -> int:
    from engine.store.cache import ResultCache

    layout, settings = _setup(args)
    cache = ResultCache(layout.cache_db, ttl_days=settings.cache.ttl_days, max_mb=settings.cache.max_mb)
    try:
        if args.action == "clear":
            removed = cache.clear()
            if args.json:
                print_json({"ok": True, "removed": removed})
            else:
                print(f"removed {removed} cached entries from {layout.cache_db}")
            return 0
        stats = cache.stats()
    finally:
        cache.close()
    payload = {
        "path": str(layout.cache_db),
        "entries": stats.entries,
        "bytes": stats.bytes,
        "by_namespace": stats.by_namespace,
        "ttl_days": settings.cache.ttl_days,
        "max_mb": settings.cache.max_mb,
    }
    if args.json:
        print_json(payload)
        return 0
    print(f"cache.db: {layout.cache_db}")
    print(f"entries: {stats.entries} ({stats.bytes / 1024:.1f} KiB of {settings.cache.max_mb} MB cap)")
    print(f"ttl: {settings.cache.ttl_days} days")
    for ns, count in sorted(stats.by_namespace.items()):
        print(f"  {ns}: {count}")
    return 0


def run_metrics(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from engine.index.metrics import MetricsRecorder

    layout, settings = _setup(args)
    recorder = MetricsRecorder(layout.metrics_db, settings.metrics.level)
    try:
        days = recorder.daily(args.days)
    finally:
        recorder.close()
    if args.json:
        print_json({"level": settings.metrics.level, "days": [asdict(d) for d in days]})
        return 0
    print(f"metrics level: {settings.metrics.level}")
    if not days:
        print("no search events recorded")
        return 0
    print(
        f"{'day':<11} {'searches':>8} {'errors':>6} {'avg ms':>8} {'p95 ms':>8} {'results':>7} {'cache':>5}"
    )
    for d in days:
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
