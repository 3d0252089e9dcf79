"""LiteLLMReasoner through the real LiteLLM library, talking to the fake Ollama server."""

from __future__ import annotations

import threading
import time

import pytest

from engine.config import Settings
from engine.errors import EXIT_UNAVAILABLE
from engine.llm.base import (
    ModelCancelled,
    ModelError,
    ModelStreamInterrupted,
    ModelUnavailable,
    PromptBlock,
    StreamDone,
    TextDelta,
)
from engine.llm.litellm_reasoner import LiteLLMReasoner
from engine.llm.select import describe_model_status, make_reasoner
from tests.fakes.fake_ollama import FakeOllama

USER = [{"role": "user", "content": "What does parse_config do?"}]


def _settings(host: str) -> Settings:
    """Settings whose ``ollama.host`` is ``host`` (what load_settings makes of OLLAMA_HOST)."""
    settings = Settings()
    settings.ollama.host = host
    return settings


def test_ollama_model_streams_through_litellm_with_usage(fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("parse_config reads TOML and validates it.")
    reasoner = make_reasoner(_settings(fake_ollama.url), "ollama/qwen2.5-coder:7b")
    assert isinstance(reasoner, LiteLLMReasoner)
    events = list(reasoner.stream([PromptBlock("You are semfora.", cache=True)], USER, max_tokens=300))
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    done = events[-1]
    assert text == "parse_config reads TOML and validates it."
    assert sum(isinstance(e, TextDelta) for e in events) > 1, "streamed in pieces"
    assert isinstance(done, StreamDone) and done.cost_usd == 0.0 and done.stop_reason == "end_turn"
    assert done.usage.output_tokens > 0 and done.usage.input_tokens > 0
    sent = [r for r in fake_ollama.requests if r.path in ("/api/generate", "/api/chat")][-1]
    assert sent.body["model"] == "qwen2.5-coder:7b"
    assert "You are semfora." in str(sent.body) and "parse_config" in str(sent.body)


def test_ollama_chat_model_uses_the_chat_endpoint(fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("chat answer")
    reply = make_reasoner(_settings(fake_ollama.url), "ollama_chat/qwen2.5-coder:7b").complete("sys", USER)
    assert reply.text == "chat answer"
    chat = fake_ollama.requests_to("/api/chat")
    first = chat[-1].body["messages"][0]
    assert (first["role"], first["content"]) == ("system", "sys")


def test_local_model_with_ollama_down_is_unavailable_exit_3() -> None:
    with pytest.raises(ModelUnavailable) as info:
        make_reasoner(_settings("http://127.0.0.1:9"), "ollama/qwen2.5-coder:7b")  # nothing listens
    assert info.value.exit_code == EXIT_UNAVAILABLE
    assert "Ollama" in info.value.message


def test_status_line_names_the_route() -> None:
    assert "LiteLLM and Ollama" in describe_model_status(Settings(), "ollama/qwen2.5-coder:7b")


def test_ollama_dying_mid_stream_is_a_typed_error_with_the_partial_text(fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("abcdefghijklmnopqrstuvwxyz")
    fake_ollama.die_after_lines = 2
    reasoner = make_reasoner(_settings(fake_ollama.url), "ollama/qwen2.5-coder:7b")
    with pytest.raises(ModelStreamInterrupted) as info:
        reasoner.complete("sys", USER)
    assert info.value.partial_text == "abcdefghijkl"


def test_cancel_stops_a_slow_local_model_promptly(fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("word " * 40)
    fake_ollama.stream_delay = 2.0
    reasoner = make_reasoner(_settings(fake_ollama.url), "ollama/qwen2.5-coder:7b")
    cancel = threading.Event()
    first_text_at: list[float] = []
    with pytest.raises(ModelCancelled) as info:
        for event in reasoner.stream("sys", USER, cancel=cancel):  # LiteLLM's slow import happens in here
            if isinstance(event, TextDelta) and not first_text_at:
                first_text_at.append(time.monotonic())
                threading.Timer(0.2, cancel.set).start()
    assert time.monotonic() - first_text_at[0] < 1.2, "cancelled long before the next 2 s chunk"
    assert info.value.partial_text.startswith("word")


def test_a_model_no_provider_serves_is_refused_when_chosen_quietly(capfd: pytest.CaptureFixture[str]) -> None:
    # Said when the model is chosen (the app's /model, --model), not as a bare BadRequestError
    # at the first turn; and LiteLLM's "Provider List" banner never reaches the terminal.
    with pytest.raises(ModelUnavailable) as info:
        make_reasoner(Settings(), "mistral-large-latest")
    assert info.value.code == "MODEL_NOT_FOUND" and info.value.exit_code == EXIT_UNAVAILABLE
    assert info.value.message == "LiteLLM does not know which provider serves 'mistral-large-latest'"
    assert info.value.hint is not None and "mistral/mistral-large-latest" in info.value.hint
    chosen = make_reasoner(Settings(), "openai/gpt-4o", environ={"OPENAI_API_KEY": "sk-test"})
    assert isinstance(chosen, LiteLLMReasoner)  # no network needed
    out, err = capfd.readouterr()
    assert "Provider List" not in out + err


def test_a_refused_request_says_what_the_provider_answered(fake_ollama: FakeOllama) -> None:
    settings = _settings(fake_ollama.url)
    settings.llm.max_retries = 0
    token = "sk-ant-api03-" + "x" * 40
    fake_ollama.fail_next = (
        500,
        f"model requires more system memory (12.3 GiB) than is available; key {token}",
    )
    with pytest.raises(ModelError) as info:
        make_reasoner(settings, "ollama/qwen2.5-coder:7b").complete("sys", USER)
    message = info.value.message
    assert message.startswith(
        "ollama/qwen2.5-coder:7b: InternalServerError: model requires more system memory"
    )
    assert token not in message and '{"error"' not in message
