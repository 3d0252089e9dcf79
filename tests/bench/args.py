"""Command-line parsing for the benchmark scripts that take no arguments.

They are configured by ``SEMFORA_BENCH_*`` variables (their docstrings list them). Without a
parser, ``--help`` or a mistyped option was silently ignored and started a run of many minutes
that rewrites a section of ``docs/benchmarks.md``; here ``--help`` prints the docstring and any
argument is an error (exit 2) before any work starts.
"""

from __future__ import annotations

import argparse


def no_arguments(module: str, doc: str | None, argv: list[str] | None = None) -> None:
    """Accept only ``--help`` for ``python -m tests.bench.<module>``; exit 2 on anything else."""
    parser = argparse.ArgumentParser(
        prog=f"python -m tests.bench.{module}",
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Takes no arguments: set the SEMFORA_BENCH_* variables named above instead.",
    )
    parser.parse_args(argv)
