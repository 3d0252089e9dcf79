"""Benchmark of the semantic engine on Django 5.1.4 (and Express 4.21.2), against ctags in the same run.

Run: ``python -m tests.bench.bench_engine`` (part of ``make bench``). Measures ctags,
semfora's cold index (with and without the FTS layer; with the files in the page cache and,
as root, with the page cache dropped before each run of each tool), a warm re-index, a one-file
re-index, ``search_symbols`` latency, peak RSS and definition recall vs ctags, then
writes the "engine" section of docs/benchmarks.md.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from tests.bench import corpora
from tests.bench.args import no_arguments
from tests.bench.report import write_section

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
SEMFORA = str(Path(sys.executable).with_name("semfora"))
RUNS = 3
SEARCH_QUERIES = 200
# Targets from issue 2 (the cold target is a ratio to ctags measured in this same run).
COLD_RATIO_TARGET = 8.0
# Issue 14: the whole cold index (symbols, calls and the full-text layer) within 12 × ctags.
COLD_FTS_RATIO_TARGET = 12.0
WARM_TARGET_S = 0.5
ONE_FILE_TARGET_S = 0.3
SEARCH_P95_TARGET_MS = 20.0
RSS_TARGET_MB = 400.0
RECALL_TARGET = 0.98
CTAGS_KINDS = {"class": "class", "function": "function", "member": "method"}

_INDEX_SNIPPET = """
import json, sys, time
from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
t = time.perf_counter()
r = index_repository(layout, settings, text_index=sys.argv[2] == "fts")
print(json.dumps({"seconds": time.perf_counter() - t, "files": r.files, "symbols": r.symbols,
                  "edges": r.edges, "changed": r.changed, "added": r.added}))
"""


def _tree_rss_kb(pid: int) -> int:
    """Proportional resident memory (PSS) of a process and all its descendants, from /proc.

    PSS splits pages shared by forked workers between them, so the sum is the real
    footprint; plain RSS would count the parent's copy-on-write pages once per worker.
    """
    total = 0
    stack = [pid]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/smaps_rollup", encoding="ascii") as fh:
                for line in fh:
                    if line.startswith("Pss:"):
                        total += int(line.split()[1])
                        break
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children", encoding="ascii") as fh:
                    stack.extend(int(c) for c in fh.read().split())
        except (OSError, ValueError):
            continue
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


LAST_CPU = {"seconds": 0.0}  # CPU seconds (user + sys, whole process tree) of the last measured run


def _run_measured(
    cmd: list[str], env: dict[str, str], cwd: Path | None = None, *, sample: bool = True
) -> tuple[float, str, int]:
    """Run a command; return (wall seconds, stdout, peak memory of its whole process tree in KB).

    With ``sample=False`` the memory is not sampled (peak 0): reading /proc/*/smaps_rollup every
    20 ms takes the target's memory-map lock and slows it, so timed runs are not sampled.
    """
    peak = 0
    cpu_before = _children_cpu()
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    done = threading.Event()

    def sample_memory() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, _tree_rss_kb(proc.pid))
            time.sleep(0.02)

    sampler = threading.Thread(target=sample_memory, daemon=True)
    if sample:
        sampler.start()
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    LAST_CPU["seconds"] = _children_cpu() - cpu_before
    done.set()
    if sample:
        sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed ({proc.returncode}): {err[-2000:]} {out[-500:]}")
    return wall, out, peak


def _env(cache: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        XDG_CACHE_HOME=str(cache),
        SEMFORA_EMBEDDING="none",
        OLLAMA_HOST="http://127.0.0.1:9",
        PYTHONPATH=str(ROOT),
    )
    return env


def _ctags(src: Path, out: Path) -> float:
    started = time.perf_counter()
    cpu_before = _children_cpu()
    subprocess.run(
        ["ctags", "-R", "--languages=Python", "--fields=+nK", "-f", str(out), "."], cwd=src, check=True
    )
    LAST_CPU["ctags"] = _children_cpu() - cpu_before
    return time.perf_counter() - started


def _drop_page_cache() -> bool:
    """Empty the kernel's page cache so the next run reads every file from disk (root only)."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n", encoding="ascii")
    except OSError:
        return False
    return True


def _cold_cache(src: Path, work: Path) -> dict[str, list[float]] | None:
    """ctags and semfora's cold index, each right after the page cache is dropped, alternating.

    Returns the run times (ctags; semfora in-process and whole process), or None without root.
    """
    if not _drop_page_cache():
        return None
    out: dict[str, list[float]] = {"ctags": [], "inside": [], "whole": []}
    for i in range(RUNS):
        _drop_page_cache()
        out["ctags"].append(_ctags(src, work / "tags-cold"))
        cache = work / f"cache-cold-page-{i}"
        _drop_page_cache()
        wall, stdout, _rss = _run_measured(
            [PY, "-c", _INDEX_SNIPPET, str(src), "nofts"], _env(cache), sample=False
        )
        out["inside"].append(json.loads(stdout)["seconds"])
        out["whole"].append(wall)
        shutil.rmtree(cache, ignore_errors=True)
        print(
            f"  cold page cache run {i + 1}: ctags {out['ctags'][-1]:.2f}s, semfora {wall:.2f}s", flush=True
        )
    return out


def _ctags_defs(tags: Path) -> Counter[tuple[str, str, str]]:
    defs: Counter[tuple[str, str, str]] = Counter()
    for line in tags.read_text(encoding="utf-8", errors="replace").splitlines():
        if line.startswith("!"):
            continue
        parts = line.split("\t")
        if len(parts) >= 4 and parts[3] in CTAGS_KINDS:
            defs[(parts[1].removeprefix("./"), parts[0], CTAGS_KINDS[parts[3]])] += 1
    return defs


def _recall(theirs: Counter[tuple[str, str, str]], db: Path) -> tuple[float, int, int]:
    import sqlite3

    ours: Counter[tuple[str, str]] = Counter()
    with sqlite3.connect(db) as conn:
        for file, name, _kind in conn.execute(
            "SELECT file, short_name, kind FROM symbols WHERE language = 'python' AND kind IN ('class','function','method')"
        ):
            ours[(file, name)] += 1
    # ctags calls nested functions "function" or "member" inconsistently; match on (file, name).
    wanted: Counter[tuple[str, str]] = Counter()
    for (file, name, _kind), n in theirs.items():
        wanted[(file, name)] += n
    found = sum(min(n, ours[key]) for key, n in wanted.items())
    total = sum(wanted.values())
    return found / total if total else 0.0, found, total


def _search_latency(layout_root: Path, cache: Path, names: list[str]) -> tuple[float, float]:
    os.environ["XDG_CACHE_HOME"] = str(cache)
    from engine import api as tools

    with tools.Engine.open(layout_root) as engine:
        tools.search_symbols(engine, names[0])  # open the connection, warm SQLite's page cache
        times = []
        for name in names:
            t = time.perf_counter()
            tools.search_symbols(engine, name, limit=20)
            times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95) - 1]


def _parse_floor(src: Path) -> tuple[float, float]:
    """One-core CPU seconds for tree-sitter's parse alone and for the full extraction: the floor
    under any tree-sitter indexer, and where semfora's cold time goes."""
    from tree_sitter_language_pack import get_parser

    from engine.semantic.extract import analyze_source

    files = [(p.relative_to(src).as_posix(), p.read_bytes()) for p in sorted(src.rglob("*.py"))]
    parser = get_parser("python")
    started = time.process_time()
    for _rel, data in files:
        parser.parse(data)
    parse_s = time.process_time() - started
    started = time.process_time()
    for rel, data in files:
        analyze_source(rel, data, "python")
    return parse_s, time.process_time() - started


def _cold(src: Path, work: Path, mode: str, label: str) -> tuple[list[float], dict[str, int], int]:
    """RUNS timed cold builds (not memory-sampled), then one more cold build sampled for peak memory."""
    walls: list[float] = []
    last: dict[str, int] = {}
    cpus: list[float] = []
    for i in range(RUNS):
        cache = work / f"cache-{label}-{i}"
        wall, out, _rss = _run_measured([PY, "-c", _INDEX_SNIPPET, str(src), mode], _env(cache), sample=False)
        last = json.loads(out)
        walls.append(last["seconds"])
        cpus.append(LAST_CPU["seconds"])
        print(f"  cold {label} run {i + 1}: {last['seconds']:.2f}s (process {wall:.2f}s)", flush=True)
    cache = work / f"cache-{label}-memory"
    _wall, out, peak = _run_measured([PY, "-c", _INDEX_SNIPPET, str(src), mode], _env(cache))
    print(
        f"  cold {label} memory run: {json.loads(out)['seconds']:.2f}s, tree PSS {peak / 1024:.0f} MB",
        flush=True,
    )
    shutil.rmtree(cache, ignore_errors=True)
    last["cpu"] = statistics.median(cpus)  # type: ignore[assignment]
    return walls, last, peak


def main() -> int:
    no_arguments("bench_engine", __doc__)
    load_before = os.getloadavg()[0]
    django_src = corpora.django()
    express_src = corpora.express()
    work = Path(tempfile.mkdtemp(prefix="semfora-bench-"))
    try:
        src = work / "django"
        shutil.copytree(django_src, src, symlinks=True)
        py_files = sum(1 for _ in src.rglob("*.py"))
        py_lines = sum(p.read_bytes().count(b"\n") for p in src.rglob("*.py"))
        print(f"corpus: Django 5.1.4, {py_files} .py files, {py_lines} lines", flush=True)

        tags = work / "tags"
        ctags_times, ctags_cpus = [], []
        for _ in range(RUNS):
            ctags_times.append(_ctags(src, tags))
            ctags_cpus.append(LAST_CPU["ctags"])
        ctags_s, ctags_cpu = statistics.median(ctags_times), statistics.median(ctags_cpus)
        print(f"ctags median {ctags_s:.2f}s", flush=True)

        parse_s, extract_s = _parse_floor(src)
        print(
            f"tree-sitter parse only {parse_s:.2f}s, full extraction {extract_s:.2f}s (one core)", flush=True
        )

        cold_page = _cold_cache(src, work)
        cold_times, cold, peak_rss = _cold(src, work, "nofts", "no-fts")
        cold_fts_times, cold_fts, peak_fts = _cold(src, work, "fts", "fts")
        cold_s, cold_fts_s = statistics.median(cold_times), statistics.median(cold_fts_times)

        cache = work / "cache-fts-0"
        env = _env(cache)
        warm_runs, warm_cli = [], []
        for _ in range(RUNS):
            wall, out, _rss = _run_measured([PY, "-c", _INDEX_SNIPPET, str(src), "fts"], env, sample=False)
            warm_runs.append(json.loads(out)["seconds"])
            wall_cli, out_cli, _ = _run_measured(
                [SEMFORA, "index", "--path", str(src), "--no-vectors", "--json"], env, sample=False
            )
            assert json.loads(out_cli)["changed"] == 0
            warm_cli.append(wall_cli)
        warm_s, warm_cli_s = statistics.median(warm_runs), statistics.median(warm_cli)

        target = src / "django" / "utils" / "text.py"
        one_runs = []
        for i in range(RUNS):
            with target.open("a", encoding="utf-8") as fh:
                fh.write(f"\n\ndef bench_added_{i}(value):\n    return capfirst(value)\n")
            _wall, out, _ = _run_measured([PY, "-c", _INDEX_SNIPPET, str(src), "fts"], env, sample=False)
            report = json.loads(out)
            assert report["changed"] == 1, report
            one_runs.append(report["seconds"])
        one_s = statistics.median(one_runs)

        defs = _ctags_defs(tags)
        rng = random.Random(4)
        names = rng.sample(sorted({name for (_f, name, _k) in defs}), SEARCH_QUERIES)
        p50, p95 = _search_latency(src, cache, names)

        db = next(cache.glob("semfora/*/index.db"))
        recall, found, total = _recall(defs, db)

        exp = work / "express"
        shutil.copytree(express_src, exp, symlinks=True)
        _w, out, _ = _run_measured([PY, "-c", _INDEX_SNIPPET, str(exp), "fts"], _env(work / "cache-express"))
        express = json.loads(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    load_after = os.getloadavg()[0]
    ratio, ratio_fts = cold_s / ctags_s, cold_fts_s / ctags_s
    rss_mb = max(peak_rss, peak_fts) / 1024

    def ok(good: bool) -> str:
        return "met" if good else "**missed**"

    if cold_page is not None:
        page_ctags = statistics.median(cold_page["ctags"])
        page_whole = statistics.median(cold_page["whole"])
        page_inside = statistics.median(cold_page["inside"])
        page_ratio = page_whole / page_ctags
        page_rows = (
            f"| `ctags -R --languages=Python` with a **cold page cache** (dropped before each run) | "
            f"{page_ctags:.2f} s | baseline | |\n"
            f"| cold index with a cold page cache: whole process (Python start-up included) / inside it | "
            f"{page_whole:.2f} s = **{page_ratio:.1f} × ctags** / {page_inside:.2f} s = "
            f"{page_inside / page_ctags:.1f} × | ≤ {COLD_RATIO_TARGET:.0f} × ctags | {ok(page_ratio <= COLD_RATIO_TARGET)} |\n"
        )
        page_text = (
            f"Which page cache the target means: issue 2 quotes ctags at 0.84 s on this machine. Here ctags "
            f"takes {ctags_s:.2f} s when Django's files are already in memory and {page_ctags:.2f} s when "
            f"the page cache was dropped first (runs: {', '.join(f'{t:.2f}' for t in cold_page['ctags'])}), so "
            "the issue's figure is a cold-page-cache one: a first `semfora index` after a reboot, or on a "
            "repository whose files have not been read for a while. Measured the same way, with the page cache dropped before each run of each tool "
            f"(semfora whole-process runs: {', '.join(f'{t:.2f}' for t in cold_page['whole'])} s), the cold "
            f"index is {page_ratio:.1f} × ctags: **{ok(page_ratio <= COLD_RATIO_TARGET)}**. With everything "
            f"already in the page cache it is {ratio:.1f} × ctags: {ok(ratio <= COLD_RATIO_TARGET)}; ctags "
            "gains far more from a warm cache (its parse is cheap next to reading the files) than an indexer "
            "that parses, resolves and stores calls."
        )
    else:
        page_rows = (
            "| cold index with a cold page cache | not measured: dropping the page cache needs root | | |\n"
        )
        page_text = (
            "Run as root to measure with a cold page cache (the conditions of the issue's 0.84 s ctags)."
        )

    body = f"""## Semantic engine (issue 2)

Reproduce: `python -m tests.bench.bench_engine` (or `make bench BENCH=bench_engine`; as root for the cold-page-cache rows). Corpus: the Django 5.1.4
sdist (`pip download --no-deps --no-binary :all: django==5.1.4`), {py_files} `.py` files, {py_lines:,} lines,
copied to a temporary directory that is not a git repository (so discovery walks the tree). Every figure is
the median of {RUNS} runs in this one process; engine times are measured inside the indexing process
(`index_repository`), and the whole-command time of `semfora index` is given beside them.

| measure | result | target | |
|---|---|---|---|
{page_rows}| `ctags -R --languages=Python` (definitions only), files already in the page cache | {ctags_s:.2f} s | baseline | |
| cold index: symbols, calls, graphs (no FTS, no vectors), files already in the page cache | {cold_s:.2f} s = **{ratio:.1f} × ctags** | ≤ {COLD_RATIO_TARGET:.0f} × ctags | {ok(ratio <= COLD_RATIO_TARGET)} |
| for scale: tree-sitter parse alone / full extraction, one core (CPU s) | {parse_s:.2f} s = {parse_s / ctags_s:.1f} × ctags / {extract_s:.2f} s | | |
| the same in CPU seconds (user + sys, whole process tree): semfora cold (no FTS) / ctags | {cold["cpu"]:.2f} s / {ctags_cpu:.2f} s = {cold["cpu"] / ctags_cpu:.1f} × | | |
| cold index with the FTS/chunk layer (issue 14: ≤ {COLD_FTS_RATIO_TARGET:.0f} × ctags, page cache warm) | {cold_fts_s:.2f} s = **{ratio_fts:.1f} × ctags** | ≤ {COLD_FTS_RATIO_TARGET:.0f} × ctags | {ok(ratio_fts <= COLD_FTS_RATIO_TARGET)} |
| warm re-index, nothing changed (with FTS) | {warm_s:.3f} s (whole `semfora index` command: {warm_cli_s:.2f} s) | ≤ {WARM_TARGET_S} s | {ok(warm_s <= WARM_TARGET_S)} |
| re-index after one file changed (with FTS) | {one_s:.3f} s | ≤ {ONE_FILE_TARGET_S} s | {ok(one_s <= ONE_FILE_TARGET_S)} |
| `search_symbols` over {SEARCH_QUERIES} real names | p50 {p50:.2f} ms, p95 {p95:.2f} ms | p95 ≤ {SEARCH_P95_TARGET_MS:.0f} ms | {ok(p95 <= SEARCH_P95_TARGET_MS)} |
| peak memory (PSS of the whole process tree, sampled from /proc every 20 ms in one extra cold run per mode; the timed runs are not sampled, since sampling slows the process it reads) | {rss_mb:.0f} MB | ≤ {RSS_TARGET_MB:.0f} MB | {ok(rss_mb <= RSS_TARGET_MB)} |
| definition recall vs ctags (classes, functions, methods) | {recall:.2%} ({found:,} of {total:,}) | ≥ {RECALL_TARGET:.0%} | {ok(recall >= RECALL_TARGET)} |

{page_text}

Index contents: {cold["files"]} files, {cold["symbols"]:,} symbols, {cold["edges"]:,} call sites.
Cold runs (s): no FTS {", ".join(f"{t:.2f}" for t in cold_times)}; with FTS {", ".join(f"{t:.2f}" for t in cold_fts_times)};
ctags {", ".join(f"{t:.2f}" for t in ctags_times)}. For reference, Aider's repo map took 38.7 s cold and 9.8 s
warm on this corpus (issue 2).

Where the cold time goes: the extraction alone (tree-sitter parse and queries plus the Python that
turns captures into symbols, calls and imports) costs {extract_s:.2f} CPU s on one core; split perfectly
over both cores that is {extract_s / 2:.2f} s = {extract_s / 2 / ctags_s:.1f} × ctags before anything is stored or a
call resolved, which leaves {COLD_RATIO_TARGET * ctags_s - extract_s / 2:.2f} s of the target for storing 40k
symbols and 170k calls in SQLite, resolving the calls and building the indexes.

Machine load (1-minute average, 2 cores) was {load_before:.1f} at the start and {load_after:.1f} at the end
of this run (the benchmark's own processes raise it; a start above ~1 means other work shared the cores).

Express 4.21.2 (`npm pack express@4.21.2`): {express["files"]} files, **{express["symbols"]} symbols**,
{express["edges"]} call sites, indexed cold in {express["seconds"]:.2f} s.
"""
    write_section("engine", body)
    print(body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
