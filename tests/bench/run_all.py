"""`make bench`: run every benchmark script in this folder (bench_*.py), in order.

Each script writes its own section of docs/benchmarks.md. A failing script is
reported and the rest still run; the exit code says whether all succeeded.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    failed = []
    only = set(sys.argv[1:])
    for script in sorted(HERE.glob("bench_*.py")):
        if only and script.stem not in only:
            continue
        print(f"== {script.name}", flush=True)
        proc = subprocess.run(
            [sys.executable, "-m", f"tests.bench.{script.stem}"], cwd=HERE.parents[1], check=False
        )
        if proc.returncode != 0:
            failed.append(script.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
