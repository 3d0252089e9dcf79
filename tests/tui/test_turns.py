"""Turns against the fake Anthropic server: streaming, the budget pane, staging, cancellation."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Collapsible

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.tui.conftest import AppFactory, settle

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


async def _wait_for(pilot, predicate, timeout: float = 15.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting for the app"
        await pilot.pause(0.02)


async def test_budget_pane_updates_after_a_turn(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply(ANSWER)
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.offline is False
        assert app.budget_pane.pack is None
        await _submit(pilot, app, "where is the config loaded?")
        await settle(pilot)
        assert ANSWER in app.chat.transcript()
        pack = app.budget_pane.pack
        assert pack is not None and pack.items
        table = app.budget_pane.query_one("#budget-table")
        assert table.row_count == len(pack.items)
        assert app.budget_pane.turn.input_tokens > 0 and app.budget_pane.turn.output_tokens > 0
        assert app.session_cost > 0
        assert app.header.session_cost == app.session_cost
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
        assert app.diff.has_focus
        assert "int(text)" in (demo_repo / "app/config.py").read_text()  # nothing written before review


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
        await _wait_for(pilot, lambda: app._turn is not None and len(app._turn.source) > 20)
        assert key in app.active_bindings
        await pilot.press(key)
        await pilot.pause()
        assert not app.streaming
        assert app._cancel.is_set()
        await settle(pilot)
        shown = app._turn.source
        assert 0 < len(shown) < len(long_text.strip())
        assert "cancelled" in [str(w.render()) for w in app._turn.query(".turn-status")]
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
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        lags: list[float] = []
        stop = asyncio.Event()

        async def probe() -> None:
            # How late a 10 ms timer fires is how long a key press would wait for the UI thread.
            while not stop.is_set():
                started = time.perf_counter()
                await asyncio.sleep(0.01)
                lags.append(time.perf_counter() - started - 0.01)

        task = asyncio.create_task(probe())
        await _submit(pilot, app, "list everything")
        await _wait_for(pilot, lambda: app.streaming and len(app._turn.source) > 0)
        app.prompt.focus()
        typed = ""
        key_latency: list[float] = []
        for ch in "next":
            # Post the key as the terminal driver would; pilot.press waits for the app to be idle.
            started = time.perf_counter()
            app.post_message(events.Key(ch, ch))
            typed += ch
            while app.prompt.text != typed:
                await asyncio.sleep(0.005)
            key_latency.append(time.perf_counter() - started)
        # The keys landed while the reply was still arriving.
        assert app.streaming, "the reply should still be streaming while the user types"
        # Only a gross stall fails here; latency figures belong to benchmarks, not tests.
        assert max(key_latency) < 5.0, key_latency
        await _wait_for(
            pilot, lambda: not app.streaming, timeout=240
        )  # ~10 s of CPU to render; busy shared cores
        stop.set()
        await task
        await settle(pilot)
        assert app.prompt.text == "next"
        assert app._turn.source.rstrip() == text.rstrip()
        lags.sort()
        # Generous bounds: the suite runs on 2 shared, busy cores. A renderer that redrew the whole
        # document per chunk would hold the UI thread for most of the stream and fail both.
        assert lags[len(lags) // 2] < 0.25, lags[-10:]  # typical delay before a key is handled
        assert lags[-1] < 5.0, lags[-10:]  # worst single stall
