"""Write one benchmark's figures into docs/benchmarks.md between its own markers.

Each benchmark owns a section ``<!-- BEGIN name --> ... <!-- END name -->`` so
that benchmarks can run separately without clobbering each other's figures.
"""

from __future__ import annotations

import platform
import re
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "benchmarks.md"
HEADER = (
    "# Benchmarks\n\n"
    "Every figure here is written by `make bench` (or the command shown in its section).\n"
    "The machine has 2 cores and is shared and noisy: figures are medians, and each target that\n"
    "depends on machine speed is compared with a baseline measured in the same run.\n"
)


def machine_line() -> str:
    try:
        commit = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        commit = "?"
    return (
        f"_Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"Python {platform.python_version()}, commit {commit}._"
    )


def write_section(name: str, body: str) -> None:
    DOC.parent.mkdir(parents=True, exist_ok=True)
    text = DOC.read_text(encoding="utf-8") if DOC.exists() else HEADER
    block = f"<!-- BEGIN {name} -->\n{body.rstrip()}\n\n{machine_line()}\n<!-- END {name} -->"
    pattern = re.compile(rf"<!-- BEGIN {re.escape(name)} -->.*?<!-- END {re.escape(name)} -->", re.S)
    text = (
        pattern.sub(lambda _m: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    )
    DOC.write_text(text, encoding="utf-8")
