"""Benchmark: context packs on the public query set (Flask 3.1.0 and Django 5.1.4) at --budget 8000.

Method: each corpus (PyPI sdist) is copied, `git init`ed and indexed once with vectors off
(`SEMFORA_EMBEDDING=none`, so the figures do not depend on a local embedding model). Every
query of the search benchmark's public set (`tests/bench/queries/`) is then given to
`Orchestrator.build_context` as a task, in one warm process, and measured:

- gold recall: the share of gold symbols present in the pack as source or summary (a source
  item whose lines contain the gold symbol counts: the model sees it);
- pack size in tokens (the median, and the maximum against the budget);
- reduction, per task: 1 - pack tokens / tokens of reading every gold file of that task in
  full (chars/4, the same estimator as the pack; the pack's tokens include every item the
  model is sent, the overview too). Reported as the median over tasks and, as before, in
  aggregate (1 - sum of pack tokens / sum of gold-file tokens);
- latency: `build_context` wall time in the warm process (what the app pays), and the
  `semfora context --json` command end to end (a fresh interpreter each time, with the
  project's bytecode compiled first, as an installed package has it).

Run: ``python -m tests.bench.bench_context``
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.bench.corpora import django, flask
from tests.bench.report import write_section

HERE = Path(__file__).resolve().parent
QUERIES = HERE / "queries"
BUDGET = 8000
TARGET_RECALL = 0.85
TARGET_MEDIAN_TOKENS = 4000
TARGET_REDUCTION = 0.80
TARGET_P50_MS = 300.0
# Gold files under this many tokens cannot give an 80% per-task reduction with a useful pack.
SMALL_GOLD_FILE = 2000
# Fresh-process runs of `semfora context` per corpus: enough for a stable median.
CLI_RUNS = 7
# What `semfora context` must import before it can do anything: the floor of a fresh process.
IMPORT_FLOOR = (
    "import semfora_tui.cli.main, engine.config, engine.orchestrator.core, engine.store.db, "
    "engine.index.hybrid, engine.edits.sandbox, engine.llm.summarizer"
)
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}


@dataclass(frozen=True)
class Gold:
    file: str | None
    symbol: str


@dataclass(frozen=True)
class Query:
    corpus: str
    text: str
    gold: tuple[Gold, ...]
    heldout: bool = False  # from queries/heldout.json: reported on its own line, not in the targets


def _gold(entry: Any) -> Gold:
    if isinstance(entry, list | tuple) and len(entry) == 2:
        return Gold(str(entry[0]), str(entry[1]))
    if isinstance(entry, dict):
        return Gold(entry.get("file"), str(entry.get("symbol") or entry.get("qualified_name")))
    return Gold(None, str(entry))


def load_queries(corpus: str) -> list[Query]:
    """Tasks of one corpus from the search benchmark's public set (``queries/tasks.json``, the
    targets' set) and its held-out set (``queries/heldout.json``, reported apart)."""
    out: list[Query] = []
    for name, heldout in (("tasks.json", False), ("heldout.json", True)):
        path = QUERIES / name
        if not path.is_file():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        rows = data.get("tasks", []) if isinstance(data, dict) else data
        out += [
            Query(corpus, str(row["query"]), tuple(_gold(g) for g in row["gold"]), heldout)
            for row in rows
            if row.get("corpus") == corpus and row.get("query") and row.get("gold")
        ]
    return out


def _git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV}
    )


def prepare(src: Path, dest: Path) -> Path:
    root = dest / src.name
    shutil.copytree(src, root)
    _git(root, "init", "-q", "-b", "main")
    return root


def present(gold: Gold, items: list[Any]) -> bool:
    for item in items:
        if gold.file and item.file != gold.file:
            continue
        if item.symbol == gold.symbol and item.kind in ("source", "summary", "symbol"):
            return True
    # A source item that contains the gold symbol's lines shows it too.
    return False


def contained(gold_sym: Any, items: list[Any]) -> bool:
    return any(
        i.kind in ("source", "file")
        and i.file == gold_sym.file
        and i.start_line is not None
        and i.start_line <= gold_sym.start_line
        and gold_sym.end_line <= (i.end_line or 0)
        for i in items
    )


def run_corpus(name: str, src: Path, tmp: Path) -> dict[str, Any]:
    from engine.config import load_settings
    from engine.llm.tokens import estimate_tokens
    from engine.orchestrator.core import Orchestrator
    from engine.store.db import SymbolStore
    from engine.store.indexer import index_repository
    from engine.store.layout import RepoLayout

    queries = load_queries(name)
    root = prepare(src, tmp)
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    t = time.perf_counter()
    index_repository(layout, settings)
    index_s = time.perf_counter() - t
    orch = Orchestrator(layout, settings)
    store = SymbolStore(layout)
    orch.build_context("warm up: explain the main entry point", budget=BUDGET)  # imports, caches
    rows = []
    for q in queries:
        t = time.perf_counter()
        task_orch = Orchestrator(layout, settings)  # a fresh session: tasks are independent
        pack = task_orch.build_context(q.text, budget=BUDGET)
        task_orch.close()
        ms = (time.perf_counter() - t) * 1000
        items = list(pack.items)
        hits = 0
        files: set[str] = set()
        for g in q.gold:
            ok = present(g, items)
            if not ok:
                for sym in store.symbols_by_name(g.symbol, limit=5):
                    if (g.file is None or sym.file == g.file) and contained(sym, items):
                        ok = True
                        break
            hits += ok
            if g.file:
                files.add(g.file)
            else:
                found = store.symbols_by_name(g.symbol, limit=1)
                if found:
                    files.add(found[0].file)
        full = sum(
            estimate_tokens((layout.root / f).read_text(encoding="utf-8", errors="replace"))
            for f in files
            if (layout.root / f).is_file()
        )
        drawn = {i.file for i in items if i.file}
        drawn_full = sum(
            estimate_tokens((layout.root / f).read_text(encoding="utf-8", errors="replace"))
            for f in drawn
            if (layout.root / f).is_file()
        )
        rows.append(
            {
                "drawn": drawn_full,
                "corpus": name,
                "heldout": q.heldout,
                "task": q.text,
                "intent": pack.intent,
                "gold": len(q.gold),
                "hits": hits,
                "tokens": pack.total_tokens,
                "full": full,
                "ms": ms,
            }
        )
    store.close()
    orch.close()
    _compile_bytecode()
    cli = []
    task = queries[0].text if queries else "explain the main entry point"
    env = {**os.environ, "SEMFORA_EMBEDDING": "none"}
    exe = str(Path(sys.executable).with_name("semfora"))
    for _ in range(CLI_RUNS):
        t = time.perf_counter()
        proc = subprocess.run(
            [exe, "context", task, "--budget", str(BUDGET), "--json"],
            cwd=root,
            capture_output=True,
            text=True,
            env=env,
            check=False,
        )
        cli.append((time.perf_counter() - t) * 1000)
        if proc.returncode != 0:
            raise RuntimeError(f"semfora context failed: {proc.stderr}")
    imports = []
    for _ in range(CLI_RUNS):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORT_FLOOR], check=True, env=env)
        imports.append((time.perf_counter() - t) * 1000)
    return {"rows": rows, "index_s": index_s, "cli_ms": cli, "import_ms": imports}


def _compile_bytecode() -> None:
    """Write fresh .pyc files for the project, as ``pip install`` does for a user.

    Without this, a checkout whose modules changed since their bytecode was written (or run
    with PYTHONDONTWRITEBYTECODE) recompiles them in every fresh process, which is not what an
    installed semfora pays: ~10 ms for each large module.
    """
    import compileall

    project = Path(__file__).resolve().parents[2]
    for package in ("engine", "semfora_tui"):
        compileall.compile_dir(str(project / package), quiet=1)


def _summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    gold = sum(r["gold"] for r in rows)
    tokens = [r["tokens"] for r in rows]
    full = sum(r["full"] for r in rows)
    return {
        "n": len(rows),
        "recall": sum(r["hits"] for r in rows) / gold if gold else 0.0,
        "any": sum(1 for r in rows if r["hits"]) / len(rows) if rows else 0.0,
        "median_tokens": statistics.median(tokens) if tokens else 0,
        "max_tokens": max(tokens) if tokens else 0,
        "reduction": 1 - sum(tokens) / full if full else 0.0,
        "task_reduction": statistics.median(1 - r["tokens"] / r["full"] for r in rows if r["full"])
        if any(r["full"] for r in rows)
        else 0.0,
        "tasks_at_target": sum(
            1 for r in rows if r["full"] and 1 - r["tokens"] / r["full"] >= TARGET_REDUCTION
        ),
        "drawn": 1 - sum(tokens) / sum(r["drawn"] for r in rows)
        if rows and sum(r["drawn"] for r in rows)
        else 0.0,
        "p50_ms": statistics.median(r["ms"] for r in rows) if rows else 0.0,
    }


def _line(label: str, s: dict[str, float]) -> str:
    return (
        f"| {label} | {s['n']} | {s['recall']:.2f} | {s['any']:.2f} | {s['median_tokens']:.0f} | "
        f"{s['max_tokens']:.0f} | {s['task_reduction'] * 100:.0f}% | {s['reduction'] * 100:.0f}% | "
        f"{s['tasks_at_target']:.0f} | {s['p50_ms']:.0f} |"
    )


def main() -> None:
    os.environ["SEMFORA_EMBEDDING"] = "none"
    with tempfile.TemporaryDirectory(prefix="semfora-bench-context-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
        results = {
            name: run_corpus(name, fn(), Path(tmp)) for name, fn in (("flask", flask), ("django", django))
        }
    heldout = [r for res in results.values() for r in res["rows"] if r["heldout"]]
    for res in results.values():
        res["rows"] = [r for r in res["rows"] if not r["heldout"]]
    rows = [r for res in results.values() for r in res["rows"]]
    if not rows:
        raise SystemExit(f"no queries found under {QUERIES}")
    total = _summary(rows)
    by_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_intent[r["intent"]].append(r)
    header = (
        "| set | tasks | gold recall | tasks with a gold symbol | median tokens | max tokens "
        "| reduction, median per task | reduction, aggregate | tasks >= 80% | build p50 ms |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [header, _line("**all**", total)]
    lines += [_line(f"{name}", _summary(res["rows"])) for name, res in results.items()]
    lines += [_line(f"intent: {intent}", _summary(rs)) for intent, rs in sorted(by_intent.items())]
    if heldout:
        lines.append(_line("held-out set (not in the targets)", _summary(heldout)))
    over = sum(1 for r in rows if r["tokens"] > BUDGET)
    small = sum(1 for r in rows if r["full"] < SMALL_GOLD_FILE)
    dj_cli = statistics.median(results["django"]["cli_ms"])
    fl_cli = statistics.median(results["flask"]["cli_ms"])

    def verdict(ok: bool) -> str:
        return "met" if ok else "**missed**"

    body = f"""## Context packs (`semfora context`, budget {BUDGET})

Command: `python -m tests.bench.bench_context` (corpora: Flask 3.1.0 and Django 5.1.4 sdists;
queries: the public set `tests/bench/queries/tasks.json`, plus a last row for the held-out
`heldout.json`, which the targets do not count; vectors off, extractive summaries).
Each query is the task; gold symbols count as present when the pack holds them as source,
summary or locator, or holds a source item containing their lines.

{chr(10).join(lines)}

| measure | target | measured | |
|---|---|---|---|
| gold symbols present in the pack | >= {TARGET_RECALL} | {total["recall"]:.2f} | {verdict(total["recall"] >= TARGET_RECALL)} |
| median pack size | <= {TARGET_MEDIAN_TOKENS} tokens | {total["median_tokens"]:.0f} | {verdict(total["median_tokens"] <= TARGET_MEDIAN_TOKENS)} |
| packs above the budget | 0 | {over} of {len(rows)} | {verdict(over == 0)} |
| reduction vs reading every gold file in full, per task (median of 1 - pack/gold files) | >= {TARGET_REDUCTION * 100:.0f}% | {total["task_reduction"] * 100:.0f}% | {verdict(total["task_reduction"] >= TARGET_REDUCTION)} |
| the same, aggregate (1 - all pack tokens / all gold-file tokens) | >= {TARGET_REDUCTION * 100:.0f}% | {total["reduction"] * 100:.1f}% | {verdict(total["reduction"] >= TARGET_REDUCTION)} |
| context on warm Django, p50 (in the running app) | <= {TARGET_P50_MS:.0f} ms | {_summary(results["django"]["rows"])["p50_ms"]:.0f} ms | {verdict(_summary(results["django"]["rows"])["p50_ms"] <= TARGET_P50_MS)} |
| `semfora context --json` as a fresh process, warm Django, p50 of {CLI_RUNS} | (same target) | {dj_cli:.0f} ms | {verdict(dj_cli <= TARGET_P50_MS)} |

How the packs stay small: the targets get source (edit) or a summary plus one short source
(explain/general), their callers/callees and the ranked tail get one-line summaries
(signature and first doc sentence), the tail stops at 10% of the budget or when scores fall
below a share of the best, and the overview is capped at 3% of the budget. Per task, the
reduction cannot reach 80% where the gold file is small: {small} of {len(rows)} tasks have gold
files under {SMALL_GOLD_FILE} tokens (e.g. Django's `template/loader.py`, ~500 tokens), where
even a 300-token pack is a small reduction or a negative one; Flask, whose gold files are
larger, comes to {_summary(results["flask"]["rows"])["task_reduction"] * 100:.0f}% per task.
Against reading in full every file the pack draws from (what a tool without symbol-level
retrieval would send to show the same code), the packs are {total["drawn"] * 100:.0f}% smaller.
Flask `semfora context --json` fresh-process p50: {fl_cli:.0f} ms. Indexing (not part of the
figures): Flask {results["flask"]["index_s"]:.1f} s, Django {results["django"]["index_s"]:.1f} s.
The fresh-process figure includes starting Python and importing the engine: a bare
`python -c "import ..."` of the modules it needs takes {statistics.median(results["django"]["import_ms"]):.0f} ms
(p50) in the same run (pydantic settings are most of it), so the fresh-process figure sits
close to the 300 ms target and moves with machine load; inside a running process (the app,
the MCP server) the Django p50 is the in-app figure above.
For comparison, the issue
quotes Aider's repo map at 9.8 s warm on the same corpus (not re-measured here).
"""
    write_section("context", body)
    print(body)


if __name__ == "__main__":
    main()
