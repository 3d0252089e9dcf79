"""Snapshot tests: the main layout with a staged session, offline mode, and every built-in theme.

Everything on screen is fixed: the repository is always ``repo1`` on ``main``, the model
check is skipped or offline, cost is zero, nothing shows a time or a spinner, and the start-up
index is off so that the engine's counts and rankings (tested elsewhere) cannot move a pixel.
Regenerate with ``pytest tests/tui/test_snapshots.py --snapshot-update`` after a deliberate change.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from semfora_tui.app import SemforaApp
from tests.tui.conftest import EDIT_BLOCKS, settle

SIZE = (120, 40)
BUILTIN_THEMES = ["semfora-dark", "semfora-light", "semfora-high-contrast", "semfora-solarized"]


def _staged_session(root: Path, *, focus_diff: bool = False):  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
        app = pilot.app
        app.prompt.cursor_blink = False
        await settle(pilot)
        (root / "edits.txt").write_text(EDIT_BLOCKS)
        await app.run_slash("/edit --from edits.txt")
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        if not focus_diff:
            app.prompt.focus()
        await settle(pilot)

    return run_before


def test_main_layout_with_a_staged_session(snap_compare, demo_repo: Path) -> None:  # type: ignore[no-untyped-def]
    app = SemforaApp(demo_repo, watch=False, check_model=False, start_index=False)
    assert snap_compare(app, terminal_size=SIZE, run_before=_staged_session(demo_repo, focus_diff=True))


def test_offline_mode(snap_compare, demo_repo: Path) -> None:  # type: ignore[no-untyped-def]
    async def run_before(pilot) -> None:  # type: ignore[no-untyped-def]
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
