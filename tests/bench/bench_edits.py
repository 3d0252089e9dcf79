"""Staging many files at once: `semfora edits stage` with one reply creating N new files.

Issue 13 measured 1.1 / 3.7 / 14.6 s for 250 / 500 / 1,000 new files (every file rebuilt every
staged file's diff). Staging must grow linearly: the figure to watch is the time per file,
which should stay flat as N grows. Run: `python -m tests.bench.bench_edits`.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.args import no_arguments
from tests.bench.report import write_section

SIZES = (250, 500, 1000, 2000)
RUNS = 3
# The figures for the same command before the fix (quadratic), for the ratio column.
BEFORE_SECONDS = {250: 1.1, 500: 3.7, 1000: 14.6}
SEMFORA = str(Path(sys.executable).with_name("semfora"))


def _reply(n: int) -> str:
    return "".join(
        f"pkg/mod_{i}.py\n<<<<<<< SEARCH\n=======\ndef f_{i}(x):\n    return x + {i}\n>>>>>>> REPLACE\n\n"
        for i in range(n)
    )


def _stage_once(n: int, work: Path) -> float:
    repo = Path(tempfile.mkdtemp(prefix=f"stage{n}-", dir=work))
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "README.md").write_text("bench\n")
    reply = repo.parent / f"{repo.name}.reply"
    reply.write_text(_reply(n))
    env = {**os.environ, "XDG_CACHE_HOME": str(work / "cache"), "SEMFORA_EMBEDDING": "none"}
    started = time.perf_counter()
    proc = subprocess.run(
        [SEMFORA, "edits", "stage", str(reply), "--path", str(repo), "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"edits stage failed for {n} files: {proc.stderr}")
    return elapsed


def main() -> int:
    no_arguments("bench_edits", __doc__)
    work = Path(os.environ.get("SEMFORA_BENCH_WORK") or tempfile.mkdtemp(prefix="bench-edits-")) / "edits"
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for n in SIZES:
        times = [_stage_once(n, work) for _ in range(RUNS)]
        median = statistics.median(times)
        rows.append((n, median))
        print(f"{n} files: median {median:.2f}s ({median / n * 1000:.2f} ms/file)", flush=True)
    base_per_file = rows[0][1] / rows[0][0]
    lines = [
        "## Staging many files (`semfora edits stage`)",
        "",
        "One reply creating N new files, staged by the real `semfora edits stage --json` (process start",
        f"included), median of {RUNS} runs. Before the fix (issue 13) every file rebuilt every staged",
        "file's diff: 1.1 / 3.7 / 14.6 s for 250 / 500 / 1,000 files. Linear staging keeps the time",
        "per file flat. The same command at the commit before the fix, measured once on this machine",
        "while it was loaded: 2.04 / 7.43 / 31.43 s for 250 / 500 / 1,000 files.",
        "",
        "Reproduce: `nice python -m tests.bench.bench_edits`.",
        "",
        "| files | median seconds | ms per file | per file vs 250 files | before the fix (issue 13) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for n, median in rows:
        before = f"{BEFORE_SECONDS[n]:.1f} s" if n in BEFORE_SECONDS else "-"
        lines.append(
            f"| {n:,} | {median:.2f} | {median / n * 1000:.2f} | {median / n / base_per_file:.2f}x | {before} |"
        )
    write_section("edits-staging", "\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
