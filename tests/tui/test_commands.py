"""Every slash command, driven through the prompt of a real app on a small real repository."""

from __future__ import annotations

from pathlib import Path

from textual.command import CommandPalette
from textual.widgets import OptionList

from engine.config import DEFAULT_MODEL, load_settings
from semfora_tui import slash
from semfora_tui.screens.confirm import ConfirmScreen
from semfora_tui.screens.picker import PickerScreen
from tests.conftest import git
from tests.tui.conftest import (
    EDIT_BLOCKS,
    SOURCE,
    TWO_HUNK_BLOCKS,
    AppFactory,
    answer_confirmation,
    settle,
    spread_config,
    wait_for,
)


async def _run(pilot, app, text: str) -> str:  # type: ignore[no-untyped-def]
    """Type ``text`` into the prompt, submit it, and return what it added to the chat."""
    before = app.chat.transcript()
    app.prompt.load_text(text)
    app.prompt.focus()
    await pilot.press("enter")
    await settle(pilot)
    return app.chat.transcript()[len(before) :]


async def _stage(pilot, app, root: Path) -> None:  # type: ignore[no-untyped-def]
    (root / "edits.txt").write_text(EDIT_BLOCKS)
    out = await _run(pilot, app, "/edit --from edits.txt")
    assert "Staged 2 hunks in 2 files" in out


async def test_help_lists_every_command_and_unknown_suggests(make_app: AppFactory) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, "/help")
        for command in slash.COMMANDS:
            assert command.usage.replace("|", "\\|") in out
        out = await _run(pilot, app, "/comit")
        assert "error[UNKNOWN_COMMAND]" in out and "did you mean /commit?" in out


async def test_search_opens_results_and_a_result_shows_its_source(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/search parse_port")
        assert "app/config.py" in out
        assert isinstance(app.screen, PickerScreen)
        labels = [item.label for item in app.screen.items]
        assert any("parse_port" in label for label in labels)
        index = next(i for i, label in enumerate(labels) if "parse_port" in label)
        for _ in range(index):
            await pilot.press("down")
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, PickerScreen)
        assert "return int(text)" in app.chat.transcript()


async def test_typing_in_the_result_list_filters_it(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _run(pilot, app, "/search parse_port load_config start")
        assert isinstance(app.screen, PickerScreen)
        picker = app.screen
        labels = [item.label for item in picker.items]
        assert len(labels) >= 3 and "load_config" not in labels[0], labels
        # Words in any order and case narrow the list to the lines holding them all.
        await pilot.press(*"LOAD config")
        await wait_for(pilot, lambda: len(picker.items) < len(labels), "the list to narrow")
        assert [item.label for item in picker.items] == [label for label in labels if "load_config" in label]
        # A filter nothing matches says so, and enter chooses nothing; deleting it brings the line back.
        await pilot.press(*"zz")
        await wait_for(pilot, lambda: not picker.items, "the list to empty")
        shown = picker.query_one(OptionList)
        assert shown.option_count == 1 and "nothing matches 'LOAD configzz'" in str(
            shown.get_option_at_index(0).prompt
        )
        await pilot.press("enter")
        assert app.screen is picker
        await pilot.press("backspace", "backspace")
        await wait_for(pilot, lambda: len(picker.items) == 1, "the line to come back")
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, PickerScreen)
        assert "Read the settings file." in app.chat.transcript()  # load_config's source, not the first hit's


async def test_symbol_and_overview(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/symbol load_config")
        assert "load_config" in out and "app/config.py" in out
        out = await _run(pilot, app, "/symbol no_such_thing_anywhere")
        assert "no_such_thing_anywhere" in out
        out = await _run(pilot, app, "/overview")
        assert "Repository overview" in out and "app/config.py" in out
        # Written for a person: counts in words and lists, not the model's TOON tables.
        assert "2 files" in out and "**Modules**" in out
        assert "totals:" not in out and "{name," not in out


async def test_diff_shows_a_semantic_diff_of_the_working_tree(make_app: AppFactory, demo_repo: Path) -> None:
    (demo_repo / "app/config.py").write_text(
        SOURCE["app/config.py"] + "\n\ndef parse_host(text):\n    return text\n"
    )
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, "/diff")
        assert "Semantic diff" in out
        assert "parse_host" in out
        out = await _run(pilot, app, "/diff no-such-ref")
        assert "error[" in out
        # A secret file that changed is named, never shown (its defaults carry its values).
        (demo_repo / "credentials.py").write_text(
            'def load_secret(password="hunter3"):\n    return password\n'
        )
        git(demo_repo, "add", "credentials.py")
        out = await _run(pilot, app, "/diff")
        assert "credentials.py" in out and "parse_host" in out
        assert "hunter3" not in out and "load_secret" not in out


async def test_preview_accept_reject_commit_undo_rollback(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
        out = await _run(pilot, app, "/preview")
        assert "`app/config.py` +1 -1: 0 accepted, 0 rejected, 1 pending" in out
        hunk_ids = [h.id for f in app.diff.files for h in f.hunks]
        await _run(pilot, app, f"/accept {hunk_ids[0]}")
        assert [h.state for f in app.diff.files for h in f.hunks] == ["accepted", "pending"]
        await _run(pilot, app, f"/reject {hunk_ids[1]}")
        assert [h.state for f in app.diff.files for h in f.hunks] == ["accepted", "rejected"]
        await _run(pilot, app, "/accept all")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert {h.state for f in app.diff.files for h in f.hunks} == {"accepted"}
        await _run(pilot, app, "/reject all")
        assert {h.state for f in app.diff.files for h in f.hunks} == {"rejected"}
        out = await _run(pilot, app, "/accept nope-id")
        assert "error[" in out
        await _run(pilot, app, "/accept")  # the selected hunk (the first)
        await _run(pilot, app, "/commit")
        assert isinstance(app.screen, ConfirmScreen)
        assert "Commit 1 accepted hunk in 1 file?" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert "int(text.strip())" in (demo_repo / "app/config.py").read_text()
        before = app.chat.transcript()
        await _run(pilot, app, "/undo")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        out = app.chat.transcript()[len(before) :]
        assert "Undid the last commit" in out
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        out = await _run(pilot, app, "/undo")
        assert "error[" in out and "nothing to undo" in out
        await _run(pilot, app, "/rollback")
        assert isinstance(app.screen, ConfirmScreen)
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert app.diff.files == ()
        out = await _run(pilot, app, "/commit")
        assert app.screen is not None and not isinstance(app.screen, ConfirmScreen)


async def test_edit_from_a_file_outside_the_repository_is_refused(
    make_app: AppFactory, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text(EDIT_BLOCKS)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, f"/edit --from {outside}")
        # It said only "path is outside the repository": not what /edit --from reads, nor what to do.
        assert (
            f"error[PATH_OUTSIDE_REPO]**: /edit --from reads a file inside the repository, and {outside}"
            in out
        )
        assert "semfora edits stage FILE" in out
        assert app.diff.files == ()


async def test_edit_from_a_missing_file_a_directory_or_a_binary_file_says_so_plainly(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """The app showed Python's words: "[Errno 2] No such file or directory: '/abs/path'" and
    "'utf-8' codec can't decode byte 0x89 in position 0: invalid start byte"."""
    (demo_repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, "/edit --from nope.txt")
        assert "error[PATH_NOT_FOUND]**: cannot read nope.txt: No such file or directory" in out, out
        out = await _run(pilot, app, "/edit --from app")
        assert "error[PATH_INVALID]**: app is a directory" in out, out
        out = await _run(pilot, app, "/edit --from logo.png")
        assert "logo.png is not UTF-8 text" in out, out
        assert "Errno" not in app.chat.transcript() and "codec" not in app.chat.transcript()
        assert app.diff.files == ()


async def test_commit_with_nothing_staged_says_nothing_is_staged(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """It said "No accepted hunks to commit: accept some with a, A or /accept" of nothing at all."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _run(pilot, app, "/commit")
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert toasts == ["Nothing is staged, so nothing to commit."], toasts
        await _stage(pilot, app, demo_repo)
        await _run(pilot, app, "/commit")
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert toasts[-1] == "No accepted hunks to commit: accept some with a, A or /accept.", toasts


async def test_status_budget_cost_model_clear(make_app: AppFactory) -> None:
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/status")
        assert "index:" in out and "budget:" in out and "memory:" in out and "staged:" in out
        assert "no context pack yet" in out and "last pack no pack" not in out
        out = await _run(pilot, app, "/budget 3000")
        assert "3,000 tokens" in out
        assert app.bridge.budget == 3000
        assert "3,000" in str(app.budget_pane.query_one("#budget-bar").render())
        out = await _run(pilot, app, "/budget lots")
        assert "error[USAGE]" in out
        out = await _run(pilot, app, "/budget 10")
        assert "between 500 and 200000" in out
        out = await _run(pilot, app, "/cost")
        assert "Session:" in out and "$0.0000" in out
        out = await _run(pilot, app, "/model")
        assert DEFAULT_MODEL in out and "ANTHROPIC_API_KEY" in out
        out = await _run(pilot, app, "/model ollama/qwen2.5-coder:7b")
        # Said at once: the check can take seconds (LiteLLM's import, a slow Ollama), and the
        # chat said nothing until it ended while the header already named the new model.
        assert out.index("Switching to `ollama/qwen2.5-coder:7b`: checking that it can be used") < out.index(
            "cannot be used"
        )
        assert "cannot be used" in out and "Ollama" in out
        assert app.header.model == "ollama/qwen2.5-coder:7b"
        # A model no provider serves: refused when chosen, with the way to name it.
        out = await _run(pilot, app, "/model mistral-large-latest")
        assert "cannot be used" in out and "does not know which provider serves" in out
        assert "mistral/mistral-large-latest" in out
        await _run(pilot, app, "/clear")
        assert app.chat.transcript() == ""


async def test_context_builds_a_pack_without_a_model(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/context")
        assert "No context pack yet" in out
        out = await _run(pilot, app, "/context how is the port parsed")
        assert "Context pack" in out and "parse_port" in out
        pack = app.budget_pane.pack
        assert pack is not None and pack.total_tokens <= pack.budget
        table = app.budget_pane.query_one("#budget-table")
        assert table.row_count == len(pack.items)
        out = await _run(pilot, app, "/context")
        assert "Context pack" in out  # the last pack again, in full


async def test_index_and_rebuild(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.header.index_state.startswith("index: 2 files")
        (demo_repo / "app/extra.py").write_text("def extra():\n    return 1\n")
        out = await _run(pilot, app, "/index")
        assert "Re-indexing" in out
        await settle(pilot)
        assert app.header.index_state.startswith("index: 3 files")
        assert "**Index ready:** 3 files, " in app.chat.transcript()
        assert "call sites (0 changed, 1 added, 0 deleted)" in app.chat.transcript()
        out = await _run(pilot, app, "/index --rebuild")
        assert "Rebuilding" in out
        await settle(pilot)
        assert app.header.index_state.startswith("index: 3 files")


async def test_index_counts_agree_with_their_number(make_app: AppFactory, make_repo) -> None:  # type: ignore[no-untyped-def]
    root = make_repo({"only.py": "def solo():\n    return 1\n"})
    app = make_app(root, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.header.index_state.startswith("index: 1 file · 1 symbol"), app.header.index_state
        await _run(pilot, app, "/index --rebuild")
        await settle(pilot)
        assert (
            "**Index ready:** 1 file, 1 symbol, 0 call sites (rebuilt from scratch)" in app.chat.transcript()
        )


async def test_resume_restores_the_staged_session(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
    again = make_app(start_index=False, check_model=False, resume=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "Resumed the last session" in again.chat.transcript()
        assert [f.path for f in again.diff.files] == ["app/config.py", "app/server.py"]
        out = await _run(pilot, again, "/resume")
        assert "Staged: 2 files, 2 hunks" in out
        assert again.focused is again.prompt


async def test_theme_lists_and_quit_exits(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, "/theme")
        assert "semfora-solarized" in out
        await _run(pilot, app, "/theme semfora-light")
        assert load_settings(demo_repo).settings.ui.theme == "semfora-light"
        app.prompt.load_text("/quit")
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 0


async def test_every_command_is_in_the_palette(make_app: AppFactory) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"/status")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert "memory:" in app.chat.transcript()
        # Commands that need an argument pre-fill the prompt instead of running.
        await pilot.press("ctrl+p")
        await settle(pilot)
        await pilot.press(*"/budget")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.prompt.text == "/budget "


async def test_help_keeps_rows_with_a_bar_whole(make_app: AppFactory) -> None:
    from textual.widgets import Markdown

    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await _run(pilot, app, "/help")
        note = app.chat.query(Markdown).last()
        table = note.query("MarkdownTable").first()
        rows = [[str(cell) for cell in row] for row in table._rows]  # type: ignore[attr-defined]
        cells = {row[0]: row[1] for row in rows if len(row) == 2}
        assert cells.get("/edit TASK | /edit --from FILE") == (
            "ask for edits and stage them, or stage edit blocks from a file"
        ), rows
        assert cells.get("/accept [HUNK|FILE|all]", "").startswith("accept the selected hunk")
        assert "Review mode" in app.chat.transcript()


async def test_the_palette_shows_bracketed_arguments(make_app: AppFactory) -> None:
    from textual.content import Content

    from semfora_tui.palette import SlashCommandProvider

    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+p")
        await settle(pilot)
        palette = app.screen
        assert isinstance(palette, CommandPalette)
        provider = SlashCommandProvider(palette)
        helps = {}
        async for hit in provider.search("diff"):
            helps[str(hit.text)] = Content.from_markup(hit.help or "").plain
        assert helps["/diff"].startswith("/diff [BASE] [TARGET] — semantic diff")
        await pilot.press("escape")


async def test_paths_with_underscores_are_not_read_as_markdown(make_app: AppFactory, make_repo) -> None:  # type: ignore[no-untyped-def]
    root = make_repo({"pkg/__init__.py": "def default_value():\n    return 1\n", "README.md": "# x\n"})
    (root / "edits.txt").write_text(
        "pkg/__init__.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    )
    app = make_app(root, check_model=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await _run(pilot, app, "/context what does default_value return")
        await _run(pilot, app, "/preview")
        await _run(pilot, app, "/edit --from edits.txt")
        await _run(pilot, app, "/preview")
        await _run(pilot, app, "/search default_value")
        await pilot.press("escape")
        await settle(pilot)
        screen = app.export_screenshot()
        assert screen.count("__init__.py") >= 3, "a path lost its underscores on screen"
        assert "init.py" not in screen.replace("__init__.py", "")


async def test_context_rows_stay_one_line_each(make_app: AppFactory) -> None:
    from semfora_tui.widgets.reply import TableNote

    app = make_app(check_model=False)
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        await _run(pilot, app, "/context how is the port parsed and where is the config loaded")
        pack = app.budget_pane.pack
        assert pack is not None and pack.items
        assert any(len(item.reason) > 40 for item in pack.items), [i.reason for i in pack.items]
        note = app.chat.query(TableNote).last()
        assert note.size.height == len(pack.items) + 1  # the header, then one line per item


async def test_context_names_are_whole_at_120_columns(make_app: AppFactory, make_repo) -> None:  # type: ignore[no-untyped-def]
    """At 120 columns the chat is about 56 wide, and the one-line table cut every name to 12
    characters ("AsyncClient.…"); each name is shown whole, its reason under it."""
    from textual.geometry import Region

    from semfora_tui.widgets.reply import TableNote

    root = make_repo(
        {
            "transport/redirects.py": (
                "def follow_redirect_chain_with_history(response, limit):\n"
                '    """Follow the redirect chain of a response up to limit hops."""\n'
                "    return response\n"
            ),
            "README.md": "# x\n",
        }
    )
    app = make_app(root, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _run(pilot, app, "/context how does follow_redirect_chain_with_history follow redirects")
        pack = app.budget_pane.pack
        assert pack is not None
        names = [i.name for i in pack.items]
        assert any("follow_redirect_chain_with_history" in name for name in names), names
        note = app.chat.query(TableNote).last()
        shown = "".join(
            strip.text.strip()
            for strip in note.render_lines(Region(0, 0, note.content_region.width, note.size.height))
        )
        for item in pack.items:
            assert item.name.replace(" ", "") in shown.replace(" ", ""), (item.name, shown)


async def test_error_hints_point_to_the_app(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
        out = await _run(pilot, app, "/accept zzzz")
        assert "error[HUNK_NOT_FOUND]" in out
        assert "semfora edits" not in out and "`/preview` lists the staged hunks" in out


async def test_undo_force_is_honoured(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
        await _run(pilot, app, "/accept all")
        await answer_confirmation(pilot, app, "y")
        await _run(pilot, app, "/commit")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        changed_later = (demo_repo / "app/config.py").read_text() + "# my own change\n"
        (demo_repo / "app/config.py").write_text(changed_later)
        before = app.chat.transcript()
        await _run(pilot, app, "/undo")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        out = app.chat.transcript()[len(before) :]
        assert "error[UNDO_REFUSED]" in out and "`/undo --force` reverts anyway" in out
        assert (demo_repo / "app/config.py").read_text() == changed_later
        await _run(pilot, app, "/undo --force")
        assert "--force: changes made to them since the commit are overwritten" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        assert "overwrote later changes to `app/config.py`" in app.chat.transcript()


async def test_accept_or_reject_a_staged_file_by_its_path(make_app: AppFactory, demo_repo: Path) -> None:
    """`/accept app/config.py` said "'app/config.py' is not a staged file" of a staged file."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
        out = await _run(pilot, app, "/accept app/config.py")
        assert "error[" not in out, out
        states = {f.path: [h.state for h in f.hunks] for f in app.diff.files}
        assert states == {"app/config.py": ["accepted"], "app/server.py": ["pending"]}
        await _run(pilot, app, "/reject app/server.py")
        assert [h.state for h in app.diff.files[1].hunks] == ["rejected"]


async def test_reject_all_says_what_it_did_and_when_there_is_nothing_to_reject(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        out = await _run(pilot, app, "/reject all")  # it said nothing at all
        assert "Nothing to reject: nothing is staged." in out
        out = await _run(pilot, app, "/accept all")  # "every staged hunk is accepted already (or …)"
        assert "Nothing to accept: nothing is staged." in out and "already" not in out
        await _stage(pilot, app, demo_repo)
        out = await _run(pilot, app, "/reject all")
        assert "Rejected 2 hunks in 2 files" in out
        assert {h.state for f in app.diff.files for h in f.hunks} == {"rejected"}
        out = await _run(pilot, app, "/reject all")
        assert "Nothing to reject: every staged hunk is rejected already." in out


async def test_a_rejected_hunk_does_not_block_a_new_edit_of_the_same_lines(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage(pilot, app, demo_repo)
        await _run(pilot, app, "/reject all")
        # A new block whose SEARCH is the file as it is on disk (the rejected proposal is not).
        (demo_repo / "again.txt").write_text(
            "app/config.py\n<<<<<<< SEARCH\n    return int(text)\n=======\n    return int(text, 10)\n>>>>>>> REPLACE\n"
        )
        out = await _run(pilot, app, "/edit --from again.txt")
        assert "error[" not in out, out
        config = next(f for f in app.diff.files if f.path == "app/config.py")
        assert [h.state for h in config.hunks] == ["pending"]
        assert "+    return int(text, 10)" in config.hunks[0].lines
        assert not any("text.strip()" in line for line in config.hunks[0].lines)


async def test_status_explains_vectors_off(make_app: AppFactory) -> None:
    app = make_app(check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.header.vectors == "vectors off: embedding=none"
        out = await _run(pilot, app, "/status")
        assert "vectors off: embedding=none — search.embedding is 'none'" in out
        assert "Set it to `auto`" in out


async def test_resume_shows_the_whole_conversation_failed_turns_included(
    make_app: AppFactory, fake_anthropic
) -> None:  # type: ignore[no-untyped-def]
    from tests.tui.conftest import submit, wait_for

    fake_anthropic.error(400, "invalid_request_error")
    fake_anthropic.reply("The port is parsed by `parse_port`.")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await submit(pilot, app, "first: why does this fail?")
        await wait_for(pilot, lambda: "✗ failed" in app.chat.transcript() and not app.main.streaming)
        await submit(pilot, app, "second: where is the port parsed?")
        await wait_for(pilot, lambda: "✓ answered" in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
    again = make_app(resume=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "Resumed the last session" in again.chat.transcript(), "the resume")
        await settle(pilot)
        transcript = again.chat.transcript()
        first = transcript.index("› first: why does this fail?")
        failed = transcript.index("✗ error: ")
        second = transcript.index("› second: where is the port parsed?")
        answer = transcript.index("The port is parsed by `parse_port`.")
        assert first < failed < second < answer
        assert "(2 earlier turns above)" in transcript


async def test_a_hunk_still_staged_in_an_undone_file_stays_staged_without_a_conflict(
    make_app: AppFactory, demo_repo: Path
) -> None:
    spread_config(demo_repo)
    original = (demo_repo / "app/config.py").read_text()
    (demo_repo / "edits.txt").write_text(TWO_HUNK_BLOCKS)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert "Staged 2 hunks in 1 file" in await _run(pilot, app, "/edit --from edits.txt")
        first, second = (h.id for h in app.diff.files[0].hunks)
        await _run(pilot, app, f"/accept {first}")
        await _run(pilot, app, "/commit")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert "as text" in (demo_repo / "app/config.py").read_text()
        await _run(pilot, app, "/undo")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert (demo_repo / "app/config.py").read_text() == original
        (staged,) = app.diff.files
        assert staged.conflict is None
        assert [(h.id, h.state) for h in staged.hunks] == [(second, "pending")]
        await _run(pilot, app, f"/accept {second}")
        await _run(pilot, app, "/commit")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert (demo_repo / "app/config.py").read_text() == original.replace("int(text)", "int(text.strip())")


async def test_diff_outside_git_gives_advice_that_works_in_the_app(
    make_app: AppFactory, tmp_path: Path
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("def f():\n    return 1\n")
    app = make_app(plain, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/diff")
        assert "DIFF_NOT_GIT" in out and "git init" in out
        assert "--path" not in out  # a command-line flag: the app has no such option


async def test_status_names_the_model_once_then_says_how_it_is_reached(
    make_app: AppFactory, fake_anthropic
) -> None:  # type: ignore[no-untyped-def]
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.offline is False
        out = await _run(pilot, app, "/status")
        (model_line,) = [line for line in out.splitlines() if "model:" in line]
        assert model_line.count(app.bridge.model) == 1, model_line
        assert "via the Anthropic API" in model_line


async def test_symbol_says_when_a_name_is_shared_and_which_one_it_shows(
    make_app: AppFactory, make_repo
) -> None:  # type: ignore[no-untyped-def]
    root = make_repo(
        {
            "shop/cart.py": "class Cart:\n    def __init__(self):\n        self.items = []\n",
            "shop/order.py": "class Order:\n    def __init__(self, cart):\n        self.cart = cart\n",
        }
    )
    app = make_app(root, check_model=False)
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        out = await _run(pilot, app, "/symbol __init__")
        assert "2 symbols are named `__init__`" in out, out
        cart_first = "this is `Cart" in out
        shown, other = (
            ("Cart.__init__", "Order.__init__") if cart_first else ("Order.__init__", "Cart.__init__")
        )
        assert f"this is `{shown}`" in out and f"Others: `{other}`" in out
        out = await _run(pilot, app, f"/symbol {other}")
        assert "are named" not in out and other in out
