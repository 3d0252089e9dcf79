"""Fixtures for the app's Pilot and snapshot tests: a small real repository and an app factory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from semfora_tui.app import SemforaApp
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
