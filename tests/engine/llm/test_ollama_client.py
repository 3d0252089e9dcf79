"""OllamaClient against the fake Ollama API: the calls helper E's search layer reuses."""

from __future__ import annotations

import math
import time

import pytest

from engine.services.ollama import (
    CircuitBreaker,
    OllamaClient,
    OllamaError,
    OllamaUnavailable,
    normalise_host,
)
from tests.fakes.fake_ollama import FakeOllama


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


def test_tags_generate_chat_and_embed(fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("generated", "chatted")
    with OllamaClient(fake_ollama.url) as client:
        assert client.available()
        assert "qwen2.5-coder:1.5b" in client.tags()
        assert client.has_model("nomic-embed-text")
        assert client.generate("qwen2.5-coder:1.5b", "say hi") == "generated"
        assert client.chat("qwen2.5-coder:1.5b", [{"role": "user", "content": "hi"}]) == "chatted"
        vectors = client.embed(
            "nomic-embed-text", ["parse the config file", "parse config files", "send email"]
        )
    assert len(vectors) == 3 and len(vectors[0]) == len(vectors[2])
    assert _cosine(vectors[0], vectors[1]) > _cosine(vectors[0], vectors[2])
    assert fake_ollama.requests_to("/api/embed")[0].body["input"][2] == "send email"


def test_unknown_model_is_an_ollama_error_not_an_outage() -> None:
    fake = FakeOllama(strict_models=True).start()
    try:
        with OllamaClient(fake.url) as client:
            with pytest.raises(OllamaError, match="not found"):
                client.generate("no-such-model", "x")
            assert client.breaker.allow(), "a 404 says nothing about the service being down"
    finally:
        fake.stop()


def test_dead_host_opens_the_breaker_and_later_calls_fail_instantly() -> None:
    breaker = CircuitBreaker(cooldown=60)
    with OllamaClient("http://127.0.0.1:9", timeout=3.0, breaker=breaker) as client:
        with pytest.raises(OllamaUnavailable):
            client.generate("m", "x")
        started = time.monotonic()
        assert not client.available()
        with pytest.raises(OllamaUnavailable, match="recently failed"):
            client.embed("m", ["x"])
        assert time.monotonic() - started < 0.2


def test_breaker_closes_after_its_cooldown() -> None:
    now = [100.0]
    breaker = CircuitBreaker(cooldown=60, clock=lambda: now[0])
    breaker.record_failure("refused")
    assert not breaker.allow()
    now[0] += 61
    assert breaker.allow()


def test_ollama_host_forms_are_normalised() -> None:
    assert normalise_host("127.0.0.1") == "http://127.0.0.1:11434"
    assert normalise_host("0.0.0.0:11434/") == "http://127.0.0.1:11434"
    assert normalise_host("https://gpu.local:8443") == "https://gpu.local:8443"
