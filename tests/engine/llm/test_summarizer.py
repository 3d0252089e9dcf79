"""Summarizer: Ollama summaries cached in cache.db, and an immediate extractive fallback."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from engine.config import Settings
from engine.llm.summarizer import (
    NAMESPACE,
    Summarizer,
    SummaryFacts,
    SummaryRequest,
    content_hash_of,
    extractive_summary,
)
from engine.repo.layout import RepoLayout
from engine.services.ollama import OllamaClient
from engine.store.cache import ResultCache
from tests.conftest import RepoFactory
from tests.fakes.fake_ollama import FakeOllama

SOURCE = '''def send_invoice(order, mailer):
    """Email the invoice for a paid order."""
    pdf = render_pdf(order)
    mailer.send(order.customer.email, pdf)
    audit.log("invoice", order.id)
'''
FACTS = SummaryFacts(
    name="send_invoice",
    kind="function",
    signature="def send_invoice(order, mailer):",
    doc="Email the invoice for a paid order.\nMore detail.",
    calls=("render_pdf", "mailer.send", "audit.log"),
    risk_level="medium",
    risk_reasons=("network",),
    file="billing/invoice.py",
    start_line=12,
    end_line=16,
)


def _summarizer(make_repo: RepoFactory, *, timeout: float = 3.0) -> Summarizer:
    root = make_repo({"billing/invoice.py": SOURCE})
    settings = Settings()
    settings.ollama.timeout = timeout
    import os

    settings.ollama.host = os.environ["OLLAMA_HOST"]
    return Summarizer(RepoLayout.for_path(root), settings)


def test_extractive_summary_has_signature_doc_calls_and_risk() -> None:
    text = extractive_summary(FACTS)
    assert "def send_invoice(order, mailer)" in text
    assert "Email the invoice for a paid order." in text and "More detail" not in text
    assert "render_pdf, mailer.send, audit.log" in text
    assert "Risk medium (network)" in text
    assert "billing/invoice.py:12" in text


def test_ollama_summary_is_cached_by_content_hash(make_repo: RepoFactory, fake_ollama: FakeOllama) -> None:
    fake_ollama.reply("Emails a paid order's invoice PDF to the customer and writes an audit entry.")
    summarizer = _summarizer(make_repo)
    digest = content_hash_of(SOURCE)
    first = summarizer.summarize(SOURCE, digest, "symbol", FACTS)
    second = summarizer.summarize(SOURCE, digest, "symbol", FACTS)
    assert first.source == "ollama" and second.source == "cache"
    assert (
        first.text
        == second.text
        == "Emails a paid order's invoice PDF to the customer and writes an audit entry."
    )
    generate = fake_ollama.requests_to("/api/generate")
    assert len(generate) == 1
    assert generate[0].body["model"] == Settings().ollama.summary_model
    assert generate[0].body["stream"] is False and "send_invoice" in generate[0].body["prompt"]
    # A new Summarizer (a new process, say) reads the same cache.db entry.
    again = _summarizer_for_same_repo(summarizer).summarize(SOURCE, digest, "symbol", FACTS)
    assert again.source == "cache" and len(fake_ollama.requests_to("/api/generate")) == 1


def _summarizer_for_same_repo(summarizer: Summarizer) -> Summarizer:
    return Summarizer(
        RepoLayout.for_path(Path(summarizer.cache.path).parent),
        summarizer.settings,
        cache=ResultCache(summarizer.cache.path),
    )


def test_changed_content_is_summarized_again_and_old_entry_can_be_invalidated(
    make_repo: RepoFactory, fake_ollama: FakeOllama
) -> None:
    fake_ollama.reply("Old behaviour.", "New behaviour.")
    summarizer = _summarizer(make_repo)
    old_hash = content_hash_of(SOURCE)
    new_source = SOURCE.replace("audit.log", "audit.record")
    assert summarizer.summarize(SOURCE, old_hash, "symbol", FACTS).text == "Old behaviour."
    changed = summarizer.summarize(new_source, content_hash_of(new_source), "symbol", FACTS)
    assert changed.text == "New behaviour." and changed.source == "ollama"
    assert summarizer.cache.invalidate_content([old_hash]) == 1
    assert summarizer.cached(old_hash, "symbol") is None
    assert summarizer.cache.stats().by_namespace[NAMESPACE] == 1


def test_dead_ollama_falls_back_at_once_even_with_a_long_timeout(make_repo: RepoFactory) -> None:
    summarizer = _summarizer(make_repo, timeout=3.0)  # OLLAMA_HOST points at a closed port
    started = time.monotonic()
    results = [summarizer.summarize(SOURCE, f"h{i}", "symbol", FACTS) for i in range(20)]
    assert time.monotonic() - started < 0.5
    assert {r.source for r in results} == {"extractive"}
    assert results[0].text == extractive_summary(FACTS)


def test_slow_ollama_falls_back_within_the_timeout_and_is_then_skipped(
    make_repo: RepoFactory, fake_ollama: FakeOllama
) -> None:
    fake_ollama.delay = 2.0
    summarizer = _summarizer(make_repo, timeout=0.3)
    started = time.monotonic()
    first = summarizer.summarize(SOURCE, "a", "symbol", FACTS)
    elapsed = time.monotonic() - started
    assert first.source == "extractive" and 0.25 <= elapsed < 1.0
    started = time.monotonic()
    second = summarizer.summarize(SOURCE, "b", "symbol", FACTS)
    assert second.source == "extractive" and time.monotonic() - started < 0.2, (
        "breaker skips the slow service"
    )
    assert len(fake_ollama.requests_to("/api/generate")) == 1


def test_ollama_dying_mid_session_degrades_without_errors(
    make_repo: RepoFactory, fake_ollama: FakeOllama
) -> None:
    summarizer = _summarizer(make_repo)
    assert summarizer.summarize(SOURCE, "one", "file", FACTS).source == "ollama"
    fake_ollama.kill()
    started = time.monotonic()
    assert summarizer.summarize(SOURCE, "two", "file", FACTS).source == "extractive"
    assert time.monotonic() - started < 0.5


def test_presummarize_fills_the_cache_in_order_and_stops_on_request(
    make_repo: RepoFactory, fake_ollama: FakeOllama
) -> None:
    summarizer = _summarizer(make_repo)
    requests = [
        SummaryRequest(f"def f{i}(): pass", f"hash{i}", "symbol", SummaryFacts(name=f"f{i}", kind="function"))
        for i in range(5)
    ]
    thread, stop = summarizer.start_presummarize(requests[:3])
    thread.join(5)
    assert not thread.is_alive()
    assert all(summarizer.cached(f"hash{i}", "symbol") is not None for i in range(3))
    assert summarizer.cached("hash3", "symbol") is None
    stopped = threading.Event()
    stopped.set()
    assert summarizer.presummarize(requests, stopped) == 0
    assert summarizer.presummarize(requests, threading.Event()) == 2, "only the two not yet cached"


def test_presummarize_gives_up_quickly_when_ollama_is_down(make_repo: RepoFactory) -> None:
    summarizer = _summarizer(make_repo)
    requests = [
        SummaryRequest("x", f"h{i}", "symbol", SummaryFacts(name="x", kind="function")) for i in range(50)
    ]
    started = time.monotonic()
    assert summarizer.presummarize(requests, threading.Event()) == 0
    assert time.monotonic() - started < 0.5


@pytest.mark.parametrize("reply", ["", "   "])
def test_empty_model_answer_falls_back_to_extractive(
    make_repo: RepoFactory, fake_ollama: FakeOllama, reply: str
) -> None:
    fake_ollama.reply(reply)
    summary = _summarizer(make_repo).summarize(SOURCE, "e", "symbol", FACTS)
    assert summary.source == "extractive"


def test_missing_summary_model_is_asked_once_then_skipped(make_repo: RepoFactory) -> None:
    fake = FakeOllama(models=("nomic-embed-text:latest",), strict_models=True).start()
    try:
        summarizer = _summarizer(make_repo)
        summarizer.client = OllamaClient(fake.url, timeout=3.0)
        results = [summarizer.summarize(SOURCE, f"m{i}", "symbol", FACTS).source for i in range(5)]
        assert results == ["extractive"] * 5
        assert len(fake.requests_to("/api/generate")) == 1
    finally:
        fake.stop()
