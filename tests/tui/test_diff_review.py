"""Reviewing a staged session from the keyboard: every review key against a real EditSession."""

from __future__ import annotations

import stat
from pathlib import Path

from engine.config import load_settings
from engine.edits.session import EditSession
from engine.repo.layout import RepoLayout
from semfora_tui.screens.confirm import ConfirmScreen
from semfora_tui.widgets.diff_pane import DiffPane
from tests.tui.conftest import (
    EDIT_BLOCKS,
    SOURCE,
    AppFactory,
    answer_confirmation,
    press_and_answer,
    settle,
    wait_for,
)


def _states(root: Path) -> dict[str, list[str]]:
    layout = RepoLayout.for_path(root)
    session = EditSession.load_or_create(layout, load_settings(root).settings)
    return {f.path: [h.state for h in f.hunks] for f in session.files()}


async def _staged(pilot, app, root: Path) -> DiffPane:  # type: ignore[no-untyped-def]
    (root / "edits.txt").write_text(EDIT_BLOCKS)
    await app.main.run_slash("/edit --from edits.txt")
    await settle(pilot)
    pane = app.diff
    assert [f.path for f in pane.files] == ["app/config.py", "app/server.py"]
    assert app.focused is app.prompt  # staging never takes the keyboard
    await pilot.press("f2")  # review mode, on purpose
    assert pane.has_focus
    return pane


async def test_navigation_keys_move_between_hunks_and_files(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _staged(pilot, app, demo_repo)
        assert pane.current.hunk.path == "app/config.py"
        for key, expected in [
            ("n", "app/server.py"),
            ("p", "app/config.py"),
            ("j", "app/server.py"),
            ("k", "app/config.py"),
            ("N", "app/server.py"),
            ("P", "app/config.py"),
        ]:
            await pilot.press(key)
            await settle(pilot)
            assert pane.current.hunk.path == expected, key
        body = str(pane.query_one("#diff-body").render())
        assert "app/config.py  +1 -1" in body
        assert "+    return int(text.strip())" in body
        assert "[ ] pending" in body


async def test_accept_reject_toggle_and_whole_file_keys(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = await _staged(pilot, app, demo_repo)
        await pilot.press("a")  # accept config.py's hunk, move on to server.py's
        await settle(pilot)
        assert _states(demo_repo) == {"app/config.py": ["accepted"], "app/server.py": ["pending"]}
        assert pane.current.hunk.path == "app/server.py"
        await pilot.press("r")
        await settle(pilot)
        assert _states(demo_repo)["app/server.py"] == ["rejected"]
        await pilot.press("space")
        await settle(pilot)
        assert _states(demo_repo)["app/server.py"] == ["accepted"]
        await pilot.press("R")
        await settle(pilot)
        assert _states(demo_repo)["app/server.py"] == ["rejected"]
        await pilot.press("A")
        await settle(pilot)
        assert _states(demo_repo)["app/server.py"] == ["accepted"]
        assert "[✓] accepted" in str(pane.query_one("#diff-body").render())


async def test_commit_confirms_with_counts_then_undo_restores(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Commit 1 accepted hunk in 1 file?" in app.screen.question
        assert "1 pending hunk will stay staged" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert "return int(text.strip())" in (demo_repo / "app/config.py").read_text()
        assert (demo_repo / "app/server.py").read_text() == SOURCE["app/server.py"]
        assert [f.path for f in app.diff.files] == ["app/server.py"]
        assert app.diff.has_focus  # the confirmation hands the keyboard back to review mode
        await press_and_answer(pilot, app, "u")
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        assert "Undid the last commit" in app.chat.transcript()


async def test_the_commit_question_says_rejected_hunks_stay_staged_too(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """A commit leaves rejected hunks staged; its question named only pending ones, and the
    rejected hunk still in the pane after the commit looked like a fault."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("a", "r")
        await settle(pilot)
        await pilot.press("c")
        screen = await answer_confirmation(pilot, app, "y")
        assert "Commit 1 accepted hunk in 1 file?" in screen.question
        assert "1 rejected hunk will stay staged (/rollback discards what is staged)." in screen.question
        await settle(pilot)
        assert _states(demo_repo) == {"app/server.py": ["rejected"]}


async def test_the_undo_question_says_a_file_the_commit_created_is_removed(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """It said "puts back 2 files" of a commit that created one of them: undo deletes that one."""
    blocks = (
        EDIT_BLOCKS.split("\n\n")[0] + "\n\napp/notes.md\n<<<<<<< SEARCH\n=======\n# Notes\n>>>>>>> REPLACE\n"
    )
    (demo_repo / "edits.txt").write_text(blocks)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.main.run_slash("/edit --from edits.txt")
        await settle(pilot)
        await press_and_answer(pilot, app, "f2", "A", "N", "A", "c")
        assert (demo_repo / "app/notes.md").read_text() == "# Notes\n"
        await pilot.press("u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        assert (
            app.screen.question
            == "Undo the last commit? It puts back app/config.py and removes app/notes.md it created."
        )
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert not (demo_repo / "app/notes.md").exists()
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]


async def test_an_undo_that_staged_hunks_cannot_follow_is_still_reported_as_done(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """The undo puts the files back; a session that cannot follow (here its file is damaged)
    is said after it, not shown as a failed undo."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await press_and_answer(pilot, app, "a", "c")
        assert "return int(text.strip())" in (demo_repo / "app/config.py").read_text()
        (RepoLayout.for_path(demo_repo).edits_dir / "session.json").write_text("{not json", encoding="utf-8")
        await press_and_answer(pilot, app, "u")
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        transcript = app.chat.transcript()
        assert "Undid the last commit: `app/config.py`." in transcript
        assert "⚠ the undo is done, but the hunks still staged could not follow" in transcript
        assert "error[" not in transcript


async def test_a_new_empty_file_says_so_in_the_diff_pane(make_app: AppFactory, demo_repo: Path) -> None:
    """A staged empty `__init__.py` showed a hunk header over nothing."""
    (demo_repo / "edits.txt").write_text("app/sub/__init__.py\n<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE\n")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.main.run_slash("/edit --from edits.txt")
        await settle(pilot)
        assert [f.path for f in app.diff.files] == ["app/sub/__init__.py"]
        body = str(app.diff.query_one("#diff-body").render())
        assert "app/sub/__init__.py" in body and "(an empty file)" in body


async def test_the_commit_question_warns_of_a_syntax_error_in_what_it_writes(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """The pane showed "⚠ syntax error", the question did not: `y` wrote a file that no longer parses."""
    broken = (
        "app/config.py\n<<<<<<< SEARCH\n    return int(text)\n=======\n    return int(text\n"
        "    if text ==\n>>>>>>> REPLACE\n"
    )
    (demo_repo / "broken.txt").write_text(broken)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.main.run_slash("/edit --from broken.txt")
        await settle(pilot)
        assert app.diff.files[0].syntax_error, app.diff.files
        await pilot.press("f2", "a", "c")
        screen = await answer_confirmation(pilot, app, "n")
        assert "Commit 1 accepted hunk in 1 file?" in screen.question
        assert f"⚠ app/config.py: {app.diff.files[0].syntax_error}." in screen.question
        await settle(pilot)
    assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]


async def test_declining_the_commit_changes_nothing(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await press_and_answer(pilot, app, "A", "c", answer="n")
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        assert _states(demo_repo)["app/config.py"] == ["accepted"]


async def test_rollback_key_discards_the_session_after_confirmation(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("x")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "Discard the staged session (2 hunks)?" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert _states(demo_repo) == {}
        assert app.diff.files == ()
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]


async def test_e_opens_the_proposed_version_and_what_is_saved_is_staged(
    make_app: AppFactory, demo_repo: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "editor.log"
    editor = tmp_path / "fake-editor"
    # The "user" sees the proposed line and improves it: `.strip()` becomes `.strip() or 80`.
    editor.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" > {log}\ncat "$2" >> {log}\n'
        "sed -i 's/port = parse_port(cfg)/port = parse_port(cfg) or 80/' \"$2\"\n"
    )
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", f"{editor} -n")  # a wrapper with a flag: no +LINE for unknown editors
    monkeypatch.setenv("VISUAL", "")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("n", "e")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the editor confirmation")
        assert "Open the proposed version of app/server.py at line 6" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await wait_for(
            pilot, lambda: "Staged your edit of" in app.chat.transcript(), "the re-staged proposal"
        )
        await settle(pilot)
        server = next(f for f in app.diff.files if f.path == "app/server.py")
    args, *shown = log.read_text().splitlines()
    assert args.split()[0] == "-n"
    assert args.split()[1].endswith("proposed/app/server.py")  # a scratch copy, never the working tree
    assert "    port = parse_port(cfg)" in shown  # the editor saw the PROPOSED text, not the original
    assert (demo_repo / "app/server.py").read_text() == SOURCE["app/server.py"]
    assert "+    port = parse_port(cfg) or 80" in server.hunks[0].lines
    assert server.hunks[0].state == "pending"


async def test_an_editor_that_exits_non_zero_leaves_the_proposal_as_it_was(
    make_app: AppFactory, demo_repo: Path, tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """vim's `:cq` (or a crash) after a write: the app staged what the editor left behind."""
    editor = tmp_path / "failing-editor"
    editor.write_text("#!/bin/sh\nsed -i 's/port = parse_port(cfg)/port = 0/' \"$1\"\nexit 3\n")
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.setenv("VISUAL", "")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        before = next(f for f in app.diff.files if f.path == "app/server.py").hunks[0].lines
        await pilot.press("n", "e")
        await answer_confirmation(pilot, app, "y")
        await wait_for(pilot, lambda: "error[EDITOR_FAILED]" in app.chat.transcript(), "the editor's failure")
        await settle(pilot)
        transcript = app.chat.transcript()
        assert (
            f"{editor} exited with status 3: the staged version of app/server.py is unchanged" in transcript
        )
        assert "Staged your edit" not in transcript
        server = next(f for f in app.diff.files if f.path == "app/server.py")
        assert server.hunks[0].lines == before and "+    port = 0" not in server.hunks[0].lines
    layout = RepoLayout.for_path(demo_repo)
    staged = EditSession.load_or_create(layout, load_settings(demo_repo).settings).proposed_text(
        "app/server.py"
    )
    assert "port = parse_port(cfg)" in staged and "port = 0" not in staged


async def test_e_without_an_editor_says_how_to_set_one(
    make_app: AppFactory, demo_repo: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("e")
        await settle(pilot)
        out = app.chat.transcript()
        assert "error[NO_EDITOR]" in out and "export EDITOR=" in out
        assert not isinstance(app.screen, ConfirmScreen)


async def test_a_file_changed_on_disk_shows_a_conflict_in_place(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        (demo_repo / "app/config.py").write_text(
            "import os\n\n\n" + SOURCE["app/config.py"].replace("def load_config", "def read_config")
        )
        await app.main.run_slash("/preview")
        await settle(pilot)
        body = str(app.diff.query_one("#diff-body").render())
        assert "⚠ conflict" in body and "/rebase re-applies" in body
        assert "app/config.py" in app.chat.transcript()
        # `b` in review mode re-applies the hunk onto the file as it is now.
        app.main.enter_review()
        await pilot.press("b")
        await settle(pilot)
        assert "Rebased `app/config.py` onto the files on disk: re-applied 1 hunk." in app.chat.transcript()
        body = str(app.diff.query_one("#diff-body").render())
        assert "⚠ conflict" not in body
        assert (demo_repo / "app/config.py").read_text().startswith("import os")


async def test_footer_hides_review_keys_that_do_not_apply(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("f2")
        await settle(pilot)
        keys = set(app.active_bindings)
        assert {"a", "r", "space", "c", "x", "e"}.isdisjoint(keys)  # nothing staged
        assert "u" in keys and "f2" in keys
        assert app.main.keybar.plain == "REVIEW u undo ? keys esc back"
        await pilot.press("escape")
        await _staged(pilot, app, demo_repo)
        keys = set(app.active_bindings)
        assert {"a", "r", "space", "x", "e", "N"} <= keys
        assert "c" not in keys  # nothing accepted yet
        await pilot.press("a")
        await settle(pilot)
        assert "c" in app.active_bindings


async def test_the_diff_pane_can_be_maximized_from_review_mode(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _staged(pilot, app, demo_repo)
        offered = [command.title for command in app.get_system_commands(app.main)]
        assert "Maximize" in offered  # the palette offers it while the diff pane has the keys
        await pilot.press("m")
        assert app.main.maximized is app.diff
        await pilot.press("escape")  # escape first restores the layout...
        assert app.main.maximized is None and app.diff.has_focus
        await pilot.press("escape")  # ...then goes back to the prompt
        assert app.focused is app.prompt


async def test_the_80_column_footer_keeps_the_keys_that_change_files(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """At 80 columns, with a hunk accepted, the footer dropped `x rollback` and `e edit` (the
    docs promise commit, undo, rollback, edit and the way back stay visible)."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("a")
        await settle(pilot)
        footer = app.main.keybar.plain
        for keys in ("a/r accept/reject", "c commit", "u undo", "x rollback", "e edit", "esc back"):
            assert keys in footer, (keys, footer)
        await pilot.press("r", "p", "r")  # nothing accepted: no `c`, and room for the rest
        await settle(pilot)
        footer = app.main.keybar.plain
        assert "c commit" not in footer
        for keys in ("n/p hunk", "u undo", "x rollback", "e edit", "? keys", "esc back"):
            assert keys in footer, (keys, footer)


async def test_hunks_left_staged_by_an_earlier_run_are_named_at_start(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """The app opened on hunks staged by an earlier run (or `semfora ask --stage`) without a word
    in the chat: only the side pane showed them."""
    layout = RepoLayout.for_path(demo_repo)
    session = EditSession.load_or_create(layout, load_settings(demo_repo).settings)
    session.stage_blocks(EDIT_BLOCKS)
    session.reject(session.files()[1].hunks[0].id)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert (
            "Still staged from an earlier session: 2 hunks in `app/config.py`, `app/server.py` "
            "(1 pending, 1 rejected), not written to the files. F2 or `/review` reviews them; "
            "`/rollback` discards them." in app.chat.transcript()
        )
        assert app.focused is app.prompt


async def test_hunks_left_staged_on_a_file_changed_since_say_so_at_start(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """A staged file changed on disk while semfora was closed: the start note said "2 pending"
    and nothing of the change (the watcher only tells of changes while the app runs)."""
    layout = RepoLayout.for_path(demo_repo)
    EditSession.load_or_create(layout, load_settings(demo_repo).settings).stage_blocks(EDIT_BLOCKS)
    (demo_repo / "app/server.py").write_text(SOURCE["app/server.py"] + "\n\ndef stop():\n    pass\n")
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "Still staged from an earlier session: 2 hunks" in transcript
        assert (
            "**Changed on disk since:** `app/server.py`. `/rebase` (or `b` in review) re-applies its hunks."
            in transcript
        )


async def test_a_rebase_that_conflicts_says_so_in_plain_words(make_app: AppFactory, demo_repo: Path) -> None:
    """It said "re-applied 0 hunks; 1 conflict: reject them"."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        (demo_repo / "app/config.py").write_text(SOURCE["app/config.py"].replace("int(text)", "float(text)"))
        await app.main.run_slash("/preview")  # (the disk watcher is off in these tests)
        await settle(pilot)
        app.main.enter_review()
        await pilot.press("b")
        await settle(pilot)
        assert (
            "Rebased `app/config.py` onto the files on disk: **1 conflict** "
            "(reject it, or ask for the change again)." in app.chat.transcript()
        )


async def test_hunks_staged_in_this_run_are_not_called_earlier_ones(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        (demo_repo / "edits.txt").write_text(EDIT_BLOCKS)
        await app.main.run_slash("/edit --from edits.txt")  # before the start-up look at the session
        await settle(pilot)
        assert len(app.diff.files) == 2
        assert "earlier session" not in app.chat.transcript()


async def test_two_close_hunks_each_show_context_without_the_others_change(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """Two blocks two lines apart were two hunks whose contexts overlapped: the first showed the
    second's old line as unchanged context (accepting both, that line is not in the file)."""
    (demo_repo / "edits.txt").write_text(
        "app/config.py\n<<<<<<< SEARCH\n        return fh.read()\n=======\n"
        "        return fh.read().strip()\n>>>>>>> REPLACE\n\n"
        "app/config.py\n<<<<<<< SEARCH\ndef parse_port(text):\n=======\n"
        "def parse_port(text: str) -> int:\n>>>>>>> REPLACE\n"
    )
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.main.run_slash("/edit --from edits.txt")
        await settle(pilot)
        first, second = app.diff.files[0].hunks
        assert first.lines == (
            " def load_config(path):",
            '     """Read the settings file."""',
            "     with open(path) as fh:",
            "-        return fh.read()",
            "+        return fh.read().strip()",
            " ",
            " ",
        )
        assert second.lines == (
            " ",
            " ",
            "-def parse_port(text):",
            "+def parse_port(text: str) -> int:",
            "     return int(text)",
        )
        assert (first.header, second.header) == ("@@ -1,6 +1,6 @@", "@@ -5,4 +5,4 @@")
        body = str(app.diff.query_one("#diff-body").render())
        assert body.count("def parse_port(text):") == 1  # only as the removed line, never as context


async def _conflicted(pilot, app, root: Path) -> None:  # type: ignore[no-untyped-def]
    """Stage EDIT_BLOCKS, change the line app/config.py's hunk replaces, and rebase: a conflict."""
    await _staged(pilot, app, root)
    (root / "app/config.py").write_text(SOURCE["app/config.py"].replace("int(text)", "float(text)"))
    await app.main.run_slash("/rebase")
    await settle(pilot)


async def test_a_conflicted_hunk_says_where_it_was_not_line_zero(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """A hunk that no longer fits the file was headed "@@ -0,1 +0,1 @@": a change at line 0."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _conflicted(pilot, app, demo_repo)
        body = str(app.diff.query_one("#diff-body").render())
        assert "@@ -0," not in body
        assert "app/config.py @@ conflict: no longer fits the file (was at line 8) @@" in body
        assert "-    return int(text)" in body and "+    return int(text.strip())" in body
        # The file's row counts it as a conflict, not as one more pending hunk, and the hunk does
        # not send the user back to /rebase, which just failed to place it.
        assert "app/config.py  +0 -0  1 hunk: 0 ✓ 0 ✗ 0 pending  ⚠ 1 conflict" in body
        assert "reject it, or ask for the change again" in body and "/rebase re-applies it" not in body


async def test_at_80_columns_what_a_review_key_says_is_shown_though_the_chat_is_hidden(
    make_app: AppFactory, demo_repo: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Review mode under 120 columns gives the diff pane the whole screen: `?` (the footer's
    "keys"), a commit's note and `e`'s NO_EDITOR went to the hidden chat, and nothing happened."""
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _staged(pilot, app, demo_repo)
        assert not app.chat.display
        await pilot.press("question_mark")
        await settle(pilot)
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert any("Review mode" in t and "c commit" in t for t in toasts), toasts
        assert not any("`" in t or "**" in t for t in toasts), toasts  # plain text, not Markdown
        await pilot.press("e")
        await settle(pilot)
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert any("error[NO_EDITOR]" in t and "export EDITOR=" in t for t in toasts), toasts
        await pilot.press("a")
        await pilot.press("c")
        await answer_confirmation(pilot, app)
        await settle(pilot)
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert any(t.startswith("Committed 1 hunk") for t in toasts), toasts


async def test_accept_all_counts_only_the_hunks_it_can_accept(make_app: AppFactory, demo_repo: Path) -> None:
    """With one of two hunks in conflict, /accept all asked "Accept all 2 staged hunks in 2
    files?" and accepted one: a conflict is never accepted."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _conflicted(pilot, app, demo_repo)
        app.main.leave_review()
        await app.main.run_slash("/accept all")
        screen = await answer_confirmation(pilot, app)
        assert "Accept all 1 staged hunk in 1 file?" in screen.question
        assert "Left out: 1 conflict, which no longer fits the file." in screen.question
        await settle(pilot)
        assert _states(demo_repo) == {"app/config.py": ["pending"], "app/server.py": ["accepted"]}


async def test_every_hunk_id_is_in_view_at_120_columns_beside_a_long_path(
    make_app: AppFactory, make_repo
) -> None:
    """The id (what `/accept ID` takes) came after the path, the header and the state, past the
    pane's right edge: at 120 columns `#9ca6b7b7` showed as `#9c`."""
    deep = "src/semfora_demo/configuration/loaders/settings_file.py"
    root = make_repo({deep: SOURCE["app/config.py"]})
    blocks = EDIT_BLOCKS.split("\n\n")[0].replace("app/config.py", deep)
    (root / "edits.txt").write_text(blocks)
    app = make_app(root, start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.main.run_slash("/edit --from edits.txt")
        await settle(pilot)
        pane = app.diff
        for reviewing in (False, True):  # the pane is narrower while the prompt has the keyboard
            if reviewing:
                await pilot.press("f2")
                await settle(pilot)
            width = pane.scrollable_content_region.width
            lines = str(pane.query_one("#diff-body").render()).splitlines()
            for hunk in (h for f in pane.files for h in f.hunks):
                (head,) = [line for line in lines if f"#{hunk.id}" in line]
                assert head.index(f"#{hunk.id}") + len(hunk.id) + 1 <= width, (reviewing, width, head)
                assert head.lstrip("▶ ").startswith("[ ] pending")


async def test_the_commit_question_counts_a_conflicted_hunk_as_conflicted_not_pending(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _conflicted(pilot, app, demo_repo)  # app/config.py's hunk no longer fits
        app.main.enter_review()
        await pilot.press("N", "a", "c")
        screen = await answer_confirmation(pilot, app, "n")
        assert "Commit 1 accepted hunk in 1 file?" in screen.question
        assert "1 conflicted hunk will stay staged" in screen.question, screen.question
        assert "pending" not in screen.question  # the pane says "0 pending ⚠ 1 conflict"


async def test_commit_of_a_file_changed_on_disk_says_rebase_first_without_asking(
    make_app: AppFactory, demo_repo: Path
) -> None:
    """The question was asked, and its "y" ended in EDIT_CONFLICT: nothing could be written."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _staged(pilot, app, demo_repo)
        await pilot.press("a")
        await settle(pilot)
        changed = "import os\n\n\n" + SOURCE["app/config.py"]
        (demo_repo / "app/config.py").write_text(changed)
        await app.main.run_slash("/preview")
        await settle(pilot)
        app.main.enter_review()
        await pilot.press("c")
        await settle(pilot)
        assert not isinstance(app.screen, ConfirmScreen)
        toasts = [str(n.message) for n in app._notifications]  # type: ignore[attr-defined]
        assert any("Changed on disk since staging: app/config.py" in t and "/rebase" in t for t in toasts), (
            toasts
        )
    assert (demo_repo / "app/config.py").read_text() == changed
