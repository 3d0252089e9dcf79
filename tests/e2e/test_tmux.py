"""End to end, as a person would: the real `semfora` command in a tmux pane, a fake Claude behind it.

The fake Anthropic server runs as its own process, scripted per test. Each test types
the way a person does (a burst of keys, a bracketed paste, a key right after a mode
switch) and then waits for the screen state it needs: it looks at ``capture-pane`` each time the
pane writes something (tmux pipes the pane's output into a FIFO the test blocks on), and never
sleeps for a fixed time. What the keys must not do is checked on disk.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SEMFORA

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"),
]

ORIGINAL = "def parse_port(text):\n    return int(text)\n"
EDITED = "def parse_port(text):\n    return int(text.strip())\n"
EDIT_REPLY = (
    "I will strip the text first.\n\n"
    "app/config.py\n"
    "<<<<<<< SEARCH\n"
    "    return int(text)\n"
    "=======\n"
    "    return int(text.strip())\n"
    ">>>>>>> REPLACE\n"
)
# What a person types after (or while) a reply stages a hunk; each key is a review key somewhere.
TYPED = "/accept all now also update the docs"
PASTED = "/accept all\n"
# Seconds to wait for one expected screen; generous because the machine is shared.
SCREEN_TIMEOUT = 60
# A wait with no output from the pane looks again after this long anyway (a file the app writes
# after its last redraw, a process that exits without one): a safety net, not how a wait ends.
RECHECK = 1.0


class FakeServer:
    """The fake Anthropic API in its own process, answering a script of actions."""

    def __init__(self, script: Path, actions: list[dict[str, Any]]) -> None:
        script.write_text(json.dumps(actions))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.fakes.fake_anthropic", "--port", "0", "--script", str(script)],
            cwd=Path(__file__).resolve().parents[2],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        self.url = line.removeprefix("listening on ")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture
def fake_server(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], str]]:
    servers: list[FakeServer] = []

    def start(actions: list[dict[str, Any]]) -> str:
        server = FakeServer(tmp_path / f"script{len(servers)}.json", actions)
        servers.append(server)
        return server.url

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


class Tmux:
    """One private tmux server (its own socket) running one 120x40 pane."""

    def __init__(self, socket: str) -> None:
        self.socket = socket
        self._output: list[int] = []  # the FIFO the pane's output goes to: (read end, write end)

    def watch(self, fifo: Path) -> None:
        """Pipe the pane's output into ``fifo``, so a wait wakes when the screen can have changed.

        The test holds a write end too: the FIFO never reads as ended, and an idle pane blocks."""
        os.mkfifo(fifo)
        self._output = [
            os.open(fifo, os.O_RDONLY | os.O_NONBLOCK),
            os.open(fifo, os.O_WRONLY | os.O_NONBLOCK),
        ]
        self.run("pipe-pane", "-t", "e2e", "-o", f"cat > {shlex.quote(str(fifo))}")

    def close(self) -> None:
        for fd in self._output:
            os.close(fd)
        self._output = []

    def next_output(self, timeout: float) -> None:
        """Return once the pane has written something (what it wrote is drained), or after ``timeout``."""
        if not self._output:
            raise AssertionError("the pane is not watched: call watch() after new-session")
        poller = select.poll()  # not select(): a test process may hold descriptors past 1024
        poller.register(self._output[0], select.POLLIN)
        if poller.poll(max(0.0, timeout) * 1000):
            with contextlib.suppress(BlockingIOError):
                while os.read(self._output[0], 1 << 16):
                    pass

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
        """A burst of typing: every character reaches the terminal in one write."""
        self.run("send-keys", "-t", "e2e", "-l", text)

    def paste(self, text: str) -> None:
        """A bracketed paste, as a terminal sends one (the app asked for bracketed paste mode)."""
        self.run("set-buffer", "-b", "e2e", text)
        self.run("paste-buffer", "-p", "-d", "-b", "e2e", "-t", "e2e")

    def wait_for(self, predicate: Callable[[str], bool], what: str) -> str:
        deadline = time.monotonic() + SCREEN_TIMEOUT
        screen = ""
        while time.monotonic() < deadline:
            assert self.alive(), f"the app exited while waiting for {what}; last screen:\n{screen}"
            screen = self.screen()
            if predicate(screen):
                return screen
            self.next_output(min(RECHECK, deadline - time.monotonic()))
        raise AssertionError(f"timed out waiting for {what}; the screen was:\n{screen}")

    def footer(self) -> str:
        return self.screen().rstrip("\n").splitlines()[-1]


def _wait_until(tmux: Tmux, condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + SCREEN_TIMEOUT
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        tmux.next_output(min(RECHECK, deadline - time.monotonic()))


def _history(xdg_cache: Path) -> list[Path]:
    """Committed change sets (what undo reverts) of every repository under this cache."""
    return sorted(xdg_cache.glob("semfora/*/edits/history/*.json"))


@pytest.fixture
def app_in_tmux(make_repo, tmp_path: Path) -> Iterator[Callable[..., tuple[Tmux, Path]]]:  # type: ignore[no-untyped-def]
    sessions: list[Tmux] = []

    def launch(
        server_url: str, files: dict[str, str] | None = None, *, ready: bool = True
    ) -> tuple[Tmux, Path]:
        root = make_repo(files or {"app/config.py": ORIGINAL, "app/__init__.py": ""})
        env = {
            "PATH": os.environ["PATH"],
            "HOME": str(tmp_path),
            "TERM": "xterm-256color",
            "XDG_CACHE_HOME": os.environ["XDG_CACHE_HOME"],
            "XDG_CONFIG_HOME": os.environ["XDG_CONFIG_HOME"],
            "ANTHROPIC_BASE_URL": server_url,
            "ANTHROPIC_API_KEY": "sk-ant-e2e-test-key",
            "SEMFORA_EMBEDDING": "none",
            "OLLAMA_HOST": "http://127.0.0.1:9",
            "ANONYMIZED_TELEMETRY": "False",
            "EDITOR": str(tmp_path / "no-editor-should-start"),
        }
        tmux = Tmux(f"semfora-e2e-{os.getpid()}-{len(sessions)}")
        sessions.append(tmux)
        command = " ".join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), SEMFORA, str(root)])
        tmux.run("new-session", "-d", "-s", "e2e", "-x", "120", "-y", "40", command)
        tmux.watch(tmp_path / f"pane-{len(sessions)}.out")
        if not ready:
            return tmux, root
        tmux.wait_for(
            lambda s: " symbol" in s and "offline" not in s and "claude" in s and " PROMPT " in s,
            "the app to be ready",
        )
        return tmux, root

    try:
        yield launch
    finally:
        for tmux in sessions:
            subprocess.run(["tmux", "-L", tmux.socket, "kill-server"], capture_output=True, check=False)
            tmux.close()


def _ask_for_the_edit(tmux: Tmux) -> None:
    """Ask for EDIT_REPLY's change (the fake answers it) and wait until its hunk is staged."""
    tmux.type("make parse_port strip whitespace before converting")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "✓ staged 1 hunk in app/config.py" in s and "[ ] pending" in s, "the staged hunk")


def _clear_prompt(tmux: Tmux) -> None:
    tmux.keys("F7", "BSpace")  # select all, delete
    tmux.wait_for(lambda s: "update the docs" not in s, "the prompt to be empty")


def test_keys_after_a_staged_reply_stay_text_then_review_commit_and_undo(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[[str], tuple[Tmux, Path]],
    tmp_path: Path,
) -> None:
    tmux, root = app_in_tmux(fake_server([{"type": "text", "text": EDIT_REPLY}]))
    target = root / "app/config.py"
    cache = Path(os.environ["XDG_CACHE_HOME"])
    _ask_for_the_edit(tmux)
    assert " PROMPT " in tmux.footer()  # staging did not take the keyboard
    # A person goes on typing, then pastes a command with its newline.
    tmux.type(TYPED)
    tmux.paste(PASTED)
    tmux.wait_for(lambda s: "update the docs/accept all" in s, "the typing and the paste in the prompt")
    screen = tmux.screen()
    assert "[ ] pending" in screen and "[✓] accepted" not in screen and "Commit " not in screen
    assert target.read_text() == ORIGINAL
    assert _history(cache) == []
    assert not (tmp_path / "no-editor-should-start").exists()
    _clear_prompt(tmux)
    # Review on purpose: F2, accept, commit (the dialog takes an answer once its buttons show).
    tmux.keys("F2")
    tmux.wait_for(lambda s: " REVIEW " in s.splitlines()[-1], "review mode")
    tmux.keys("a")
    tmux.wait_for(lambda s: "[✓] accepted" in s, "the hunk to be accepted")
    tmux.keys("c")
    tmux.wait_for(
        lambda s: "Commit 1 accepted hunk in 1 file?" in s and "Commit (y)" in s, "the commit dialog"
    )
    tmux.keys("y")
    _wait_until(tmux, lambda: target.read_text() != ORIGINAL, "the commit to reach the disk")
    assert target.read_text() == EDITED
    # Back to the prompt and straight into a command, without waiting: no key may be lost.
    tmux.wait_for(lambda s: "Committed" in s or "committed" in s, "the commit note")
    tmux.keys("F3")
    tmux.type("/undo")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "Undo the last commit?" in s and "Undo (y)" in s, "the undo dialog")
    tmux.keys("y")
    tmux.wait_for(lambda s: "Undid the last commit" in s, "the undo")
    assert target.read_text() == ORIGINAL
    # The review keys loaded only the review commands; every other command must still be there
    # (once, /cost after review keys crashed the app).
    tmux.type("/cost")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "Session: 1 turn," in s, "the /cost answer")
    tmux.keys("C-q")
    _wait_until(tmux, lambda: not tmux.alive(), "the app to exit on ctrl+q")


def test_keys_while_a_reply_streams_go_to_the_prompt_and_a_sent_message_waits_its_turn(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[[str], tuple[Tmux, Path]],
    tmp_path: Path,
) -> None:
    slow_edit = {"type": "text", "text": EDIT_REPLY, "chunk_chars": 2, "delay": 0.05}
    tmux, root = app_in_tmux(fake_server([slow_edit, {"type": "text", "text": "Noted: the docs come next."}]))
    target = root / "app/config.py"
    cache = Path(os.environ["XDG_CACHE_HOME"])
    tmux.type("make parse_port strip whitespace before converting")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "I will strip" in s and "✓ staged" not in s, "the reply to stream")
    # While it streams: a message sent with Enter is queued...
    tmux.type("then explain the change")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "⏳ queued" in s, "the queued message")
    # ...and a burst plus a paste stay text in the prompt.
    tmux.type(TYPED)
    tmux.paste(PASTED)
    tmux.wait_for(lambda s: "update the docs/accept all" in s, "the typing and the paste in the prompt")
    tmux.wait_for(lambda s: "Noted: the docs come next." in s, "the answer to the queued message")
    screen = tmux.screen()
    assert "✓ staged 1 hunk in app/config.py" in screen
    assert "⏳ queued" not in screen  # sent after the reply, in order
    assert screen.index("✓ staged") < screen.index("› then explain the change") < screen.index("Noted:")
    assert "update the docs/accept all" in screen  # still in the prompt, never run
    assert "[ ] pending" in screen and "[✓] accepted" not in screen
    assert " PROMPT " in tmux.footer()
    assert target.read_text() == ORIGINAL
    assert _history(cache) == []
    assert not (tmp_path / "no-editor-should-start").exists()
    tmux.keys("C-q")
    _wait_until(tmux, lambda: not tmux.alive(), "the app to exit on ctrl+q")


def test_escape_and_the_next_question_typed_at_once_leave_review_mode(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[[str], tuple[Tmux, Path]],
    tmp_path: Path,
) -> None:
    """Esc and a letter within ESCDELAY (100 ms) reach the app as one alt+letter key: review mode
    stayed on and "what about the docs" ran as review keys (a accepted, space toggled, e asked to
    open the editor)."""
    tmux, root = app_in_tmux(fake_server([{"type": "text", "text": EDIT_REPLY}]))
    target = root / "app/config.py"
    _ask_for_the_edit(tmux)
    tmux.keys("F2")
    tmux.wait_for(lambda s: " REVIEW " in s.splitlines()[-1], "review mode")
    tmux.type("\x1bwhat about the docs")  # the escape and the sentence in one write
    screen = tmux.wait_for(lambda s: "what about the docs" in s, "the question in the prompt")
    assert " PROMPT " in tmux.footer()
    assert "[ ] pending" in screen and "[✓] accepted" not in screen and "[✗] rejected" not in screen
    assert "Open the proposed version" not in screen
    assert target.read_text() == ORIGINAL
    assert not (tmp_path / "no-editor-should-start").exists()
    tmux.keys("C-q")
    _wait_until(tmux, lambda: not tmux.alive(), "the app to exit on ctrl+q")


def test_quitting_with_staged_hunks_says_they_are_kept_and_how_to_get_back_to_them(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[[str], tuple[Tmux, Path]],
) -> None:
    """ctrl+q with a staged hunk closed the app without a word: applied, lost, or kept?"""
    tmux, root = app_in_tmux(fake_server([{"type": "text", "text": EDIT_REPLY}]))
    tmux.run("set-option", "-t", "e2e", "remain-on-exit", "on")  # keep what the command printed
    _ask_for_the_edit(tmux)
    tmux.keys("C-q")
    tmux.wait_for(lambda s: "stays staged" in s, "the line after the app closed")
    joined = tmux.run("capture-pane", "-p", "-J", "-t", "e2e")  # the long line unwrapped
    assert (
        "semfora: 1 hunk in app/config.py stays staged (1 pending), not written to the file. "
        "Open semfora again to review it, or run `semfora edits rollback` to discard it." in joined
    )
    assert (root / "app/config.py").read_text() == ORIGINAL


def test_quitting_during_the_first_index_of_a_big_repository_is_prompt(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[..., tuple[Tmux, Path]],
) -> None:
    """ctrl+q while the first index of Django ran left a blank terminal for 45 s: the process
    waited for the index thread to finish the whole index. It now stops at the next batch, and
    the index stays as it was (none: it is written in one commit at its end)."""
    import sqlite3

    from engine.repo.layout import RepoLayout

    files = {
        f"pkg{i % 20}/mod{i}.py": "".join(
            f"def handler_{i}_{j}(request):\n    return helper(request, {j})\n\n\n" for j in range(20)
        )
        for i in range(1500)
    }
    tmux, root = app_in_tmux(fake_server([]), files, ready=False)
    tmux.wait_for(lambda s: "index: parsing" in s, "the first index to parse")
    tmux.keys("C-q")
    _wait_until(tmux, lambda: not tmux.alive(), "the app to exit")
    index_db = RepoLayout.for_path(root).index_db
    if index_db.exists():
        with sqlite3.connect(index_db) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            indexed = db.execute("SELECT count(*) FROM files").fetchone()[0] if "files" in tables else 0
        assert indexed < len(files), "the app waited for the whole index before it exited"


def test_quitting_while_another_process_holds_the_index_lock_is_prompt(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[..., tuple[Tmux, Path]],
) -> None:
    """ctrl+q while a `semfora index` in another terminal held the lock left the terminal blank
    for 28 s: the app's index thread waited out the lock's 30 s timeout before the process ended."""
    tmux, root = app_in_tmux(fake_server([]))
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from engine import flock; from engine.repo.layout import RepoLayout; "
            "fd = flock.acquire(RepoLayout.for_path(sys.argv[1]).ensure_cache_dir() / 'index.lock', 5); "
            "print('held' if fd is not None else 'not held', flush=True); sys.stdin.read()",
            str(root),
        ],
        cwd=Path(__file__).resolve().parents[2],
        stdin=subprocess.PIPE,  # it holds the lock until this test closes its stdin
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        tmux.type("/index")
        tmux.keys("Enter")
        screen = tmux.wait_for(lambda s: "another semfora is indexing" in s, "the index to wait for the lock")
        # The whole of it, and the cost after it: a progress bar of nothing took their room.
        header = screen.splitlines()[0]
        assert "index: waiting: another semfora is indexing…" in header and header.rstrip().endswith(
            "$0.0000"
        )
        started = time.monotonic()
        tmux.keys("C-q")
        _wait_until(tmux, lambda: not tmux.alive(), "the app to exit")
        assert time.monotonic() - started < 10, "ctrl+q waited for the other process's lock"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=10)


def test_a_hunk_id_under_a_long_path_is_on_screen_and_accepts_typed_at_full_speed(
    fake_server: Callable[[list[dict[str, Any]]], str],
    app_in_tmux: Callable[..., tuple[Tmux, Path]],
) -> None:
    """At 120 columns the id followed the path, the header and the state, past the pane's edge
    (`#9c` of `#9ca6b7b7`): the one thing `/accept ID` needs was cut."""
    deep = "src/semfora_demo/configuration/loaders/settings_file.py"
    reply = EDIT_REPLY.replace("app/config.py", deep)
    tmux, root = app_in_tmux(fake_server([{"type": "text", "text": reply}]), {deep: ORIGINAL})
    tmux.type("make parse_port strip whitespace before converting")
    tmux.keys("Enter")
    screen = tmux.wait_for(lambda s: "✓ staged 1 hunk" in s and "[ ] pending" in s, "the staged hunk")
    (hunk_id,) = json.loads(
        subprocess.run(
            [SEMFORA, "edits", "list", "--json", "--path", str(root)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    )["files"][0]["hunks"]
    assert f"#{hunk_id['id']}" in screen, screen
    tmux.type(f"/accept {hunk_id['id']}")
    tmux.keys("Enter")
    tmux.wait_for(lambda s: "[✓] accepted" in s, "the hunk accepted by its id")
    tmux.keys("C-q")
    _wait_until(tmux, lambda: not tmux.alive(), "the app to exit on ctrl+q")
