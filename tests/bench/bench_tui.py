"""First frame of the app: time from process start to the first painted screen, in a real pty.

Runs the real `semfora REPO` console script in a pseudo-terminal (120x40) and stops the
clock when the first full frame (the header, the three panes and the footer) has been
written. The same-run baseline is a bare Textual app that paints one line, measured the
same way, so the ratio says what semfora adds on top of Textual itself.

    python -m tests.bench.bench_tui
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import select
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from pathlib import Path

from tests.bench.args import no_arguments
from tests.bench.report import write_section

ROOT = Path(__file__).resolve().parents[2]
SEMFORA = str(Path(sys.executable).with_name("semfora"))
# Runs per command; medians of 7 are stable on the shared 2-core machine.
RUNS = 7
TARGET_SECONDS = 1.0
# A run that has not painted after this long is a failure, not a slow frame.
GIVE_UP_SECONDS = 30.0
SIZE = (40, 120)  # rows, columns
# The last thing the first frame paints: the footer's palette hint and the budget pane title.
SEMFORA_MARKERS = (b"context budget", b"palette")
BASELINE_MARKERS = (b"hello from textual",)
BASELINE_APP = (
    "from textual.app import App\n"
    "from textual.widgets import Static\n"
    "class Hello(App):\n"
    "    def compose(self):\n"
    "        yield Static('hello from textual')\n"
    "Hello().run()\n"
)
SOURCE = "def parse_port(text):\n    return int(text)\n\n\ndef start(path):\n    return parse_port(path)\n"


def first_frame(argv: list[str], markers: tuple[bytes, ...], env: dict[str, str]) -> float:
    """Seconds from spawning ``argv`` in a pty until every marker has been written to it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", SIZE[0], SIZE[1], 0, 0))
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True, start_new_session=True
    )
    os.close(slave)
    seen = b""
    elapsed = None
    try:
        while time.perf_counter() - started < GIVE_UP_SECONDS:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                seen += chunk
                if all(m in seen for m in markers):
                    elapsed = time.perf_counter() - started
                    break
            elif proc.poll() is not None:
                break
    finally:
        with contextlib.suppress(ProcessLookupError):  # it may have exited already
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        os.close(master)
    if elapsed is None:
        raise RuntimeError(f"{argv[0]} painted no first frame; output tail: {seen[-400:]!r}")
    return elapsed


def main() -> None:
    no_arguments("bench_tui", __doc__)
    with tempfile.TemporaryDirectory(prefix="semfora-bench-tui-") as tmp:
        repo = Path(tmp) / "demo"
        (repo / "app").mkdir(parents=True)
        (repo / "app/config.py").write_text(SOURCE)
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": tmp,
            "TERM": "xterm-256color",
            "XDG_CACHE_HOME": f"{tmp}/cache",
            "XDG_CONFIG_HOME": f"{tmp}/config",
            "SEMFORA_EMBEDDING": "none",
            "OLLAMA_HOST": "http://127.0.0.1:9",
        }
        semfora_runs: list[float] = []
        baseline_runs: list[float] = []
        load_before = os.getloadavg()[0]
        for _ in range(RUNS):  # alternate, so machine noise hits both the same way
            baseline_runs.append(first_frame([sys.executable, "-c", BASELINE_APP], BASELINE_MARKERS, env))
            semfora_runs.append(first_frame([SEMFORA, str(repo)], SEMFORA_MARKERS, env))
    load_after = os.getloadavg()[0]
    semfora = statistics.median(semfora_runs)
    baseline = statistics.median(baseline_runs)
    verdict = "meets" if semfora <= TARGET_SECONDS else "misses"
    body = (
        "## TUI first frame\n\n"
        "Command: `python -m tests.bench.bench_tui` (part of `make bench`).\n\n"
        f"Time from process start to the first full frame of `semfora REPO` in a {SIZE[1]}x{SIZE[0]} pty "
        "(header, chat, diff and budget panes, footer), against a bare Textual app painting one line, "
        f"measured alternately in the same run, {RUNS} runs each.\n\n"
        "| | median | min | max |\n|---|---:|---:|---:|\n"
        f"| `semfora REPO` | {semfora:.3f} s | {min(semfora_runs):.3f} s | {max(semfora_runs):.3f} s |\n"
        f"| bare Textual app (baseline) | {baseline:.3f} s | {min(baseline_runs):.3f} s "
        f"| {max(baseline_runs):.3f} s |\n\n"
        f"Ratio semfora / baseline: **{semfora / baseline:.2f}x**. Target ≤ {TARGET_SECONDS:.1f} s: "
        f"**{verdict}** it ({semfora:.3f} s). Machine load during the run: {load_before:.1f} → "
        f"{load_after:.1f} (1-minute load average on {os.cpu_count()} CPUs; absolute times scale with it, "
        "the ratio much less). anthropic, chromadb, litellm and the grammar pack are imported only inside "
        "workers, after the first frame (`tests/tui/test_startup.py` checks the import list).\n"
    )
    write_section("tui", body)
    print(body)


if __name__ == "__main__":
    main()
