"""Fixtures for the app's Pilot and snapshot tests: a small real repository, an app factory,
and helpers that wait for states (never for a fixed time) and type at full speed."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual import events
from textual.keys import _character_to_key

from semfora_tui.app import SemforaApp
from semfora_tui.screens.confirm import ConfirmScreen
from tests.fakes.fixtures import _fresh_service_breakers, fake_anthropic, fake_ollama  # noqa: F401 (pytest fixtures)

SOURCE = {
    "app/config.py": (
        "def load_config(path):\n"
        '    """Read the settings file."""\n'
        "    with open(path) as fh:\n"
        "        return fh.read()\n"
        "\n"
        "\n"
        "def parse_port(text):\n"
        "    return int(text)\n"
    ),
    "app/server.py": (
        "from app.config import load_config, parse_port\n"
        "\n"
        "\n"
        "def start(path):\n"
        "    cfg = load_config(path)\n"
        "    return parse_port(cfg)\n"
    ),
    "README.md": "# demo\n",
}

# Edit blocks a user (or a model) could hand to `/edit --from FILE`: one hunk in each file.
EDIT_BLOCKS = (
    "app/config.py\n"
    "<<<<<<< SEARCH\n"
    "def parse_port(text):\n"
    "    return int(text)\n"
    "=======\n"
    "def parse_port(text):\n"
    "    return int(text.strip())\n"
    ">>>>>>> REPLACE\n"
    "\n"
    "app/server.py\n"
    "<<<<<<< SEARCH\n"
    "    return parse_port(cfg)\n"
    "=======\n"
    "    port = parse_port(cfg)\n"
    "    return port\n"
    ">>>>>>> REPLACE\n"
)


# Two edits of app/config.py, far enough apart (see ``spread_config``) to be two hunks of one file.
TWO_HUNK_BLOCKS = (
    "app/config.py\n<<<<<<< SEARCH\n"
    '    """Read the settings file."""\n=======\n'
    '    """Read the settings file as text."""\n>>>>>>> REPLACE\n\n'
    "app/config.py\n<<<<<<< SEARCH\n"
    "    return int(text)\n=======\n"
    "    return int(text.strip())\n>>>>>>> REPLACE\n"
)


def spread_config(root: Path) -> None:
    """Put four small functions between load_config and parse_port, so TWO_HUNK_BLOCKS are two hunks."""
    padding = "".join(f"\n\ndef helper_{i}():\n    return {i}\n" for i in range(4))
    config = root / "app/config.py"
    config.write_text(config.read_text().replace("\n\n\ndef parse_port", padding + "\n\ndef parse_port"))


@pytest.fixture
def demo_repo(make_repo: Callable[..., Path]) -> Path:
    return make_repo(dict(SOURCE))


AppFactory = Callable[..., SemforaApp]


@pytest.fixture
def make_app(demo_repo: Path) -> AppFactory:
    """Build an app on the demo repository; the disk watcher is off unless asked for."""

    def factory(root: Path | None = None, **kwargs: object) -> SemforaApp:
        kwargs.setdefault("watch", False)
        return SemforaApp(root or demo_repo, **kwargs)  # type: ignore[arg-type]

    return factory


async def settle(pilot: object) -> None:
    """Wait until every worker has finished and the screen has caught up."""
    app = pilot.app  # type: ignore[attr-defined]
    for _ in range(3):
        await pilot.pause()  # type: ignore[attr-defined]
        await app.workers.wait_for_complete()
    await pilot.pause()  # type: ignore[attr-defined]


# Seconds a Pilot test waits for one state of the app; generous because the cores are shared.
STATE_TIMEOUT = 60.0

# A model reply with one SEARCH/REPLACE edit of app/config.py.
EDIT_REPLY = (
    "I will strip the text before parsing.\n\n"
    "app/config.py\n"
    "<<<<<<< SEARCH\n"
    "def parse_port(text):\n"
    "    return int(text)\n"
    "=======\n"
    "def parse_port(text):\n"
    "    return int(text.strip())\n"
    ">>>>>>> REPLACE\n"
)


async def wait_for(pilot: object, predicate: Callable[[], object], what: str = "the app") -> None:
    """Poll until ``predicate()`` is true; fail with ``what`` after ``STATE_TIMEOUT`` seconds."""
    deadline = time.monotonic() + STATE_TIMEOUT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await pilot.pause(0.02)  # type: ignore[attr-defined]


def key_event(char: str) -> events.Key:
    """The Key event a terminal driver makes for ``char`` (a newline is the Enter key)."""
    if char == "\n":
        return events.Key("enter", "\r")
    return events.Key(_character_to_key(char), char)


def type_fast(app: SemforaApp, text: str) -> None:
    """Post every key at once, as a terminal delivers a burst of typing: no key waits for the last.

    A newline is an Enter key press.
    """
    for char in text:
        app.post_message(key_event(char))


def paste(app: SemforaApp, text: str) -> None:
    """A bracketed paste, as the terminal driver delivers it."""
    app.post_message(events.Paste(text))


async def main_screen_ready(pilot: object) -> None:
    """Wait until the main screen is composed (an auto-pilot, as in snapshots, can start before)."""
    from semfora_tui.screens.main import MainScreen
    from semfora_tui.widgets.prompt import PromptInput

    app = pilot.app  # type: ignore[attr-defined]
    await wait_for(
        pilot,
        lambda: isinstance(app.screen, MainScreen) and app.screen.query(PromptInput),
        "the main screen",
    )


async def submit(pilot: object, app: SemforaApp, text: str) -> None:
    app.prompt.load_text(text)
    app.main.set_focus(app.prompt)
    await pilot.press("enter")  # type: ignore[attr-defined]


async def answer_confirmation(pilot: object, app: SemforaApp, key: str = "y") -> ConfirmScreen:
    """Wait until the confirmation on screen accepts answers, then press ``key``."""
    await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the confirmation")
    screen = app.screen
    assert isinstance(screen, ConfirmScreen)
    await wait_for(pilot, lambda: screen.armed, "the confirmation to accept answers")
    await pilot.press(key)  # type: ignore[attr-defined]
    return screen


async def press_and_answer(pilot: object, app: SemforaApp, *keys: str, answer: str = "y") -> None:
    """Press ``keys`` (the last one asks a question), answer it, and wait until the app has settled."""
    await pilot.press(*keys)  # type: ignore[attr-defined]
    await answer_confirmation(pilot, app, answer)
    await settle(pilot)
