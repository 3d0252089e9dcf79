"""The keyboard model: keystrokes go where the user is typing (issue 12, blocker 1).

A staged reply, a streaming reply, `/preview` and `--resume` never move the focus. Review is
a mode the user enters (F2, a click, `/review`) and leaves with escape; the footer says which.
Keys typed at full speed (a burst, a paste) never run review commands, never answer a
confirmation that appeared after them, and arrive in the prompt.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from textual import events

from engine.config import load_settings
from engine.edits.session import EditSession
from engine.edits.writer import history_records
from engine.repo.layout import RepoLayout
from semfora_tui.app import SemforaApp
from semfora_tui.screens.confirm import ConfirmScreen
from semfora_tui.widgets.diff_pane import DiffPane
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.tui.conftest import (
    EDIT_BLOCKS,
    EDIT_REPLY,
    SOURCE,
    AppFactory,
    answer_confirmation,
    paste,
    settle,
    submit,
    type_fast,
    wait_for,
)

# What a user types after a reply staged a hunk: each key of it is a review key somewhere.
TYPED = "/accept all now also update the docs, then commit, undo and edit"
PASTED = "/accept all\n"
# server.py after the earlier commit every test here starts from.
COMMITTED_SERVER = SOURCE["app/server.py"].replace("return parse_port(cfg)", "return parse_port(cfg) or 80")


def _states(root: Path) -> dict[str, list[str]]:
    layout = RepoLayout.for_path(root)
    session = EditSession.load_or_create(layout, load_settings(root).settings)
    return {f.path: [h.state for h in f.hunks] for f in session.files()}


def _earlier_commit(root: Path) -> None:
    """One committed change set in the history, so a stray `u` would have something to undo."""
    layout = RepoLayout.for_path(root)
    session = EditSession.load_or_create(layout, load_settings(root).settings)
    session.stage_blocks(
        "app/server.py\n<<<<<<< SEARCH\n    return parse_port(cfg)\n=======\n"
        "    return parse_port(cfg) or 80\n>>>>>>> REPLACE\n"
    )
    assert session.commit(all=True).committed


@pytest.fixture
def editor_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$EDITOR is a script that records each start: a stray `e` would leave a trace."""
    log = tmp_path / "editor.log"
    editor = tmp_path / "fake-editor"
    editor.write_text(f'#!/bin/sh\necho "$@" >> {log}\n')
    editor.chmod(editor.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("EDITOR", str(editor))
    monkeypatch.delenv("VISUAL", raising=False)
    return log


def _assert_nothing_changed(app: SemforaApp, root: Path, editor_log: Path) -> None:
    assert (root / "app/config.py").read_text() == SOURCE["app/config.py"]
    assert (root / "app/server.py").read_text() == COMMITTED_SERVER  # the earlier commit was not undone
    assert len(history_records(RepoLayout.for_path(root))) == 1
    assert _states(root) == {"app/config.py": ["pending"]}
    assert not editor_log.exists()
    assert not isinstance(app.screen, ConfirmScreen)


async def test_typing_and_pasting_after_a_staged_reply_changes_nothing(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, demo_repo: Path, editor_log: Path
) -> None:
    _earlier_commit(demo_repo)
    fake_anthropic.reply(EDIT_REPLY)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await submit(pilot, app, "make parse_port strip whitespace")
        await wait_for(pilot, lambda: app.diff.files and not app.main.streaming, "the staged hunk")
        await settle(pilot)
        assert app.focused is app.prompt
        assert app.main.mode == "prompt"
        assert app.main.keybar.plain.startswith("PROMPT")
        assert "F2 review (1 staged)" in app.main.keybar.plain
        type_fast(app, TYPED)
        paste(app, PASTED)
        await wait_for(pilot, lambda: app.prompt.text == TYPED + PASTED, "the typing to reach the prompt")
        await settle(pilot)
        assert app.prompt.text == TYPED + PASTED
        _assert_nothing_changed(app, demo_repo, editor_log)


async def test_typing_while_an_edit_reply_streams_goes_to_the_prompt(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, demo_repo: Path, editor_log: Path
) -> None:
    _earlier_commit(demo_repo)
    fake_anthropic.reply(EDIT_REPLY, chunk_chars=4, delay=0.03)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await submit(pilot, app, "make parse_port strip whitespace")
        await wait_for(pilot, lambda: app.main.streaming and app.main.turn.source, "the reply to stream")
        type_fast(app, TYPED)
        paste(app, PASTED)
        await wait_for(pilot, lambda: app.prompt.text == TYPED + PASTED, "the typing to reach the prompt")
        assert app.main.streaming, "the keys should have landed while the reply was streaming"
        await wait_for(pilot, lambda: app.diff.files and not app.main.streaming, "the staged hunk")
        await settle(pilot)
        assert app.focused is app.prompt
        assert app.prompt.text == TYPED + PASTED
        _assert_nothing_changed(app, demo_repo, editor_log)


async def _stage_edit_blocks(pilot, app: SemforaApp, root: Path) -> None:  # type: ignore[no-untyped-def]
    """Stage EDIT_BLOCKS (one hunk in each of two files) as `/edit --from` does."""
    (root / "edits.txt").write_text(EDIT_BLOCKS)
    await app.main.run_slash("/edit --from edits.txt")
    await settle(pilot)


async def test_enter_and_y_typed_before_a_confirmation_never_answer_it(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage_edit_blocks(pilot, app, demo_repo)
        # `/accept all`, Enter and a `y` in one burst: the y was typed before the question existed.
        type_fast(app, "/accept all\ny")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the accept-all confirmation")
        screen = app.screen
        assert isinstance(screen, ConfirmScreen)
        assert "Accept all 2 staged hunks in 2 files?" in screen.question
        await wait_for(pilot, lambda: screen.armed, "the confirmation to accept answers")
        await settle(pilot)
        assert app.screen is screen, "an early key answered the confirmation"
        assert _states(demo_repo) == {"app/config.py": ["pending"], "app/server.py": ["pending"]}
        await pilot.press("n")
        await settle(pilot)
        assert _states(demo_repo) == {"app/config.py": ["pending"], "app/server.py": ["pending"]}
        assert app.prompt.text == "y"  # the early key was text for the prompt, not an answer
        # Once on screen, the same question takes a real answer.
        app.prompt.clear()
        await submit(pilot, app, "/accept all")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert _states(demo_repo) == {"app/config.py": ["accepted"], "app/server.py": ["accepted"]}
        # `/commit`, Enter, `y`, Enter in one burst: nothing is written.
        type_fast(app, "/commit\ny\n")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the commit confirmation")
        screen = app.screen
        assert isinstance(screen, ConfirmScreen)
        await wait_for(pilot, lambda: screen.armed, "the confirmation to accept answers")
        await settle(pilot)
        assert app.screen is screen
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]
        assert history_records(RepoLayout.for_path(demo_repo)) == []
        await pilot.press("n")
        await settle(pilot)
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]


async def test_review_is_a_mode_entered_on_purpose_and_left_with_escape(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        (demo_repo / "edits.txt").write_text(EDIT_BLOCKS)
        await submit(pilot, app, "/edit --from edits.txt")
        await settle(pilot)
        assert app.focused is app.prompt  # staging never takes the keyboard
        await submit(pilot, app, "/preview")
        await settle(pilot)
        assert app.focused is app.prompt  # neither does /preview
        await pilot.press("f2")
        assert isinstance(app.focused, DiffPane)
        assert app.main.keybar.plain.startswith("REVIEW")
        for keys in ("a/r accept/reject", "u undo", "x rollback", "e edit", "esc back"):
            assert keys in app.main.keybar.plain, keys
        assert "c commit" not in app.main.keybar.plain  # nothing accepted yet
        await pilot.press("a")
        await settle(pilot)
        assert _states(demo_repo)["app/config.py"] == ["accepted"]
        assert "c commit" in app.main.keybar.plain  # now that a hunk is accepted
        await pilot.press("escape")
        assert app.focused is app.prompt
        assert app.main.keybar.plain.startswith("PROMPT")
        await pilot.press(*"hello")
        assert app.prompt.text == "hello"
        app.prompt.clear()
        # /review enters it too; `/` in review mode goes back to the prompt to start a command.
        await submit(pilot, app, "/review")
        await settle(pilot)
        assert isinstance(app.focused, DiffPane)
        await pilot.press("slash", *"cost")
        assert app.focused is app.prompt and app.prompt.text == "/cost"
        app.prompt.clear()
        # And a click on the diff pane.
        await pilot.click(DiffPane)
        assert isinstance(app.focused, DiffPane)
        assert app.main.has_class("-review")


async def test_undo_in_review_mode_asks_first(make_app: AppFactory, demo_repo: Path) -> None:
    _earlier_commit(demo_repo)
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f2", "u")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), "the undo confirmation")
        assert "Undo the last commit? It puts back app/server.py." in app.screen.question
        await answer_confirmation(pilot, app, "n")
        await settle(pilot)
        assert (demo_repo / "app/server.py").read_text() == COMMITTED_SERVER
        await pilot.press("u")
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert (demo_repo / "app/server.py").read_text() == SOURCE["app/server.py"]
        assert "Undid the last commit" in app.chat.transcript()


async def test_resume_does_not_move_the_focus(make_app: AppFactory, demo_repo: Path) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage_edit_blocks(pilot, app, demo_repo)
    again = make_app(start_index=False, check_model=False, resume=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: "Resumed the last session" in again.chat.transcript(), "the resume")
        await settle(pilot)
        assert len(again.diff.files) == 2
        assert again.focused is again.prompt


async def test_a_message_sent_while_a_reply_streams_is_queued_and_sent_after_it(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    first = "First answer. " * 60
    # Slow enough (4 s) that a loaded machine cannot finish it before the test types into it.
    fake_anthropic.reply(first, chunk_chars=6, delay=0.03)
    fake_anthropic.reply("Second answer.")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await submit(pilot, app, "first question")
        await wait_for(pilot, lambda: app.main.streaming and app.main.turn.source, "the first reply")
        type_fast(app, "second question\n")
        await wait_for(pilot, lambda: app.main.queue, "the message to be queued")
        assert app.prompt.text == ""
        assert "› second question  ⏳ queued: sent when the current reply ends" in app.chat.transcript()
        assert "1 queued" in app.main.keybar.plain
        assert len(fake_anthropic.message_requests()) == 1
        await wait_for(
            pilot, lambda: "Second answer." in app.chat.transcript(), "the queued message's answer"
        )
        await settle(pilot)
        transcript = app.chat.transcript()
        assert (
            transcript.index(first.strip())
            < transcript.index("› second question")
            < transcript.index("Second answer.")
        )
        assert "queued" not in transcript
        requests = fake_anthropic.message_requests()
        assert len(requests) == 2 and "second question" in requests[1].all_text


async def test_a_question_sent_during_a_rebuild_waits_for_the_index(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.reply("It is `load_config`.")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        type_fast(app, "/index --rebuild\nwhere is the config loaded?\n")
        await wait_for(pilot, lambda: app.main.queue, "the question to wait")
        assert "queued: waiting for the index" in app.chat.transcript()
        assert fake_anthropic.message_requests() == []
        await wait_for(pilot, lambda: "It is `load_config`." in app.chat.transcript(), "the answer")
        await settle(pilot)
        transcript = app.chat.transcript()
        assert transcript.index("Index ready") < transcript.index("It is `load_config`.")
        # The question went out with a real pack, not the empty one of a half-built index.
        assert "def load_config" in fake_anthropic.message_requests()[0].all_text


async def test_question_mark_in_review_mode_lists_every_key_and_stays_in_review(
    make_app: AppFactory, demo_repo: Path
) -> None:
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await _stage_edit_blocks(pilot, app, demo_repo)
        await pilot.press("f2", "question_mark")
        await settle(pilot)
        shown = app.chat.transcript()
        for key in ("`a`/`r` accept/reject", "`e` edit", "`b` rebase", "`m` maximize", "`x` rollback"):
            assert key in shown, key  # the 80-column footer has no room for most of these
        assert app.main.mode == "review" and app.main.has_class("-review")
        assert app.prompt.text == ""  # `?` was a key, not text


async def test_review_keys_typed_in_one_burst_all_count(make_app: AppFactory, demo_repo: Path) -> None:
    """`a` then `c` at full speed: the `c` was dropped (commit looked disabled until the accept
    came back from the engine), and the hunk's badge lagged behind the key."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage_edit_blocks(pilot, app, demo_repo)
        await pilot.press("f2")
        type_fast(app, "aac")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen), "the `c` typed after the `a`s was lost"
        assert "Commit 2 accepted hunks in 2 files?" in app.screen.question
        await answer_confirmation(pilot, app, "y")
        await settle(pilot)
        assert "return int(text.strip())" in (demo_repo / "app/config.py").read_text()
        assert "port = parse_port(cfg)" in (demo_repo / "app/server.py").read_text()
        assert app.diff.files == ()


async def test_escape_merged_with_the_next_key_leaves_review_mode(
    make_app: AppFactory, demo_repo: Path, editor_log: Path
) -> None:
    """An escape followed within ESCDELAY by a letter reaches the app as alt+letter (a terminal
    sends alt+w as ESC w): the escape was lost, and the rest of the sentence ran as review keys."""
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await _stage_edit_blocks(pilot, app, demo_repo)
        await pilot.press("f2")
        assert app.main.mode == "review"
        app.post_message(events.Key("alt+w", "w"))
        type_fast(app, "hat about an extra test")
        await settle(pilot)
        assert app.prompt.text == "what about an extra test"
        assert app.main.mode == "prompt" and app.focused is app.prompt
        assert _states(demo_repo) == {"app/config.py": ["pending"], "app/server.py": ["pending"]}
        assert not editor_log.exists()
        assert not isinstance(app.screen, ConfirmScreen)
