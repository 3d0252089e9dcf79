"""Turns against the fake Anthropic server: streaming, the budget pane, staging, cancellation, and
every failure path of a turn (edit retries, NEED rounds, model errors) shown as a state."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest
from textual import events
from textual.color import Color
from textual.widgets import Collapsible, Label, TextArea
from textual.widgets.markdown import MarkdownBlock

from semfora_tui.widgets.reply import FrozenSegment, ReplyFence
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.tui.conftest import SOURCE, STATE_TIMEOUT, AppFactory, paste, settle

ANSWER = "The settings are read by `load_config` in **app/config.py**."
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


async def _submit(pilot, app, text: str) -> None:  # type: ignore[no-untyped-def]
    app.prompt.load_text(text)
    app.prompt.focus()
    await pilot.press("enter")


async def _wait_for(pilot, predicate, timeout: float = STATE_TIMEOUT) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.02)


async def test_budget_pane_updates_after_a_turn(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply(ANSWER)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.main.offline is False
        assert app.budget_pane.pack is None
        await _submit(pilot, app, "where is the config loaded?")
        await settle(pilot)
        assert ANSWER in app.chat.transcript()
        pack = app.budget_pane.pack
        assert pack is not None and pack.items
        table = app.budget_pane.query_one("#budget-table")
        assert table.row_count == len(pack.items)
        assert app.budget_pane.turn.input_tokens > 0 and app.budget_pane.turn.output_tokens > 0
        assert app.main.session_cost > 0
        assert app.header.session_cost == app.main.session_cost
        bar = str(app.budget_pane.query_one("#budget-bar").render())
        assert f"{pack.total_tokens:,}/{app.bridge.budget:,}" in bar
        summary = app.chat.query_one(Collapsible)
        assert summary.collapsed
        assert summary.title.startswith(f"context: {len(pack.items)} items")
        # The request really carried the pack.
        assert "load_config" in fake_anthropic.message_requests()[-1].all_text


async def test_an_edit_reply_is_staged_and_shown_for_review(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, demo_repo: Path
) -> None:
    fake_anthropic.reply(EDIT_REPLY)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "make parse_port strip whitespace")
        await settle(pilot)
        assert [f.path for f in app.diff.files] == ["app/config.py"]
        assert app.focused is app.prompt  # the user decides when to review
        assert "✓ staged 1 hunk in app/config.py" in app.chat.transcript()
        assert "int(text)" in (demo_repo / "app/config.py").read_text()  # nothing written before review
        # The chat shows the change as a diff, removed lines red and added ones green, not
        # the protocol's conflict markers.
        assert "<<<<<<<" not in app.chat.transcript() and "=======" not in app.chat.transcript()
        (fence,) = app.main.turn.query(ReplyFence)
        assert fence.code.splitlines() == [
            "-def parse_port(text):",
            "-    return int(text)",
            "+def parse_port(text):",
            "+    return int(text.strip())",
        ]
        label = fence.query_one(Label)
        colours: dict[str, set[object]] = {"-": set(), "+": set()}
        for strip in label.render_lines(label.size.region):
            for segment in strip:
                if segment.text.strip()[:1] in colours:
                    colours[segment.text.strip()[:1]].add(segment.style.color)
        variables = app.theme_variables
        assert colours["-"] == {Color.parse(variables["text-error"]).rich_color}
        assert colours["+"] == {Color.parse(variables["text-success"]).rich_color}


async def test_a_long_line_of_a_reply_wraps_in_the_narrow_chat_pane(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """The chat has no sideways scrolling: a long line of an edit block must wrap, not be cut."""
    long_line = "    return int(text.strip())  # " + " ".join(f"word{i}" for i in range(30)) + " TAIL"
    fake_anthropic.reply(EDIT_REPLY.replace("    return int(text.strip())\n", long_line + "\n"))
    app = make_app()
    async with app.run_test(size=(100, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "make parse_port strip whitespace")
        await settle(pilot)
        (fence,) = app.main.turn.query(ReplyFence)
        # The long line takes as many rows as it needs (4 lines: 3 short, 1 long; padding 1).
        label = fence.query_one(Label)
        rows = -(-len(long_line) // label.content_region.width)
        assert label.size.height >= 3 + rows > 4


async def test_a_long_new_file_is_folded_in_the_chat_and_staged_whole(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """400 lines streamed into the chat buried the conversation; the diff pane has them all."""
    body = "".join(f"ROW_{i} = {i}\n" for i in range(400))
    reply = f"A table of rows.\n\napp/table.py\n<<<<<<< SEARCH\n=======\n{body}>>>>>>> REPLACE\n\nDone.\n"
    fake_anthropic.reply(reply, chunk_chars=60, delay=0.03)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "add a table of rows")
        # While the folded lines stream, the spinner says so (the chat itself stops growing).
        await _wait_for(pilot, lambda: app.main.turn is not None and app.main.turn._fencer.folding > 0)
        spinner = app.main.turn.spinner
        assert spinner is not None and spinner.display
        assert re.search(r"writing the rest of the block: [\d,]+ lines folded", str(spinner.render()))
        await _wait_for(pilot, lambda: not app.main.streaming)
        await settle(pilot)
        (fence,) = app.main.turn.query(ReplyFence)
        shown = fence.code.splitlines()
        assert shown[0] == "@@ new file @@" and shown[1:25] == [f"+ROW_{i} = {i}" for i in range(24)]
        assert shown[25:] == ["@@ 376 more lines folded (F2 shows all) @@"]
        assert "ROW_399" not in app.chat.transcript() and "Done." in app.chat.transcript()
        # Nothing the model wrote is lost: the staged file has every line.
        (staged,) = app.diff.files
        assert staged.path == "app/table.py" and staged.added == 400


@pytest.mark.parametrize("key", ["escape", "ctrl+c"])
async def test_escape_or_ctrl_c_cancels_a_streaming_reply(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, key: str
) -> None:
    long_text = "word " * 400
    fake_anthropic.reply(long_text, chunk_chars=10, delay=0.02)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "explain everything")
        await _wait_for(pilot, lambda: app.main.turn is not None and len(app.main.turn.source) > 20)
        assert key in app.active_bindings
        await pilot.press(key)
        await pilot.pause()
        assert not app.main.streaming
        assert app.main._cancel.is_set()
        await settle(pilot)
        shown = app.main.turn.source
        assert 0 < len(shown) < len(long_text.strip())
        assert "cancelled" in [str(w.render()) for w in app.main.turn.query(".turn-status")]
        # The prompt was sent, so the turn still cost something: the pane and the session say so.
        assert app.budget_pane.turn.input_tokens > 0 and app.main.session_cost > 0
        # The prompt is usable again at once.
        await _submit(pilot, app, "/cost")
        await settle(pilot)
        assert "Session:" in app.chat.transcript()


async def test_streaming_5000_tokens_keeps_the_prompt_responsive(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    text = "".join(f"Point {i}: some *markdown* text with `code` in it.\n\n" for i in range(400))
    assert len(text) // 4 >= 5000  # ~5k tokens at the chars/4 estimate
    fake_anthropic.reply(text, chunk_chars=16, delay=0.002)
    app = make_app()
    prompt_changed = asyncio.Event()

    def hook(message: object) -> None:  # every message as it is posted, the prompt's edits among them
        if isinstance(message, TextArea.Changed):
            prompt_changed.set()

    async with app.run_test(size=(120, 40), message_hook=hook) as pilot:
        await settle(pilot)
        lags: list[float] = []
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        ticked = asyncio.Event()

        def tick(due: float) -> None:
            # How late a 10 ms timer fires is how long a key press would wait for the UI thread.
            lags.append(loop.time() - due)
            if stop.is_set():
                ticked.set()
            else:
                schedule()

        def schedule() -> None:
            due = loop.time() + 0.01
            loop.call_at(due, tick, due)

        schedule()
        await _submit(pilot, app, "list everything")
        await _wait_for(pilot, lambda: app.main.streaming and len(app.main.turn.source) > 0)
        app.prompt.focus()
        typed = ""
        key_latency: list[float] = []
        for ch in "next":
            # Post the key as the terminal driver would; pilot.press waits for the app to be idle.
            started = time.perf_counter()
            app.post_message(events.Key(ch, ch))
            typed += ch
            while True:  # woken by the prompt's own Changed message: the wait is the figure
                prompt_changed.clear()
                if app.prompt.text == typed:
                    break
                left = STATE_TIMEOUT - (time.perf_counter() - started)
                assert left > 0, f"key {ch!r} never reached the prompt"
                await asyncio.wait_for(prompt_changed.wait(), left)
            key_latency.append(time.perf_counter() - started)
        # The keys landed while the reply was still arriving.
        assert app.main.streaming, "the reply should still be streaming while the user types"
        # Only a gross stall fails here; latency figures belong to benchmarks, not tests.
        assert max(key_latency) < 5.0, key_latency
        await _wait_for(
            pilot, lambda: not app.main.streaming, timeout=240
        )  # ~10 s of CPU to render; busy shared cores
        stop.set()
        await ticked.wait()
        await settle(pilot)
        assert app.prompt.text == "next"
        assert app.main.turn.source.rstrip() == text.rstrip()
        lags.sort()
        # Generous bounds: the suite runs on 2 shared, busy cores. A renderer that redrew the whole
        # document per chunk would hold the UI thread for most of the stream and fail both.
        assert lags[len(lags) // 2] < 0.25, lags[-10:]  # typical delay before a key is handled
        assert lags[-1] < 5.0, lags[-10:]  # worst single stall


MISQUOTED_REPLY = EDIT_REPLY.replace(
    "def parse_port(text):\n    return int(text)\n=", "def parse_port(txt):\n    return int(txt)\n="
)
NEED_REPLY = "To answer I need the body of the loader.\n\nNEED: load_config\n"
NEED_ANSWER = "`load_config` opens the path and returns the text it read."


async def test_a_misquoted_edit_block_is_retried_and_the_fixed_reply_is_staged(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, demo_repo: Path
) -> None:
    assert MISQUOTED_REPLY != EDIT_REPLY
    fake_anthropic.reply(MISQUOTED_REPLY)
    fake_anthropic.reply(EDIT_REPLY)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "make parse_port strip whitespace")
        await _wait_for(pilot, lambda: app.diff.files and not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "error[" not in transcript, transcript
        assert "↻ an edit block did not apply; asking the model again (1/" in transcript
        assert "✓ staged 1 hunk in app/config.py (1 edit retry)" in transcript
        # Both attempts are in the reply, the retry notice between them.
        assert (
            transcript.index("def parse_port(txt)")
            < transcript.index("↻ an edit block")
            < transcript.rindex("int(text.strip())")
        )
        requests = fake_anthropic.message_requests()
        assert len(requests) == 2
        assert "could not be applied" in requests[1].all_text
        assert [f.path for f in app.diff.files] == ["app/config.py"]
        assert (demo_repo / "app/config.py").read_text() == SOURCE["app/config.py"]  # staged, not written
        assert app.focused is app.prompt
        # The first attempt, finished (frozen) before the retry, keeps the reply's left edge: it
        # lost Markdown's two-column margin, and the reply's text jumped left and right.
        turn = app.main.turn
        frozen = turn.query_one(FrozenSegment)
        live = turn.segments[-1].query(MarkdownBlock).first()
        assert "I will strip" in frozen.source and "I will strip" in live.source
        assert frozen.content_region.x == live.content_region.x


async def test_an_edit_of_a_secret_file_is_refused_once_and_said_plainly(
    make_app: AppFactory, fake_anthropic: FakeAnthropic, demo_repo: Path
) -> None:
    secret_edit = ".env\n<<<<<<< SEARCH\n=======\nTOKEN=stolen\n>>>>>>> REPLACE\n"
    for _ in range(3):
        fake_anthropic.reply(secret_edit)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "put the token in .env")
        await _wait_for(pilot, lambda: "edit failed" in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert len(fake_anthropic.message_requests()) == 1  # it asked twice more, for the same refusal
        assert "asking the model again" not in transcript
        assert "**The edit could not be staged**; nothing was changed." in transcript  # not "after 0 retries"
        assert "the reply edits .env, on the secret deny-list (edits.deny)" in transcript
        assert "Edit that file yourself" in transcript and "Ask again with more detail" not in transcript
        assert not app.diff.files and not (demo_repo / ".env").exists()


async def test_a_need_reply_fetches_what_the_model_asked_for_then_shows_the_answer(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.reply(NEED_REPLY)
    fake_anthropic.reply(NEED_ANSWER)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "what does the loader return?")
        await _wait_for(pilot, lambda: NEED_ANSWER in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "error[" not in transcript, transcript
        assert "↻ the model asked for 1 more symbol; fetching them and asking again (round 1/2)" in transcript
        assert "✓ answered (1 NEED round)" in transcript
        requests = fake_anthropic.message_requests()
        assert len(requests) == 2
        assert "Here is what you asked for" in requests[1].all_text
        assert "def load_config(path)" in requests[1].all_text


async def test_the_reply_shows_a_spinner_while_the_model_is_retried(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.error(529)
    fake_anthropic.reply(ANSWER)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "where is the config loaded?")
        # The first attempt was refused (529); until the retry answers, the reply shows it is waiting.
        await _wait_for(
            pilot, lambda: len(fake_anthropic.message_requests()) >= 1 or ANSWER in app.chat.transcript()
        )
        turn = app.main.turn
        assert turn is not None

        def waiting_said() -> bool:  # the request is out: the spinner says so once its message lands
            shown = str(turn.spinner.render()) if turn.spinner is not None else ""
            return "asking the model" in shown or "retry" in shown

        await _wait_for(pilot, lambda: bool(turn.source) or waiting_said())
        if not turn.source:
            assert turn.spinner is not None and turn.spinner.display
        await _wait_for(pilot, lambda: ANSWER in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        assert turn.spinner is None  # gone once the turn ended
        transcript = app.chat.transcript()
        assert "error[" not in transcript
        # The reasoner's retry, reported through on_status, stays in the reply where it happened.
        assert re.search(r"↻ retrying 1/\d+ in [\d.]+ s: ", transcript), transcript
        assert transcript.index("↻ retrying") < transcript.index(ANSWER)
        assert "✓ answered" in transcript
        assert len(fake_anthropic.message_requests()) == 2


async def test_while_the_model_has_not_answered_the_spinner_says_so_not_building_the_pack(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """The spinner said "building the context pack" all the while the request waited for the
    model's first token."""
    fake_anthropic.reply(ANSWER, chunk_chars=len(ANSWER), delay=1.0)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "where is the config loaded?")
        await _wait_for(pilot, lambda: len(fake_anthropic.message_requests()) == 1)
        turn = app.main.turn
        assert turn is not None and turn.spinner is not None

        def spinner() -> str:
            return str(turn.spinner.render()) if turn.spinner is not None else ""

        await _wait_for(pilot, lambda: "asking the model (" in spinner() or bool(turn.source))
        assert not turn.source, "the reply came before the spinner said the model was asked"
        assert "tokens of context" in spinner() and "building" not in spinner()
        await _wait_for(pilot, lambda: ANSWER in app.chat.transcript() and not app.main.streaming)
        assert "asking the model" not in app.chat.transcript()  # a passing state, not a step to keep


async def test_a_model_error_ends_the_turn_as_failed_and_the_prompt_keeps_working(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.error(400, "invalid_request_error")
    fake_anthropic.reply(ANSWER)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "where is the config loaded?")
        await _wait_for(pilot, lambda: "error[" in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "✗ failed: error[MODEL_ERROR]" in transcript
        assert "INTERNAL" not in transcript
        await _submit(pilot, app, "where is the config loaded?")
        await _wait_for(pilot, lambda: ANSWER in app.chat.transcript() and not app.main.streaming)


async def test_after_a_failed_turn_the_budget_pane_shows_that_turns_pack_not_the_one_before(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """A turn that failed left the pane on the previous turn's pack and cost, as if they were its own."""
    fake_anthropic.reply(ANSWER)
    fake_anthropic.error(400, "invalid_request_error")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "where is the config loaded?")
        await _wait_for(pilot, lambda: ANSWER in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        first = app.budget_pane.pack
        assert first is not None and first.task == "where is the config loaded?"
        await _submit(pilot, app, "make parse_port strip whitespace")
        await _wait_for(pilot, lambda: "✗ failed" in app.chat.transcript() and not app.main.streaming)
        await settle(pilot)
        pack = app.budget_pane.pack
        assert pack is not None and pack.task == "make parse_port strip whitespace"
        assert pack.intent == "edit"
        cost = str(app.budget_pane.query_one("#budget-cost").render())
        assert "turn failed" in cost and "in /" not in cost, cost
        # The failed reply lists the context it sent, like an answered one.
        summaries = list(app.chat.query(Collapsible))
        assert len(summaries) == 2 and summaries[-1].title.startswith(f"context: {len(pack.items)} items")


async def test_a_cancelled_question_is_marked_cancelled_not_an_edit_problem(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.reply("word " * 400, chunk_chars=10, delay=0.02)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "explain everything")
        await _wait_for(pilot, lambda: app.main.turn is not None and len(app.main.turn.source) > 20)
        await pilot.press("escape")
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "cancelled" in transcript
        assert "edit problem" not in transcript and "problem" not in transcript


async def test_the_budget_table_shows_each_items_tokens_and_priority_without_scrolling(
    make_app: AppFactory,
) -> None:
    """Names carry their file path and fill the pane: the numbers must not be pushed off screen."""
    from semfora_tui.views import PackItemView, PackView

    long_path = "httpx-0.27.0/httpx/_transports/default_transport_with_a_long_name.py"
    items = (
        PackItemView(
            "source", f"Response.raise_for_status ({long_path})", 1357, "critical", "named in the task"
        ),
        PackItemView("source", f"HTTPTransport.handle_request ({long_path})", 2468, "critical", "calls it"),
    )
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.budget_pane.show_pack(PackView("why", "explain", 8000, 3825, items))
        await pilot.pause()
        screen = app.export_screenshot().replace("&#160;", " ")
        assert "3,825" in screen  # the bar and legend
        for tokens in ("1,357", "2,468"):  # each row's own figure, which only the table shows
            assert tokens in screen, f"the row with {tokens} tokens is cut off"


@pytest.mark.parametrize("width", [80, 120, 130, 200])
async def test_the_budget_legend_shows_every_priority_and_the_intent_at_any_width(
    make_app: AppFactory, width: int
) -> None:
    """At 130 columns the one-line legend ended in an ellipsis: the low share and the intent were cut."""
    from semfora_tui.views import PackItemView, PackView

    items = tuple(
        PackItemView("source", f"fn_{p}", tokens, p, "why")
        for p, tokens in (("critical", 1187), ("high", 2169), ("medium", 3859), ("low", 1234))
    )
    app = make_app(start_index=False, check_model=False)
    async with app.run_test(size=(width, 40)) as pilot:
        await settle(pilot)
        app.budget_pane.show_pack(PackView("why", "refactor", 8000, 8449, items))
        await pilot.pause()
        screen = app.export_screenshot().replace("&#160;", " ")
        for shown in ("critical 1,187", "high 2,169", "medium 3,859", "low 1,234", "intent refactor"):
            assert shown in screen, f"{shown!r} is cut from the legend at {width} columns"
        # At 80 columns the 40-cell bar pushed the figure off the pane, and the cost line lost
        # the session's cost.
        assert "8,449/8,000" in screen, f"the pack's figure is cut at {width} columns"
        assert "session $0.0000" in screen, f"the session cost is cut at {width} columns"


async def test_a_pasted_traceback_is_sent_whole_but_shown_folded(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    from semfora_tui.widgets.chat import UserMessage

    trace = "\n".join(
        ["Traceback (most recent call last):"]
        + [f'  File "app/m{i}.py", line {i}, in f{i}' for i in range(300)]
        + ["ValueError: port out of range"]
    )
    fake_anthropic.reply("It is the port check.")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        paste(app, trace)
        await pilot.pause()
        await pilot.press("enter")
        await settle(pilot)
        message = app.chat.query(UserMessage).last()
        assert message.size.height <= 12, message.size  # 302 lines would bury the conversation
        shown = str(message.render())
        assert "Traceback" in shown and "ValueError: port out of range" in shown
        assert "292 more lines (sent in full)" in shown
        sent = fake_anthropic.message_requests()[-1].all_text
        assert 'File "app/m150.py", line 150' in sent and "ValueError: port out of range" in sent


async def test_clear_while_a_reply_streams_keeps_that_reply_and_the_app_running(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """/clear during a stream removed the reply being written; its end then crashed the app
    (IndexError in set_context) with a traceback on the terminal."""
    fake_anthropic.reply("First answer.")
    fake_anthropic.reply("Second answer, " * 30 + "the end.", chunk_chars=8, delay=0.02)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "first question")
        await _wait_for(pilot, lambda: "✓ answered" in app.chat.transcript())
        await _submit(pilot, app, "second question")
        await _wait_for(pilot, lambda: app.main.streaming and app.main.turn.source)
        await app.main.run_slash("/clear")
        await _wait_for(pilot, lambda: not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "First answer." not in transcript and "› first question" not in transcript
        assert "› second question" in transcript and "the end." in transcript and "✓ answered" in transcript
        assert app.is_running


async def test_switching_the_model_while_a_reply_streams_lets_that_reply_finish(
    make_app: AppFactory, fake_anthropic: FakeAnthropic
) -> None:
    """`/model NAME` mid-stream took the reasoner from under the running turn: the whole reply
    arrived, then the turn ended "✗ failed: error[INTERNAL]: AttributeError" and staged nothing."""
    fake_anthropic.reply(EDIT_REPLY, chunk_chars=4, delay=0.02)
    fake_anthropic.reply("From the new model.")
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await _submit(pilot, app, "make parse_port strip whitespace")
        await _wait_for(pilot, lambda: app.main.streaming and app.main.turn.source)
        await app.main.run_slash("/model claude-haiku-4-5")
        await _wait_for(pilot, lambda: not app.main.streaming)
        await settle(pilot)
        transcript = app.chat.transcript()
        assert "error[" not in transcript, transcript
        assert "✓ staged 1 hunk in app/config.py" in transcript
        await _submit(pilot, app, "and now?")
        await _wait_for(pilot, lambda: "From the new model." in app.chat.transcript())
        requests = fake_anthropic.message_requests()
        assert requests[0].body["model"] != "claude-haiku-4-5"
        assert requests[-1].body["model"] == "claude-haiku-4-5"
