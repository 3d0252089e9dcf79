"""Pytest fixtures that start the fake services and point the real clients at them.

``fake_anthropic`` sets ``ANTHROPIC_BASE_URL`` and a dummy ``ANTHROPIC_API_KEY``;
``fake_ollama`` sets ``OLLAMA_HOST`` and resets that host's circuit breaker.
Both yield the controller so a test can script behaviour and read recorded requests.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.fake_anthropic import FakeAnthropic
from tests.fakes.fake_ollama import FakeOllama

# Looks like a real key so redaction tests are meaningful; it is accepted only by the fake.
DUMMY_API_KEY = "sk-ant-api03-fAkEkEy0123456789abcdefTESTONLY-xyzXYZ"


@pytest.fixture
def fake_anthropic(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic().start()
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", DUMMY_API_KEY)
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture
def fake_ollama(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOllama]:
    from engine.services.ollama import breaker_for

    fake = FakeOllama().start()
    monkeypatch.setenv("OLLAMA_HOST", fake.url)
    breaker_for(fake.url).reset()
    try:
        yield fake
    finally:
        fake.stop()


@pytest.fixture(autouse=True)
def _fresh_service_breakers() -> Iterator[None]:
    """Each test starts with no remembered Ollama failures (the breaker is process-wide)."""
    from engine.services.ollama import reset_breakers

    reset_breakers()
    yield
