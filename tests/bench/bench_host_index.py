"""A first build asked for by a host that runs threads (the app, `semfora mcp`): in its own thread
(as before) against a child process (engine.index.child), on Django 5.1.4.

The host runs a ticker thread (a 10 ms timer, as a UI's refresh) beside the build; how late its ticks
fire is what a user of the app feels as lag while the first index is built. Reported per way:
the build's wall time, the host process's own CPU, the processes that resolved calls, and the
ticks' lateness (median, 99th percentile, worst). Runs alternate between the two ways.

    python -m tests.bench.bench_host_index      (SEMFORA_BENCH_RUNS, default 3)
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.bench import corpora
from tests.bench.args import no_arguments
from tests.bench.report import write_section

ROOT = Path(__file__).resolve().parents[2]
RUNS = int(os.environ.get("SEMFORA_BENCH_RUNS", "3"))

_HOST = """
import json, resource, sys, threading, time
from engine.config import load_settings
from engine.repo.layout import RepoLayout
late, stop = [], threading.Event()
def ticker():
    while not stop.is_set():
        t = time.perf_counter()
        time.sleep(0.01)
        late.append(time.perf_counter() - t - 0.01)
thread = threading.Thread(target=ticker, daemon=True)
thread.start()
layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
if sys.argv[2] == "child":
    from engine.index.child import index_in_child as run
else:
    from engine.index.indexer import index_repository as run
started = time.perf_counter()
report = run(layout, settings)
wall = time.perf_counter() - started
stop.set()
thread.join()
late.sort()
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"wall": wall, "host_cpu": me.ru_utime + me.ru_stime, "resolve": report.resolve_processes,
                  "p50": late[len(late) // 2], "p99": late[int(len(late) * 0.99)], "max": late[-1]}))
"""

WAYS = (("in the host's thread (before)", "thread"), ("in a child process (now)", "child"))


def _repo(work: Path) -> Path:
    dest = work / "django"
    shutil.copytree(corpora.django(), dest, symlinks=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@x", "GIT_COMMITTER_NAME": "b"}
    env["GIT_COMMITTER_EMAIL"] = "b@x"
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "corpus"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, env=env)
    return dest


def _run(root: Path, way: str, cache: Path) -> dict[str, float]:
    shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "SEMFORA_EMBEDDING": "none", "PYTHONPATH": str(ROOT)}
    env["OLLAMA_HOST"] = "http://127.0.0.1:9"
    out = subprocess.run(
        [sys.executable, "-c", _HOST, str(root), way],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    no_arguments("bench_host_index", __doc__)
    work = Path(os.environ.get("SEMFORA_BENCH_WORK") or tempfile.mkdtemp(prefix="semfora-host-")) / "host"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    root = _repo(work)
    load = os.getloadavg()[0]
    results: dict[str, list[dict[str, float]]] = {way: [] for _, way in WAYS}
    for i in range(RUNS):
        for label, way in WAYS:
            got = _run(root, way, work / f"cache-{way}")
            results[way].append(got)
            print(
                f"  run {i + 1} {label}: {got['wall']:.2f} s, worst tick {got['max'] * 1000:.0f} ms",
                flush=True,
            )
    lines = [
        "## A first build from a host with threads (the app, `semfora mcp`)",
        "",
        "Reproduce: `python -m tests.bench.bench_host_index`. Django 5.1.4 (PyPI sdist, committed to a fresh",
        f"git repository), {RUNS} runs of each way, alternated; medians. The host runs a 10 ms ticker thread",
        "beside the build (a UI's refresh); its lateness is the lag a user of the app feels meanwhile.",
        "",
        "| the build runs | wall s | host CPU s | processes resolving calls | tick late p50 ms | p99 ms | worst ms |",
        "|---|---|---|---|---|---|---|",
    ]
    for label, way in WAYS:
        rows = results[way]

        def med(key: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(r[key] for r in rows)

        lines.append(
            f"| {label} | {med('wall'):.2f} | {med('host_cpu'):.2f} | {int(med('resolve'))} | "
            f"{med('p50') * 1000:.1f} | {med('p99') * 1000:.1f} | {med('max') * 1000:.0f} |"
        )
    lines += ["", f"Machine load (1-minute average, 2 cores) at the start: {load:.1f}."]
    write_section("host_index", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
