"""Snapshot tests: the main layout with a staged session, review mode at 80x24 and 200x50,
offline mode, and every built-in theme.

Everything on screen is fixed: the repository is always ``repo1`` on ``main``, the model
check is skipped or offline, cost is zero, nothing shows a time or a spinner, and the start-up
index is off so that the engine's counts and rankings (tested elsewhere) cannot move a pixel.
Regenerate with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semfora_tui.app import SemforaApp
from tests.tui.conftest import EDIT_BLOCKS, main_screen_ready, settle

SIZE = (120, 40)
BUILTIN_THEMES = ["semfora-dark", "semfora-light", "semfora-high-contrast", "semfora-solarized"]


# A hunk whose new line is far wider than 80 columns: review mode must show it whole (it scrolls).
LONG_LINE_BLOCK = (
    "app/config.py\n"
    "<<<<<<< SEARCH\n"
    "    with open(path) as fh:\n"
    "=======\n"
    '    with open(path, encoding="utf-8", errors="replace", newline="") as fh:  # settings files may hold any bytes\n'
    ">>>>>>> REPLACE\n"
)


def _staged_session(root: Path, *, review: bool = False, blocks: str = EDIT_BLOCKS):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        await main_screen_ready(pilot)
        app.prompt.cursor_blink = False
        await settle(pilot)
        (root / "edits.txt").write_text(blocks)
        await app.main.run_slash("/edit --from edits.txt")
        await settle(pilot)
        await pilot.press("f2", "a")
        await settle(pilot)
        if not review:
            await pilot.press("escape")
        await settle(pilot)

    return run_before


def test_main_layout_with_a_staged_session(snap_compare, demo_repo: Path) -> None:  # type: ignore[no-untyped-def]
    app = SemforaApp(demo_repo, watch=False, check_model=False, start_index=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_staged_session(demo_repo))


@pytest.mark.parametrize("size", [(80, 24), (200, 50)], ids=["80x24", "200x50"])
def test_review_mode(snap_compare, demo_repo: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = SemforaApp(demo_repo, watch=False, check_model=False, start_index=False)
    blocks = LONG_LINE_BLOCK + "\n" + EDIT_BLOCKS.split("\n\n", 1)[1]
    assert snap_compare(
        app, terminal_size=size, run_before=_staged_session(demo_repo, review=True, blocks=blocks)
    )


def test_offline_mode(snap_compare, demo_repo: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await main_screen_ready(pilot)
        pilot.app.prompt.cursor_blink = False
        await settle(pilot)

    app = SemforaApp(demo_repo, watch=False, start_index=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize("theme", BUILTIN_THEMES)
def test_builtin_theme(snap_compare, demo_repo: Path, theme: str) -> None:  # type: ignore[no-untyped-def]
    stage = _staged_session(demo_repo)

    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        await stage(pilot)
        pilot.app.theme = theme
        await settle(pilot)

    app = SemforaApp(demo_repo, watch=False, check_model=False, start_index=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
