"""`make bench`: run every benchmark script in this folder (bench_*.py), in order.

Each script writes its own section of docs/benchmarks.md. A failing script is
reported and the rest still run; the exit code says whether all succeeded.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    names = [s.stem for s in scripts]
    parser = argparse.ArgumentParser(
        prog="python -m tests.bench.run_all",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Benchmarks: " + ", ".join(names) + ". `make bench BENCH=bench_scale` runs one.",
    )
    parser.add_argument("only", nargs="*", metavar="BENCH", help="run only these (default: all)")
    only = set(parser.parse_args(argv).only)
    # A mistyped name used to run nothing and exit 0; name the ones that exist instead.
    unknown = sorted(only - set(names))
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)} (there are: {', '.join(names)})")
    failed = []
    for script in scripts:
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
