"""Token estimates, prices, cost and retry schedules: the numbers users see in the status bar."""

from __future__ import annotations

import math
import random

from hypothesis import given
from hypothesis import strategies as st

from engine.config import ModelPrice, Settings
from engine.llm.base import (
    PromptBlock,
    StreamDone,
    TextDelta,
    Usage,
    UsageTotals,
    collect_reply,
    compute_cost,
    price_for,
)
from engine.llm.retry import RetryPolicy, parse_retry_after
from engine.llm.tokens import TokenCounter
from engine.tokens import estimate_tokens


@given(st.text())
def test_estimate_is_ceil_of_chars_over_four(text: str) -> None:
    assert estimate_tokens(text) == math.ceil(len(text) / 4)


@given(st.text(), st.text())
def test_estimate_is_subadditive_within_one(a: str, b: str) -> None:
    # Splitting a text into items never loses more than one token per item against the whole.
    assert (
        estimate_tokens(a) + estimate_tokens(b) - 1
        <= estimate_tokens(a + b)
        <= estimate_tokens(a) + estimate_tokens(b)
    )


def test_token_counter_without_exact_setting_estimates_and_never_calls_out() -> None:
    counter = TokenCounter(Settings(), api_key="sk-ant-unused", base_url="http://127.0.0.1:9")
    assert not counter.exact_enabled
    assert counter.count("x" * 41) == 11


def test_dated_model_ids_use_the_family_price_and_local_models_are_free() -> None:
    prices = Settings().llm.prices
    assert price_for(prices, "claude-sonnet-4-5-20250929") == prices["claude-sonnet-4-5"]
    assert price_for(prices, "anthropic/claude-haiku-4-5") == prices["claude-haiku-4-5"]
    assert price_for(prices, "ollama/qwen2.5-coder:7b") is None
    assert compute_cost(Usage(1000, 0, 0, 1000), None) == 0.0


def test_cost_bills_each_token_kind_at_its_own_rate() -> None:
    price = ModelPrice(input=3.0, output=15.0, cache_write=3.75, cache_read=0.30)
    usage = Usage(
        input_tokens=1_000_000,
        cache_creation_input_tokens=1_000_000,
        cache_read_input_tokens=1_000_000,
        output_tokens=1_000_000,
    )
    assert compute_cost(usage, price) == 3.0 + 3.75 + 0.30 + 15.0


def test_session_totals_accumulate_calls() -> None:
    totals = UsageTotals()
    totals.add(Usage(10, 20, 30, 5), 0.01)
    totals.add(Usage(1, 0, 50, 2), 0.002)
    assert totals.usage == Usage(11, 20, 80, 7)
    assert totals.to_dict()["calls"] == 2
    assert round(totals.cost_usd, 6) == 0.012


def test_collect_reply_joins_deltas_and_keeps_final_usage() -> None:
    reply = collect_reply(
        [TextDelta("a"), TextDelta("b"), StreamDone(Usage(1, 0, 0, 2), 0.5, "m", "end_turn")]
    )
    assert (reply.text, reply.usage.output_tokens, reply.stop_reason) == ("ab", 2, "end_turn")


def test_prompt_block_defaults_to_uncached() -> None:
    assert PromptBlock("x").cache is False


@given(st.integers(0, 12), st.one_of(st.none(), st.floats(0, 500)))
def test_retry_delay_is_bounded_and_never_earlier_than_retry_after(
    attempt: int, retry_after: float | None
) -> None:
    policy = RetryPolicy()
    wait = policy.delay(attempt, retry_after, rng=random.Random(attempt))
    assert 0 <= wait <= max(policy.max_delay, policy.max_retry_after)
    if retry_after is not None:
        assert wait >= min(retry_after, policy.max_retry_after)


def test_retry_after_headers_are_read_in_ms_or_seconds() -> None:
    assert parse_retry_after({"retry-after-ms": "1500"}) == 1.5
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert parse_retry_after({}) is None
