"""The prompt: history, multi-line entry, slash completion and `@` mentions."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from textual.widgets import OptionList

from semfora_tui.widgets.prompt import mention_query
from tests.tui.conftest import AppFactory, settle, type_fast, wait_for


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
        assert names == ["cmd:review", "cmd:reject", "cmd:rebase", "cmd:resume"]
        await pilot.press("down", "tab")
        assert app.prompt.text == "/reject "
        assert not completions.display
        app.prompt.clear()
        await pilot.press(*"/the", "tab")
        assert app.prompt.text == "/theme "


async def test_an_at_mention_suggests_files_and_symbols_and_tab_takes_one(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        suggestions = app.query_one("#completions", OptionList)
        await pilot.press(*"explain ", "@", *"parse_po")
        await wait_for(pilot, lambda: suggestions.display and suggestions.option_count, "the suggestions")
        await settle(pilot)
        ids = [suggestions.get_option_at_index(i).id for i in range(suggestions.option_count)]
        assert "at:parse_port" in ids, ids
        while suggestions.get_option_at_index(suggestions.highlighted or 0).id != "at:parse_port":
            await pilot.press("down")
        await pilot.press("tab")
        assert app.prompt.text == "explain @parse_port "
        assert not suggestions.display
        await pilot.press("@", *"server")
        await wait_for(pilot, lambda: suggestions.display and suggestions.option_count, "the file suggestion")
        await settle(pilot)
        assert suggestions.get_option_at_index(0).id == "at:app/server.py"
        await pilot.press("tab")
        assert app.prompt.text == "explain @parse_port @app/server.py "
        # Escape closes the list and keeps every character typed.
        await pilot.press("@", *"ser")
        await wait_for(pilot, lambda: suggestions.display, "the suggestions")
        await pilot.press("escape")
        assert not suggestions.display
        assert app.prompt.text == "explain @parse_port @app/server.py @ser"


async def test_a_mentioned_path_with_a_space_is_completed_so_that_the_file_is_attached(
    make_app: AppFactory, make_repo, fake_anthropic
) -> None:  # type: ignore[no-untyped-def]
    """Tab wrote `@src dir/greeting.py`, which was read as "@src" and a stray word: the file the
    user picked was not attached to the question."""
    root = make_repo({"src dir/greeting.py": "def greet(name):\n    return 'hi ' + name\n"})
    fake_anthropic.reply("It greets.")
    app = make_app(root)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        suggestions = app.query_one("#completions", OptionList)
        await pilot.press(*"explain ", "@", *"greeting")
        await wait_for(pilot, lambda: suggestions.display and suggestions.option_count, "the file suggestion")
        await settle(pilot)
        assert suggestions.get_option_at_index(0).id == "at:src dir/greeting.py"
        await pilot.press("tab")
        assert app.prompt.text == 'explain @"src dir/greeting.py" '
        await pilot.press("enter")
        await wait_for(pilot, lambda: "It greets." in app.chat.transcript(), "the answer")
        await settle(pilot)
        pack = app.budget_pane.pack
        assert pack is not None
        mentioned = [i for i in pack.items if i.name == "src dir/greeting.py"]
        assert mentioned and mentioned[0].kind == "file", [(i.name, i.reason) for i in pack.items]
        assert mentioned[0].reason == "named in the task `@src dir/greeting.py`"
        assert "return 'hi ' + name" in fake_anthropic.message_requests()[-1].all_text


async def test_a_name_defined_in_several_files_is_one_suggestion_not_a_crash(
    make_app: AppFactory, make_repo
) -> None:  # type: ignore[no-untyped-def]
    # Typing `@status` in httpx crashed the app: three test files define test_raise_for_status,
    # and the list refused three options with one id (DuplicateID).
    files = {f"tests/test_{n}.py": "def test_raise_for_status():\n    assert True\n" for n in ("a", "b", "c")}
    root = make_repo({**files, "status.py": "def raise_for_status(code):\n    return code\n"})
    app = make_app(root, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        suggestions = app.query_one("#completions", OptionList)
        await pilot.press(*"why ", "@", *"raise_for")
        await wait_for(
            pilot, lambda: suggestions.display and suggestions.option_count >= 2, "the suggestions"
        )
        await settle(pilot)
        labels = [str(suggestions.get_option_at_index(i).prompt) for i in range(suggestions.option_count)]
        ids = [suggestions.get_option_at_index(i).id for i in range(suggestions.option_count)]
        assert ids.count("at:test_raise_for_status") == 1, labels
        assert "symbol test_raise_for_status  (3 files)" in labels, labels
        assert "symbol raise_for_status  (status.py)" in labels, labels
        while suggestions.get_option_at_index(suggestions.highlighted or 0).id != "at:test_raise_for_status":
            await pilot.press("down")
        await pilot.press("tab")
        assert app.prompt.text == "why @test_raise_for_status "


async def test_ordinary_typing_with_at_signs_is_never_captured(make_app: AppFactory, demo_repo: Path) -> None:
    sentence = "why does @app.route need methods? mail bob@example.com about @property\n"
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        type_fast(app, sentence[:-1])
        await wait_for(pilot, lambda: app.prompt.text == sentence[:-1], "the sentence in the prompt")
        await settle(pilot)
        assert app.prompt.text == sentence[:-1]  # every character landed in the prompt, in order
        assert app.screen is app.main  # no picker or dialog took any of it
        await pilot.press("enter")  # enter sends the sentence; it never takes a suggestion
        await settle(pilot)
        assert "› " + sentence[:-1] in app.chat.transcript()


@given(st.text(alphabet="ab .@_/-(", max_size=30))
def test_a_mention_starts_only_at_a_word_start(line: str) -> None:
    query = mention_query(line)
    if query is None:
        return
    at = len(line) - len(query) - 1
    assert line[at] == "@"
    assert at == 0 or line[at - 1].isspace()
    assert all(c.isalnum() or c in "_./-" for c in query)


def test_mention_examples() -> None:
    assert mention_query("explain @conf") == "conf"
    assert mention_query("@") == ""
    assert mention_query("mail bob@example.com") is None
    assert mention_query("why does @app.route(") is None
    assert mention_query("see @app/config.py and") is None
