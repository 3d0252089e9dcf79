"""Every benchmark script answers ``--help`` and refuses a mistyped argument before it starts work.

A run takes minutes and rewrites its section of docs/benchmarks.md; before, ``--help`` or a typo was
ignored and started one. Each script runs as ``python -m tests.bench.<name>`` would, in a child
process whose ``write_section`` fails loudly, so a script that ignored its arguments cannot touch
the docs while this test fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCHES = sorted(p.stem for p in (ROOT / "tests" / "bench").glob("bench_*.py"))

_RUN = """
import runpy, sys
import tests.bench.report as report
def refuse(name, body):
    raise SystemExit("the benchmark started and tried to write its section " + name)
report.write_section = refuse
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
"""


def _run(module: str, *args: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SEMFORA_BENCH_WORK": str(tmp), "SEMFORA_BENCH_CACHE": str(tmp / "cache")}
    return subprocess.run(
        [sys.executable, "-c", _RUN, f"tests.bench.{module}", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_benchmark_is_found() -> None:
    assert {"bench_scale", "bench_engine", "bench_context", "bench_ci"} <= set(BENCHES)


@pytest.mark.parametrize("name", BENCHES)
def test_help_prints_what_the_benchmark_measures_and_runs_nothing(name: str, tmp_path: Path) -> None:
    proc = _run(name, "--help", tmp=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage:")
    first_line = __import__(f"tests.bench.{name}", fromlist=["_"]).__doc__.strip().splitlines()[0]
    assert " ".join(first_line.split()) in " ".join(proc.stdout.split())  # reflowed or not
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("name", BENCHES)
def test_a_mistyped_argument_is_an_error_not_a_run(name: str, tmp_path: Path) -> None:
    proc = _run(name, "--corpus-typo", "django", tmp=tmp_path)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "unrecognized arguments: --corpus-typo" in proc.stderr


def test_make_bench_names_the_benchmarks_when_one_is_mistyped(tmp_path: Path) -> None:
    proc = _run("run_all", "bench_scal", tmp=tmp_path)
    assert proc.returncode == 2
    assert "no benchmark named bench_scal" in proc.stderr
    assert "bench_scale" in proc.stderr
    assert "==" not in proc.stdout  # nothing was started
