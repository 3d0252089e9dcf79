"""The reasoner contract: prompt blocks in, streamed text and usage out.

Owns the plain data every model client speaks (``PromptBlock``, ``Usage``, stream
events, ``Reply``), cost from the configured price table, the session cost
accumulator and the typed model errors. It must not talk to any network itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from engine.config import ModelPrice
from engine.errors import SemforaError, ServiceUnavailable

# Said wherever no model can be used, so every surface gives the same advice.
CONFIGURE_HINT = (
    "set ANTHROPIC_API_KEY for Claude, or pick a local model with --model ollama/qwen2.5-coder:7b "
    "(also SEMFORA_MODEL or llm.model in config.toml) and start Ollama"
)

TOKENS_PER_MILLION = 1_000_000


class ModelUnavailable(ServiceUnavailable):
    """No usable model: missing API key, unreachable endpoint or rejected credentials (exit 3)."""

    code = "MODEL_UNAVAILABLE"

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = CONFIGURE_HINT) -> None:
        super().__init__(message, code=code, hint=hint)


class ModelError(SemforaError):
    """The model API answered with an error we cannot recover from, or retries ran out (exit 1)."""

    code = "MODEL_ERROR"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        hint: str | None = None,
        status: int | None = None,
        partial_text: str = "",
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.status = status
        self.partial_text = partial_text


class ModelStreamInterrupted(ModelError):
    """The reply stream broke after text had already been shown (not retried: it would repeat)."""

    code = "MODEL_STREAM_INTERRUPTED"

    def __init__(
        self,
        message: str,
        *,
        hint: str | None = "the text shown is only the start of the reply; ask again",
        partial_text: str = "",
    ) -> None:
        super().__init__(message, hint=hint, partial_text=partial_text)


class ModelTimeout(ServiceUnavailable):
    """The model gave no complete answer before the turn's deadline (``llm.turn_timeout``) (exit 3)."""

    code = "MODEL_TIMEOUT"

    def __init__(self, message: str, *, hint: str | None = None, partial_text: str = "") -> None:
        super().__init__(message, hint=hint)
        self.partial_text = partial_text


class ModelCancelled(SemforaError):
    """The caller set the cancel event; ``partial_text`` holds what had arrived."""

    code = "MODEL_CANCELLED"

    def __init__(
        self,
        message: str = "model reply cancelled",
        *,
        partial_text: str = "",
        usage: Usage | None = None,
        cost_usd: float = 0.0,
    ) -> None:
        super().__init__(message)
        self.partial_text = partial_text
        # What the cancelled request still cost, when the provider had said (billed all the same).
        self.usage = usage
        self.cost_usd = cost_usd


@dataclass(frozen=True)
class PromptBlock:
    """One piece of the system prompt; ``cache=True`` marks it part of the stable, cacheable prefix.

    Put cached blocks first (system prompt, repository overview, session memory) and
    the per-turn context after them: a cache prefix ends at the last cached block.
    """

    text: str
    cache: bool = False


@dataclass(frozen=True)
class Usage:
    """Tokens of one call, split the way Anthropic bills them."""

    input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    output_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.output_tokens + other.output_tokens,
        )

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_creation_input_tokens + self.cache_read_input_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True)
class TextDelta:
    """A piece of reply text, in order."""

    text: str


@dataclass(frozen=True)
class StreamDone:
    """The last event of every successful stream."""

    usage: Usage
    cost_usd: float
    model: str
    stop_reason: str | None
    attempts: int = 1


StreamEvent = TextDelta | StreamDone


@dataclass(frozen=True)
class Reply:
    """A whole reply, as ``Reasoner.complete`` returns it."""

    text: str
    usage: Usage
    cost_usd: float
    model: str
    stop_reason: str | None
    attempts: int = 1


SystemPrompt = list[PromptBlock] | str
Messages = list[dict[str, str]]
# Receives one line for the user while a call waits ("retrying 2/4 in 3 s: overloaded (529)").
StatusFn = Callable[[str], None]


@runtime_checkable
class Reasoner(Protocol):
    """A model client. ``stream`` yields ``TextDelta``s then exactly one ``StreamDone``.

    ``deadline`` (a ``time.monotonic()`` instant) bounds the whole call, retries and their
    pauses included (default: ``llm.turn_timeout`` from now); ``on_status`` hears each retry.
    Errors: ``ModelUnavailable``/``ModelTimeout`` (exit 3), ``ModelError``/``ModelStreamInterrupted``
    (exit 1), ``ModelCancelled`` when ``cancel`` is set.
    """

    model: str

    def stream(
        self,
        system: SystemPrompt,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        on_status: StatusFn | None = None,
    ) -> Iterator[StreamEvent]: ...

    def complete(
        self,
        system: SystemPrompt,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        on_status: StatusFn | None = None,
    ) -> Reply: ...


def collect_reply(events: Iterable[StreamEvent]) -> Reply:
    """Drain a stream into one ``Reply`` (what ``complete`` does)."""
    parts: list[str] = []
    for event in events:
        if isinstance(event, TextDelta):
            parts.append(event.text)
        else:
            return Reply(
                "".join(parts), event.usage, event.cost_usd, event.model, event.stop_reason, event.attempts
            )
    raise ModelStreamInterrupted("model stream ended without a final event", partial_text="".join(parts))


class StreamingReasoner:
    """Shared half of every reasoner: ``complete`` is ``stream`` drained by ``collect_reply``."""

    model: str

    def stream(
        self,
        system: SystemPrompt,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        on_status: StatusFn | None = None,
    ) -> Iterator[StreamEvent]:
        raise NotImplementedError

    def complete(
        self,
        system: SystemPrompt,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
        deadline: float | None = None,
        on_status: StatusFn | None = None,
    ) -> Reply:
        return collect_reply(
            self.stream(
                system, messages, max_tokens=max_tokens, cancel=cancel, deadline=deadline, on_status=on_status
            )
        )


def retry_status(attempt: int, max_retries: int, wait: float, reason: str) -> str:
    """The line the user sees while a call pauses before its next attempt (``attempt`` from 1)."""
    shown = f"{wait:.0f} s" if wait >= 1 else f"{wait:.1f} s"
    return f"retrying {attempt}/{max_retries} in {shown}: {reason}"


def timeout_error(model: str, seconds: float, last_problem: str, partial_text: str = "") -> ModelTimeout:
    """The error for a call that reached its deadline (``llm.turn_timeout`` seconds)."""
    tail = f"; last problem: {last_problem}" if last_problem else ""
    return ModelTimeout(
        f"{model} gave no complete answer within the turn's {seconds:g} s (llm.turn_timeout){tail}",
        hint="check the network and the model endpoint, or raise llm.turn_timeout",
        partial_text=partial_text,
    )


def as_blocks(system: SystemPrompt) -> list[PromptBlock]:
    """Normalise a plain string system prompt into blocks (a string is not cached)."""
    if isinstance(system, str):
        return [PromptBlock(system)] if system else []
    return list(system)


def price_for(prices: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    """The price row for ``model``: exact name, else the longest configured prefix.

    A dated id such as ``claude-sonnet-4-5-20250929`` uses the ``claude-sonnet-4-5`` row;
    a provider prefix (``anthropic/``) is ignored. Unknown models (local ones) have no price.
    """
    name = model.split("/", 1)[1] if model.startswith("anthropic/") else model
    if name in prices:
        return prices[name]
    best = max((key for key in prices if name.startswith(key)), key=len, default=None)
    return prices[best] if best is not None else None


def compute_cost(usage: Usage, price: ModelPrice | None) -> float:
    """US dollars for ``usage`` at ``price`` (0.0 when the model has no price, e.g. local)."""
    if price is None:
        return 0.0
    dollars = (
        usage.input_tokens * price.input
        + usage.cache_creation_input_tokens * price.cache_write
        + usage.cache_read_input_tokens * price.cache_read
        + usage.output_tokens * price.output
    )
    return dollars / TOKENS_PER_MILLION


@dataclass
class UsageTotals:
    """Thread-safe running totals for a session: usage, cost and number of calls."""

    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, usage: Usage, cost_usd: float) -> None:
        with self._lock:
            self.usage = self.usage + usage
            self.cost_usd += cost_usd
            self.calls += 1

    def add_reply(self, reply: Reply | StreamDone) -> None:
        self.add(reply.usage, reply.cost_usd)

    def to_dict(self) -> dict[str, float | int]:
        with self._lock:
            return {**self.usage.to_dict(), "cost_usd": round(self.cost_usd, 6), "calls": self.calls}
