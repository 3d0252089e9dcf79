"""The prompt: history, multi-line entry, slash completion and the `@` picker."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import OptionList

from semfora_tui.screens.picker import PickerScreen
from tests.tui.conftest import AppFactory, settle


async def test_history_walks_back_and_forward(make_app: AppFactory) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for text in ("/cost", "/budget 4000"):
            app.prompt.load_text(text)
            await pilot.press("enter")
            await settle(pilot)
        await pilot.press(*"draft")
        await pilot.press("up")
        assert app.prompt.text == "/budget 4000"
        await pilot.press("up")
        assert app.prompt.text == "/cost"
        await pilot.press("up")
        assert app.prompt.text == "/cost"
        await pilot.press("down")
        assert app.prompt.text == "/budget 4000"
        await pilot.press("down")
        assert app.prompt.text == "draft"


async def test_history_survives_a_restart_but_never_keeps_a_secret(make_app: AppFactory) -> None:
    secret = "deploy with ANTHROPIC_API_KEY=sk-ant-api03-" + "x" * 40
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for text in ("/cost", "/budget 4000", "/budget 4000", secret):
            app.prompt.load_text(text)
            await pilot.press("enter")
            await settle(pilot)
    again = make_app(start_index=False, check_model=False)
    async with again.run_test(size=(120, 40)) as pilot:
        assert again.prompt.past == ["/cost", "/budget 4000"]
        await pilot.press("up")
        assert again.prompt.text == "/budget 4000"
    stored = again.bridge.history.path.read_text(encoding="utf-8")
    assert "sk-ant" not in stored and stored.count("budget 4000") == 1


async def test_history_can_be_turned_off(make_app: AppFactory, demo_repo: Path) -> None:
    (demo_repo / ".semfora.toml").write_text("[ui]\nprompt_history = false\n")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        app.prompt.load_text("/cost")
        await pilot.press("enter")
        await settle(pilot)
    assert not app.bridge.history.path.exists()


async def test_ctrl_j_and_shift_enter_insert_newlines_and_enter_submits(make_app: AppFactory) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press(*"first", "ctrl+j", *"second", "shift+enter", *"third")
        assert app.prompt.text == "first\nsecond\nthird"
        await pilot.press("enter")
        await settle(pilot)
        assert app.prompt.text == ""
        assert "first\nsecond\nthird" in app.chat.transcript()


async def test_slash_completion_shows_matches_and_tab_completes(make_app: AppFactory) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        completions = app.query_one("#completions", OptionList)
        await pilot.press(*"/re")
        assert completions.display
        names = [completions.get_option_at_index(i).id for i in range(completions.option_count)]
        assert names == ["reject", "resume"]
        await pilot.press("down", "tab")
        assert app.prompt.text == f"/{names[1]} "
        assert not completions.display
        app.prompt.clear()
        await pilot.press(*"/the", "tab")
        assert app.prompt.text == "/theme "


async def test_at_opens_the_picker_and_inserts_the_choice(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press(*"explain ", "@")
        await settle(pilot)
        assert isinstance(app.screen, PickerScreen)
        await pilot.press(*"parse_po")
        await pilot.pause(0.3)
        await settle(pilot)
        labels = [item.label for item in app.screen.items]
        assert any(label.startswith("symbol parse_port") for label in labels), labels
        index = next(i for i, label in enumerate(labels) if label.startswith("symbol parse_port"))
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert app.prompt.text == "explain @parse_port "
        await pilot.press("@")
        await settle(pilot)
        await pilot.press(*"server")
        await pilot.pause(0.3)
        await settle(pilot)
        assert app.screen.items[0].value == "app/server.py"
        await pilot.press("enter")
        await settle(pilot)
        assert app.prompt.text == "explain @parse_port @app/server.py "
        await pilot.press("@", "escape")
        await settle(pilot)
        assert app.prompt.text == "explain @parse_port @app/server.py @"
