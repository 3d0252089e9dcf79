import time
from tests.tui.conftest import *  # noqa
from tests.tui.conftest import settle, wait_for, submit, AppFactory
from tests.fakes.fake_anthropic import FakeAnthropic

async def test_quit_during_stream(make_app: AppFactory, fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply("word " * 400, chunk_chars=5, delay=0.3)
    app = make_app()
    t = None
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await submit(pilot, app, "stream slowly")
        await wait_for(pilot, lambda: app.main.streaming and app.main.turn.source, "stream")
        t = time.monotonic()
        await pilot.press("ctrl+q")
    print("quit took", time.monotonic() - t)
