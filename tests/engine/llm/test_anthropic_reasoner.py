"""AnthropicReasoner against the fake Messages API, through the real ``anthropic`` SDK."""

from __future__ import annotations

import logging
import threading
import time

import pytest

from engine.config import DEFAULT_MODEL, Settings
from engine.errors import EXIT_UNAVAILABLE
from engine.llm.anthropic_reasoner import AnthropicReasoner
from engine.llm.base import (
    ModelCancelled,
    ModelError,
    ModelStreamInterrupted,
    ModelUnavailable,
    PromptBlock,
    StreamDone,
    TextDelta,
)
from engine.llm.retry import RetryPolicy
from engine.llm.select import describe_model_status, make_reasoner
from engine.llm.tokens import TokenCounter
from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fixtures import DUMMY_API_KEY

USER = [{"role": "user", "content": "Explain Session.request"}]
# Fast schedule for tests: real backoff shape, tiny base so a test stays well under a second.
FAST = RetryPolicy(max_retries=3, base_delay=0.02, max_delay=0.1)


def _stable_prefix() -> list[PromptBlock]:
    return [
        PromptBlock("You are semfora, a careful code editor. " * 20, cache=True),
        PromptBlock("## Repository overview\nmodules: app, auth, db\n" * 10, cache=True),
        PromptBlock("## Session memory\nuser prefers small diffs\n", cache=True),
        PromptBlock("## Context for this turn\nclass Session: ...\n"),
    ]


def _reasoner(fake: FakeAnthropic, settings: Settings | None = None) -> AnthropicReasoner:
    reasoner = make_reasoner(settings or Settings())
    assert isinstance(reasoner, AnthropicReasoner)
    reasoner.retry = FAST
    return reasoner


def test_stream_yields_text_in_order_then_usage_and_cost(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply("Session.request builds a Request and sends it.", chunk_chars=5)
    events = list(_reasoner(fake_anthropic).stream("system", USER))
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    done = events[-1]
    assert len(deltas) > 3
    assert "".join(deltas) == "Session.request builds a Request and sends it."
    assert isinstance(done, StreamDone)
    assert done.stop_reason == "end_turn"
    assert done.usage.output_tokens == 12 and done.usage.input_tokens > 0
    price = Settings().llm.prices[Settings().llm.model]
    expected = (done.usage.input_tokens * price.input + done.usage.output_tokens * price.output) / 1_000_000
    assert done.cost_usd == pytest.approx(expected)
    sent = fake_anthropic.message_requests()[0]
    assert sent.body["stream"] is True and sent.body["model"] == DEFAULT_MODEL
    assert sent.body["max_tokens"] == Settings().llm.max_output_tokens


def test_cache_control_sits_on_the_end_of_the_stable_prefix_and_second_turn_reads_it(
    fake_anthropic: FakeAnthropic,
) -> None:
    reasoner = _reasoner(fake_anthropic)
    first = reasoner.complete(_stable_prefix(), USER)
    second = reasoner.complete(_stable_prefix(), [{"role": "user", "content": "and now the tests?"}])
    system = fake_anthropic.message_requests()[0].body["system"]
    marked = [i for i, block in enumerate(system) if "cache_control" in block]
    assert marked == [2], "exactly one breakpoint, on the last stable block (session memory)"
    assert system[2]["cache_control"] == {"type": "ephemeral"}
    assert "Context for this turn" in system[3]["text"] and "cache_control" not in system[3]
    assert first.usage.cache_creation_input_tokens > 0 and first.usage.cache_read_input_tokens == 0
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert second.cost_usd < first.cost_usd, "reading the cached prefix is cheaper than writing it"


def test_429_is_retried_after_the_servers_retry_after(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.error(429, retry_after=1).reply("done")
    reply = _reasoner(fake_anthropic).complete("s", USER)
    first, second = fake_anthropic.message_requests()
    assert reply.text == "done" and reply.attempts == 2
    assert second.time - first.time >= 0.95, "came back before retry-after: 1"
    assert second.time - first.time < 3.0


def test_529_overloaded_and_500_are_retried_with_backoff(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.error(529).error(500).reply("finally")
    reply = _reasoner(fake_anthropic).complete("s", USER)
    assert reply.text == "finally" and reply.attempts == 3
    assert len(fake_anthropic.message_requests()) == 3


def test_retries_are_bounded_and_end_in_a_typed_error(fake_anthropic: FakeAnthropic) -> None:
    for _ in range(10):
        fake_anthropic.error(529)
    with pytest.raises(ModelError) as info:
        _reasoner(fake_anthropic).complete("s", USER)
    assert info.value.code == "MODEL_OVERLOADED" and info.value.status == 529
    assert len(fake_anthropic.message_requests()) == FAST.max_retries + 1


def test_the_advice_after_retries_fits_the_status(fake_anthropic: FakeAnthropic) -> None:
    # Every status said "lower llm.max_output_tokens", which does nothing for an overloaded or
    # failing server; only a rate limit counts the output tokens asked for.
    hints = {}
    for status in (429, 529, 500):
        for _ in range(FAST.max_retries + 1):
            fake_anthropic.error(status)
        with pytest.raises(ModelError) as info:
            _reasoner(fake_anthropic).complete("s", USER)
        hints[status] = info.value.hint or ""
    assert "max_output_tokens" in hints[429]
    assert "overloaded" in hints[529] and "max_output_tokens" not in hints[529]
    assert "max_output_tokens" not in hints[500] and "try again" in hints[500]


def test_an_error_inside_the_stream_is_named_in_words_when_retried(fake_anthropic: FakeAnthropic) -> None:
    # The retry line showed the raw event type: "retrying 1/4 in 0.3 s: overloaded_error".
    fake_anthropic.error(529, in_stream=True).reply("second try")
    statuses: list[str] = []
    _reasoner(fake_anthropic).complete("s", USER, on_status=statuses.append)
    assert len(statuses) == 1 and statuses[0].endswith(": overloaded (in the stream)"), statuses


def test_overload_announced_inside_the_stream_is_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.error(529, in_stream=True).reply("second try")
    assert _reasoner(fake_anthropic).complete("s", USER).text == "second try"


def test_disconnect_after_text_is_a_typed_error_keeping_the_partial_reply(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.disconnect("abcdefghijklmnopqrstuvwxyz", after_chunks=2)
    with pytest.raises(ModelStreamInterrupted) as info:
        _reasoner(fake_anthropic).complete("s", USER)
    assert info.value.partial_text == "abcdefghijklmnop"
    assert info.value.code == "MODEL_STREAM_INTERRUPTED"
    assert info.value.hint is not None and "ask again" in info.value.hint
    assert len(fake_anthropic.message_requests()) == 1, "never retried once text was shown"


def test_disconnect_before_any_text_is_retried(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.disconnect(after_chunks=0).reply("clean")
    assert _reasoner(fake_anthropic).complete("s", USER).text == "clean"
    assert len(fake_anthropic.message_requests()) == 2


def test_cancel_stops_a_stalled_stream_promptly(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply("first words, then a long silence", chunk_chars=6, delay=3.0)
    reasoner = _reasoner(fake_anthropic)
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(ModelCancelled):
        for _ in reasoner.stream("s", USER, cancel=cancel):
            pass
    assert time.monotonic() - started < 1.5


def test_cancel_between_deltas_keeps_what_arrived(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.reply("x" * 200, chunk_chars=4, delay=0.05)
    cancel = threading.Event()
    seen: list[str] = []
    with pytest.raises(ModelCancelled) as info:
        for event in _reasoner(fake_anthropic).stream("s", USER, cancel=cancel):
            if isinstance(event, TextDelta):
                seen.append(event.text)
                cancel.set()
    assert info.value.partial_text.startswith("xxxx") and len(info.value.partial_text) < 200
    # The prompt was sent and is billed: the usage message_start reported comes with the error.
    spent = info.value.usage
    assert spent is not None and spent.total_input_tokens > 0 and spent.output_tokens >= 1
    assert info.value.cost_usd > 0


def test_missing_api_key_is_model_unavailable_with_exit_3_and_advice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelUnavailable) as info:
        make_reasoner(Settings())
    assert info.value.exit_code == EXIT_UNAVAILABLE == 3
    assert "ANTHROPIC_API_KEY" in (info.value.hint or "") and "--model ollama/" in (info.value.hint or "")
    assert "not set" in describe_model_status(Settings())


def test_rejected_key_is_model_unavailable(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.error(401)
    with pytest.raises(ModelUnavailable) as info:
        _reasoner(fake_anthropic).complete("s", USER)
    assert info.value.code == "MODEL_AUTH"


def test_unreachable_api_is_model_unavailable_after_bounded_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_API_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
    reasoner = make_reasoner(Settings())
    reasoner.retry = FAST  # type: ignore[attr-defined]
    with pytest.raises(ModelUnavailable) as info:
        reasoner.complete("s", USER)
    assert info.value.code == "MODEL_UNREACHABLE"


def test_api_key_never_reaches_a_log_record_or_the_body(
    fake_anthropic: FakeAnthropic, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    fake_anthropic.error(429, retry_after=0).disconnect(after_chunks=1)
    reasoner = _reasoner(fake_anthropic)
    with pytest.raises(ModelStreamInterrupted):
        reasoner.complete(_stable_prefix(), USER)
    reasoner.complete(_stable_prefix(), USER)
    assert caplog.records, "the retry and usage lines were logged"
    for record in caplog.records:
        assert DUMMY_API_KEY not in record.getMessage()
        assert DUMMY_API_KEY[-12:] not in record.getMessage()
    assert DUMMY_API_KEY not in repr(reasoner)
    sent = fake_anthropic.message_requests()[-1]
    assert DUMMY_API_KEY in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))
    assert DUMMY_API_KEY not in sent.all_text


def test_exact_token_count_uses_the_count_endpoint_when_enabled(fake_anthropic: FakeAnthropic) -> None:
    settings = Settings()
    settings.llm.exact_token_count = True
    counter = TokenCounter(settings)
    text = "def request(self, method, url):\n    return self.send(method, url)\n" * 3
    assert counter.count(text) == counter.count(text)
    calls = [r for r in fake_anthropic.requests if r.path == "/v1/messages/count_tokens"]
    assert len(calls) == 1, "the second count came from the memo"
    assert calls[0].body["messages"][0]["content"] == text


def test_exact_token_count_falls_back_to_the_estimate_when_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings()
    settings.llm.exact_token_count = True
    settings.llm.connect_timeout = 0.5
    counter = TokenCounter(settings, api_key=DUMMY_API_KEY, base_url="http://127.0.0.1:9")
    assert counter.count("x" * 40) == 10
    started = time.monotonic()
    assert counter.count("y" * 40) == 10
    assert time.monotonic() - started < 0.2, "after one failure the endpoint is not tried again at once"


def test_prompt_too_long_is_a_typed_error_that_says_to_lower_the_budget(
    fake_anthropic: FakeAnthropic,
) -> None:
    fake_anthropic.context_window = 50
    with pytest.raises(ModelError) as info:
        _reasoner(fake_anthropic).complete("s" * 1000, USER)
    assert info.value.code == "MODEL_CONTEXT_TOO_LONG" and "--budget" in (info.value.hint or "")
    assert len(fake_anthropic.message_requests()) == 1, "a 400 is not retried"


def test_prefix_below_the_cache_minimum_is_billed_as_plain_input(fake_anthropic: FakeAnthropic) -> None:
    fake_anthropic.min_cache_tokens = 1024
    reasoner = _reasoner(fake_anthropic)
    first = reasoner.complete(_stable_prefix(), USER)
    second = reasoner.complete(_stable_prefix(), USER)
    assert first.usage.cache_creation_input_tokens == second.usage.cache_read_input_tokens == 0
    assert first.usage.input_tokens == second.usage.input_tokens > 300


def test_read_timeout_from_settings_cuts_a_stalled_stream_and_retries(fake_anthropic: FakeAnthropic) -> None:
    settings = Settings()
    settings.llm.read_timeout = 0.3
    fake_anthropic.reply("never arrives in time", delay=2.0)  # then the default reply, "OK"
    reasoner = _reasoner(fake_anthropic, settings)
    started = time.monotonic()
    reply = reasoner.complete("s", USER)
    assert (reply.text, reply.attempts) == ("OK", 2)
    assert time.monotonic() - started < 1.8
