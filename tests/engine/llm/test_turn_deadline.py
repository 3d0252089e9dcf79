"""One deadline per turn, and every retry told to the user (issue 13, item 4).

A black-holed endpoint (it accepts and never answers) used to hang 608 s in silence: 120 s
read timeout times five attempts. Now ``llm.turn_timeout`` bounds the whole call, retry pauses
included, and ``on_status`` hears "retrying N/M in S s: reason" before each pause.
"""

from __future__ import annotations

import time

import pytest

from engine.config import Settings
from engine.errors import EXIT_UNAVAILABLE
from engine.llm.anthropic_reasoner import AnthropicReasoner
from engine.llm.base import ModelCancelled, ModelTimeout
from engine.llm.litellm_reasoner import LiteLLMReasoner
from engine.llm.retry import RetryPolicy
from tests.fakes.black_hole import black_hole
from tests.fakes.fixtures import DUMMY_API_KEY

USER = [{"role": "user", "content": "Explain Session.request"}]


def _claude(url: str, *, read_timeout: float, turn_timeout: float) -> AnthropicReasoner:
    settings = Settings()
    settings.llm.read_timeout = read_timeout
    settings.llm.turn_timeout = turn_timeout
    reasoner = AnthropicReasoner(settings, api_key=DUMMY_API_KEY, base_url=url)
    reasoner.retry = RetryPolicy(max_retries=4, base_delay=0.1, max_delay=0.2)
    return reasoner


def test_a_black_holed_endpoint_ends_at_the_deadline_and_reports_each_retry() -> None:
    statuses: list[str] = []
    with black_hole() as url:
        reasoner = _claude(url, read_timeout=0.6, turn_timeout=2.0)
        started = time.monotonic()
        with pytest.raises(ModelTimeout) as info:
            reasoner.complete("s", USER, on_status=statuses.append)
        elapsed = time.monotonic() - started
    assert elapsed < 3.5, elapsed
    assert info.value.code == "MODEL_TIMEOUT" and info.value.exit_code == EXIT_UNAVAILABLE
    assert "llm.turn_timeout" in info.value.message and "timed out" in info.value.message
    assert statuses and statuses[0].startswith("retrying 1/4 in ") and statuses[0].endswith(": timed out")


def test_the_deadline_interrupts_a_request_still_waiting_for_its_first_byte() -> None:
    """With the default 60 s read timeout, the turn still ends at its own deadline."""
    with black_hole() as url:
        reasoner = _claude(url, read_timeout=60, turn_timeout=1.0)
        started = time.monotonic()
        with pytest.raises(ModelTimeout):
            reasoner.complete("s", USER)
    assert time.monotonic() - started < 2.5


def test_a_passed_deadline_is_shared_by_the_calls_of_one_turn() -> None:
    with black_hole() as url:
        reasoner = _claude(url, read_timeout=60, turn_timeout=600)
        started = time.monotonic()
        with pytest.raises(ModelTimeout):
            reasoner.complete("s", USER, deadline=time.monotonic() + 0.8)
    assert time.monotonic() - started < 2.0


def test_cancel_still_wins_over_the_deadline() -> None:
    import threading

    cancel = threading.Event()
    with black_hole() as url:
        reasoner = _claude(url, read_timeout=60, turn_timeout=600)
        threading.Timer(0.3, cancel.set).start()
        started = time.monotonic()
        with pytest.raises(ModelCancelled):
            reasoner.complete("s", USER, cancel=cancel)
    assert time.monotonic() - started < 1.5


def test_litellm_retries_are_ours_bounded_by_the_deadline_and_reported(monkeypatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # offline, as the reasoner sets it
    import litellm  # noqa: F401 - imported before the clock starts: importing takes seconds

    statuses: list[str] = []
    with black_hole() as url:
        settings = Settings()
        settings.ollama.host = url  # what load_settings makes of OLLAMA_HOST
        settings.llm.read_timeout = 0.5
        settings.llm.turn_timeout = 2.0
        reasoner = LiteLLMReasoner(settings, model="ollama/qwen2.5-coder:7b")
        reasoner.retry = RetryPolicy(max_retries=4, base_delay=0.1, max_delay=0.2)
        started = time.monotonic()
        with pytest.raises(ModelTimeout):
            reasoner.complete("s", USER, on_status=statuses.append)
    assert time.monotonic() - started < 4.0
    assert statuses and statuses[0].startswith("retrying 1/4 in ")
