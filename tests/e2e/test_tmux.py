"""End to end, as a user would: the real `semfora` command in a tmux pane, a fake Claude behind it.

The fake Anthropic server runs as its own process, scripted to answer with one
SEARCH/REPLACE edit. The test types a request, waits for the hunk in the diff pane,
accepts and commits it, checks the file on disk, then `/undo`s it. It polls
``capture-pane`` and never sleeps blindly.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import SEMFORA

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

ORIGINAL = "def parse_port(text):\n    return int(text)\n"
EDIT_REPLY = (
    "Strip the text first.\n\n"
    "app/config.py\n"
    "<<<<<<< SEARCH\n"
    "    return int(text)\n"
    "=======\n"
    "    return int(text.strip())\n"
    ">>>>>>> REPLACE\n"
)
# Seconds to wait for one expected screen; generous because the machine is shared.
SCREEN_TIMEOUT = 45


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"type": "text", "text": EDIT_REPLY}]))
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fake_anthropic", "--port", "0", "--script", str(script)],
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        yield line.removeprefix("listening on ")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Tmux:
    """One private tmux server (its own socket) running one 120x40 pane."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def run(self, *args: str) -> str:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", *args], capture_output=True, text=True, check=True
        )
        return proc.stdout

    def alive(self) -> bool:
        proc = subprocess.run(
            ["tmux", "-L", self.socket, "-f", "/dev/null", "has-session", "-t", "e2e"],
            capture_output=True,
            check=False,
        )
        return proc.returncode == 0

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "e2e")

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "e2e", *keys)

    def type(self, text: str) -> None:
        self.run("send-keys", "-t", "e2e", "-l", text)

    def wait_for(self, predicate: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + SCREEN_TIMEOUT
        screen = ""
        while time.monotonic() < deadline:
            assert self.alive(), f"the app exited while waiting for {what}; last screen:\n{screen}"
            screen = self.screen()
            if predicate(screen):
                print(f"{what}: {SCREEN_TIMEOUT - (deadline - time.monotonic()):.1f}s", file=sys.stderr)
                return screen
            time.sleep(0.1)
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")


def _wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SCREEN_TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_request_review_commit_and_undo_in_tmux(make_repo, fake_server: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = make_repo({"app/config.py": ORIGINAL, "app/__init__.py": ""})
    target = root / "app/config.py"
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp_path),
        "TERM": "xterm-256color",
        "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
        "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
        "ANTHROPIC_BASE_URL": fake_server,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-test-key",
        "SEMFORA_EMBEDDING": "none",
        "OLLAMA_HOST": "http://127.0.0.1:9",
        "ANONYMIZED_TELEMETRY": "False",
    }
    tmux = Tmux(f"semfora-e2e-{os.getpid()}")
    command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), SEMFORA, str(root)])
    tmux.run("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", command)
    try:
        tmux.wait_for(
            lambda s: "FTS ready" in s and "offline" not in s and "claude" in s, "the app to be ready"
        )
        tmux.type("make parse_port strip whitespace before converting")
        tmux.keys("Enter")
        tmux.wait_for(
            lambda s: "[ ] pending" in s and "+    return int(text.strip())" in s, "the proposed hunk"
        )
        assert target.read_text() == ORIGINAL  # nothing is written before review
        tmux.keys("a")
        tmux.wait_for(lambda s: "[✓] accepted" in s, "the hunk to be accepted")
        tmux.keys("c")
        tmux.wait_for(lambda s: "Commit 1 accepted hunk(s) in 1 file(s)?" in s, "the commit confirmation")
        tmux.keys("y")
        _wait_until(lambda: target.read_text() != ORIGINAL, "the commit to reach the disk")
        assert target.read_text() == "def parse_port(text):\n    return int(text.strip())\n"
        tmux.keys("F3")
        tmux.type("/undo")
        tmux.keys("Enter")
        tmux.wait_for(lambda s: "Undid the last commit" in s, "the undo")
        assert target.read_text() == ORIGINAL
        tmux.keys("C-q")
        _wait_until(lambda: not tmux.alive(), "the app to exit on ctrl+q")
    finally:
        subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True, check=False)
