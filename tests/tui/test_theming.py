"""Theme files: the built-ins, user themes, and what happens with a bad one."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config import load_settings
from semfora_tui.theming import builtin_theme_files, load_themes, parse_theme_text, user_themes_dir
from tests.tui.conftest import AppFactory, settle

BUILTINS = {"semfora-dark", "semfora-light", "semfora-high-contrast", "semfora-solarized"}
USER_THEME = """\
name: midnight
dark: true
primary: "#3366ff"
background: "#000010"
semfora:
  added: "#00ff88"
  removed: "#ff3355"
  changed: "#33ccff"
  priority-critical: "#ff0000"
  priority-high: "#ff8800"
  priority-medium: "#3366ff"
  priority-low: "#888888"
"""


def test_builtin_theme_files_validate_and_load_as_the_same_theme() -> None:
    files = builtin_theme_files()
    assert {parse_theme_text(text, name).name for name, text in files} >= BUILTINS
    loaded = {t.name: t for t in load_themes().themes}
    assert set(loaded) >= BUILTINS
    for name, text in files:
        validated = parse_theme_text(text, name).to_theme()
        assert loaded[validated.name] == validated  # the start-up fast path builds the very same theme
        assert {"semfora-added", "semfora-removed", "semfora-changed"} <= set(validated.variables)
        assert {f"semfora-priority-{p}" for p in ("critical", "high", "medium", "low")} <= set(
            validated.variables
        )


def test_user_theme_loads_and_a_bad_one_is_reported(tmp_path: Path) -> None:
    (tmp_path / "midnight.yaml").write_text(USER_THEME)
    (tmp_path / "broken.yaml").write_text(
        USER_THEME.replace('"#00ff88"', '"not-a-colour"').replace("midnight", "b")
    )
    (tmp_path / "garbage.yml").write_text("name: [unclosed\n")
    loaded = load_themes(tmp_path)
    assert "midnight" in {t.name for t in loaded.themes}
    assert len(loaded.problems) == 2
    assert any("broken.yaml" in p and "semfora.added" in p for p in loaded.problems)
    assert any("garbage.yml" in p for p in loaded.problems)


def test_missing_semfora_block_is_an_error() -> None:
    with pytest.raises(ValueError, match="semfora"):
        parse_theme_text("name: x\nprimary: '#ffffff'\n", "x.yaml")


async def test_invalid_user_theme_gives_one_notification_and_the_app_runs(make_app: AppFactory) -> None:
    themes = user_themes_dir()
    themes.mkdir(parents=True)
    (themes / "midnight.yaml").write_text(USER_THEME)
    (themes / "bad.yaml").write_text("name: bad\nprimary: 12\n")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        errors = [n for n in app._notifications if n.severity == "error"]
        assert len(errors) == 1
        assert "bad.yaml" in errors[0].message
        assert "midnight" in app.available_themes
        await app.main.run_slash("/theme midnight")
        await settle(pilot)
        assert app.theme == "midnight"


async def test_theme_command_switches_and_persists(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert app.theme == "semfora-dark"
        await app.main.run_slash("/theme semfora-high-contrast")
        await settle(pilot)
        assert app.theme == "semfora-high-contrast"
        assert app.theme_variables["semfora-added"] == "#00FF00"
        await app.main.run_slash("/theme nope-theme")
        await settle(pilot)
        assert "unknown theme" in app.chat.transcript()
        assert "Available:" in app.chat.transcript() and "semfora-light" in app.chat.transcript()
    assert load_settings(demo_repo).settings.ui.theme == "semfora-high-contrast"
    # A new app starts in the saved theme.
    again = make_app(start_index=False, check_model=False)
    async with again.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        assert again.theme == "semfora-high-contrast"
