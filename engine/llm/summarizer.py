"""One-or-two-sentence summaries of symbols and files: Ollama first, extractive at once otherwise.

Owns the summary prompt, the ``summary`` namespace of cache.db (keyed by content hash
and model) and the fallback built from facts the engine already knows. A turn never
waits on a dead service: the shared Ollama breaker skips it after one failure.
It must not parse code itself; callers pass ``SummaryFacts``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from engine.config import Settings
from engine.repo.layout import RepoLayout
from engine.services.ollama import OllamaClient, OllamaError, OllamaUnavailable
from engine.store.cache import ResultCache

log = logging.getLogger("semfora.llm.summarizer")

NAMESPACE = "summary"
SummaryKind = Literal["symbol", "file"]
SummarySource = Literal["ollama", "extractive", "cache"]

# Source sent to the summary model is cut here: a small model summarizes the head of a long body well enough.
MAX_SOURCE_CHARS = 6000
# Calls named in an extractive summary; more reads as noise.
MAX_CALLS_SHOWN = 5
# A model summary longer than this is cut at a sentence end (the issue asks for one or two sentences).
MAX_SUMMARY_CHARS = 400
# After Ollama reports an error for the summary model (e.g. not pulled), skip it this long.
MODEL_ERROR_PAUSE_SECONDS = 60.0
# Keep model summaries short and repeatable.
GENERATE_OPTIONS = {"temperature": 0.1, "num_predict": 120}


@dataclass(frozen=True)
class SummaryFacts:
    """What the engine knows about a symbol or file, enough for an extractive summary."""

    name: str
    kind: str  # function, method, class, module, file, ...
    signature: str = ""
    doc: str = ""
    calls: tuple[str, ...] = ()
    risk_level: str = "low"
    risk_reasons: tuple[str, ...] = ()
    file: str = ""
    start_line: int = 0
    end_line: int = 0


@dataclass(frozen=True)
class Summary:
    text: str
    source: SummarySource


@dataclass(frozen=True)
class SummaryRequest:
    """One item for ``presummarize``: the text to summarize, its content hash, kind and facts."""

    key_text: str
    content_hash: str
    kind: SummaryKind
    facts: SummaryFacts = field(default_factory=lambda: SummaryFacts(name="", kind="symbol"))


def extractive_summary(facts: SummaryFacts) -> str:
    """A deterministic summary from facts: signature, first doc line, main calls, risk."""
    head = facts.signature.strip().splitlines()[0].rstrip(":{ ") if facts.signature.strip() else ""
    parts = [f"{facts.kind} {facts.name}" + (f" `{head}`" if head and head != facts.name else "")]
    doc_line = next((line.strip() for line in facts.doc.splitlines() if line.strip()), "")
    if doc_line:
        parts.append(doc_line.rstrip(".") + ".")
    if facts.calls:
        shown = list(dict.fromkeys(facts.calls))[:MAX_CALLS_SHOWN]
        more = len(set(facts.calls)) - len(shown)
        parts.append("Calls " + ", ".join(shown) + (f" and {more} more" if more > 0 else "") + ".")
    if facts.risk_level and facts.risk_level != "low":
        reasons = f" ({', '.join(facts.risk_reasons)})" if facts.risk_reasons else ""
        parts.append(f"Risk {facts.risk_level}{reasons}.")
    if facts.file:
        where = f"{facts.file}:{facts.start_line}" if facts.start_line else facts.file
        parts.append(f"In {where}.")
    first = parts[0] + (":" if len(parts) > 1 else ".")
    return " ".join([first, *parts[1:]])


def summary_prompt(key_text: str, kind: SummaryKind, facts: SummaryFacts) -> str:
    known = [f"name: {facts.name}", f"kind: {facts.kind}"]
    if facts.file:
        known.append(f"file: {facts.file}")
    if facts.calls:
        known.append("calls: " + ", ".join(list(dict.fromkeys(facts.calls))[:10]))
    if facts.risk_level != "low":
        known.append(f"risk: {facts.risk_level} {', '.join(facts.risk_reasons)}".rstrip())
    body = key_text[:MAX_SOURCE_CHARS]
    return (
        f"Summarize this {kind} in one or two sentences: say what it does and what it touches "
        "(files, network, database, other modules). No preamble, no code.\n"
        + "\n".join(known)
        + f"\n```\n{body}\n```\n"
    )


def _trim(text: str) -> str:
    text = " ".join(text.split())
    if len(text) <= MAX_SUMMARY_CHARS:
        return text
    cut = text[:MAX_SUMMARY_CHARS]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > 0 else cut.rstrip() + "…"


class Summarizer:
    """Summaries through Ollama with a cache.db cache and an immediate extractive fallback."""

    def __init__(
        self,
        layout: RepoLayout,
        settings: Settings,
        *,
        client: OllamaClient | None = None,
        cache: ResultCache | None = None,
    ) -> None:
        self.settings = settings
        self.model = settings.ollama.summary_model
        self.client = client or OllamaClient(settings.ollama.host, timeout=settings.ollama.timeout)
        self.cache = cache or ResultCache(
            layout.cache_db, ttl_days=settings.cache.ttl_days, max_mb=settings.cache.max_mb
        )
        self._model_paused_until = 0.0

    def close(self) -> None:
        """Release the HTTP client and the cache.db connection."""
        self.client.close()
        self.cache.close()

    def cache_key(self, content_hash: str, kind: SummaryKind) -> str:
        return f"{self.model}|{kind}|{content_hash}"

    def cached(self, content_hash: str, kind: SummaryKind) -> Summary | None:
        """The cached model summary, if any (no network)."""
        raw = self.cache.get(NAMESPACE, self.cache_key(content_hash, kind))
        if raw is None:
            return None
        return Summary(json.loads(raw)["text"], "cache")

    def summarize(self, key_text: str, content_hash: str, kind: SummaryKind, facts: SummaryFacts) -> Summary:
        """Cached summary, else an Ollama one (cached), else an extractive one — never an error."""
        hit = self.cached(content_hash, kind)
        if hit is not None:
            return hit
        if time.monotonic() < self._model_paused_until:
            return Summary(extractive_summary(facts), "extractive")
        try:
            text = _trim(
                self.client.generate(
                    self.model, summary_prompt(key_text, kind, facts), options=GENERATE_OPTIONS
                )
            )
        except OllamaUnavailable as exc:
            log.debug("summary of %s falls back to extractive: %s", facts.name, exc.message)
            return Summary(extractive_summary(facts), "extractive")
        except OllamaError as exc:
            # Ollama is up but cannot run the model (not pulled, bad name): stop asking for a while.
            log.warning(
                "summary model %s failed (%s); using extractive summaries for %.0fs",
                self.model,
                exc.message,
                MODEL_ERROR_PAUSE_SECONDS,
            )
            self._model_paused_until = time.monotonic() + MODEL_ERROR_PAUSE_SECONDS
            return Summary(extractive_summary(facts), "extractive")
        if not text:
            return Summary(extractive_summary(facts), "extractive")
        self.cache.put(
            NAMESPACE,
            self.cache_key(content_hash, kind),
            json.dumps({"text": text, "model": self.model}),
            content_hash=content_hash,
        )
        return Summary(text, "ollama")

    def presummarize(self, requests: Iterable[SummaryRequest], stop_event: threading.Event) -> int:
        """Summarize ``requests`` in order (pass highest fan-in first) until stopped or Ollama fails.

        Returns how many new model summaries were written. Meant for a background thread.
        """
        written = 0
        for request in requests:
            if (
                stop_event.is_set()
                or not self.client.breaker.allow()
                or time.monotonic() < self._model_paused_until
            ):
                break
            if self.cached(request.content_hash, request.kind) is not None:
                continue
            summary = self.summarize(request.key_text, request.content_hash, request.kind, request.facts)
            if summary.source == "extractive":
                break  # Ollama is down or failing: stop rather than spin through the list
            written += 1
        return written

    def start_presummarize(
        self, requests: Iterable[SummaryRequest]
    ) -> tuple[threading.Thread, threading.Event]:
        """Run ``presummarize`` in a daemon thread; set the returned event to stop it."""
        stop = threading.Event()
        items = list(requests)
        thread = threading.Thread(
            target=self.presummarize, args=(items, stop), name="semfora-presummarize", daemon=True
        )
        thread.start()
        return thread, stop


def content_hash_of(text: str) -> str:
    """The content hash summaries are keyed by when the caller has no stored hash."""
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
