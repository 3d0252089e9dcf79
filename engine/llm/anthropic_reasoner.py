"""Claude through the official ``anthropic`` SDK: streaming, prompt caching, retries, cancel.

Owns the Messages API call: the stable prefix of the system prompt gets ``cache_control``,
429/5xx/529 answers are retried here (SDK retries off, so attempts are bounded and
observable) honouring ``retry-after``, and usage is mapped to ``Usage`` and priced.
It never logs request headers or the API key, and imports the SDK lazily.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from engine.config import Settings
from engine.llm.base import (
    Messages,
    ModelCancelled,
    ModelError,
    ModelStreamInterrupted,
    ModelUnavailable,
    PromptBlock,
    StatusFn,
    StreamDone,
    StreamEvent,
    StreamingReasoner,
    SystemPrompt,
    TextDelta,
    Usage,
    as_blocks,
    compute_cost,
    price_for,
    retry_status,
    timeout_error,
)
from engine.llm.cancel import TurnStop, call_cancellable, iterate_cancellable
from engine.llm.retry import RETRYABLE_STATUS, RetryPolicy, parse_retry_after
from engine.tokens import estimate_tokens
from engine.words import plural

log = logging.getLogger("semfora.llm.anthropic")

# How a retried HTTP status is named to the user ("retrying 2/4 in 3 s: overloaded (529)").
# Where requests go when ANTHROPIC_BASE_URL is unset or blank.
DEFAULT_BASE_URL = "https://api.anthropic.com"
STATUS_WORDS = {408: "timed out", 409: "conflict", 429: "rate limited", 529: "overloaded"}
# Error event types that mean "try again later" when they arrive inside a 200 stream,
# each with how it is named to the user ("retrying 1/4 in 1 s: overloaded (in the stream)").
RETRYABLE_STREAM_ERRORS = {
    "overloaded_error": "overloaded (in the stream)",
    "rate_limit_error": "rate limited (in the stream)",
    "api_error": "server error (in the stream)",
}
# What to do when a status is still answered after every retry. Only a rate limit counts the
# output tokens asked for; lowering them does nothing for an overloaded or failing server.
STATUS_HINTS = {
    429: "wait a minute and try again, or lower llm.max_output_tokens (rate limits count them)",
    529: "the API is overloaded: wait a few minutes and try again (llm.max_retries sets the retries)",
}
DEFAULT_STATUS_HINT = "the API failed: try again in a minute (llm.max_retries sets the retries)"


def cached_system(blocks: list[PromptBlock]) -> list[dict[str, Any]]:
    """System blocks for the API; ``cache_control`` goes on the last block of the cached prefix.

    One breakpoint caches everything before it, so the stable prefix (system prompt,
    overview, session memory) is written once and read on every later turn.
    """
    out: list[dict[str, Any]] = [{"type": "text", "text": b.text} for b in blocks if b.text]
    kept = [b for b in blocks if b.text]
    last_cached = max((i for i, b in enumerate(kept) if b.cache), default=None)
    if last_cached is not None:
        out[last_cached]["cache_control"] = {"type": "ephemeral"}
    return out


def _redact(text: str, secret: str) -> str:
    return text.replace(secret, "[redacted]") if secret else text


class AnthropicReasoner(StreamingReasoner):
    """A ``Reasoner`` on the Anthropic Messages API (``ANTHROPIC_BASE_URL`` honoured)."""

    def __init__(
        self,
        settings: Settings,
        *,
        model: str | None = None,
        api_key: str,
        base_url: str | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        import anthropic  # heavy; only when Claude is really used

        self.settings = settings
        self.model = (model or settings.llm.model).removeprefix("anthropic/")
        self.retry = retry or RetryPolicy(max_retries=settings.llm.max_retries)
        self._secret = api_key
        self._anthropic = anthropic
        self._client = anthropic.Anthropic(
            api_key=api_key,
            # Never None: the SDK then reads ANTHROPIC_BASE_URL itself, and an empty one (set but
            # blank) became a base URL of "" (five "could not connect" attempts to "()").
            base_url=base_url or DEFAULT_BASE_URL,
            max_retries=0,  # retries are ours: bounded, cancellable and visible in tests
            timeout=anthropic.Timeout(settings.llm.read_timeout, connect=settings.llm.connect_timeout),
        )
        self._price = price_for(settings.llm.prices, self.model)

    def __repr__(self) -> str:  # never show the key, even in a traceback's locals
        return f"AnthropicReasoner(model={self.model!r})"

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
        from engine.policy.redaction import redact_request

        system, messages = redact_request(system, messages)  # the last check before the network
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens or self.settings.llm.max_output_tokens,
            "messages": messages,
        }
        system_blocks = cached_system(as_blocks(system))
        if system_blocks:
            request["system"] = system_blocks
        budget = self.settings.llm.turn_timeout
        stop = TurnStop(cancel, deadline if deadline is not None else time.monotonic() + budget)
        attempt = 0
        last_problem = ""
        parts: list[str] = []
        while True:
            emitted = False
            try:
                for event in self._one_attempt(request, stop, attempt):
                    emitted = True
                    if isinstance(event, TextDelta):
                        parts.append(event.text)
                    yield event
                return
            except ModelCancelled as exc:
                if stop.cancelled or not stop.expired():
                    raise
                raise timeout_error(self.model, budget, last_problem, "".join(parts)) from exc
            except _Retryable as exc:
                last_problem = exc.reason
                if emitted or attempt >= self.retry.max_retries:
                    raise exc.final(attempt + 1) from exc.cause
                wait = self.retry.delay(attempt, exc.retry_after)
                left = stop.remaining()
                if left is not None and wait >= left:
                    raise timeout_error(self.model, budget, last_problem) from exc.cause
                message = retry_status(attempt + 1, self.retry.max_retries, wait, exc.reason)
                log.info("model %s: %s", self.model, message)
                if on_status is not None:
                    on_status(message)
                if stop.wait(wait):
                    if stop.cancelled:
                        raise ModelCancelled() from exc.cause
                    raise timeout_error(self.model, budget, last_problem) from exc.cause
                attempt += 1

    def _one_attempt(self, request: dict[str, Any], cancel: TurnStop, attempt: int) -> Iterator[StreamEvent]:
        anthropic = self._anthropic
        import httpx2  # the transport the SDK is built on; its errors surface mid-stream

        if cancel.is_set():
            raise ModelCancelled()
        try:
            # Waiting for the response headers blocks; in a helper thread, the deadline and a
            # cancel still end the wait (an endpoint that accepts and never answers).
            stream = call_cancellable(
                lambda: self._client.messages.create(**request, stream=True), cancel, _close_quietly
            )
        except (anthropic.AuthenticationError, anthropic.PermissionDeniedError) as exc:
            raise ModelUnavailable(
                f"the Anthropic API rejected the API key (HTTP {exc.status_code})",
                code="MODEL_AUTH",
                hint="check ANTHROPIC_API_KEY, or use a local model with --model ollama/qwen2.5-coder:7b",
            ) from exc
        except anthropic.APIStatusError as exc:
            raise self._status_problem(exc, attempt) from exc
        except anthropic.APIConnectionError as exc:
            reason = "timed out" if isinstance(exc, anthropic.APITimeoutError) else "could not connect"
            raise _Retryable(
                "timed out" if reason == "timed out" else "could not connect",
                None,
                exc,
                lambda n: ModelUnavailable(
                    f"the Anthropic API {reason} after {plural(n, 'attempt')} ({self._base_url_text()})",
                    code="MODEL_UNREACHABLE",
                    hint="check the network and ANTHROPIC_BASE_URL, or use --model ollama/qwen2.5-coder:7b",
                ),
            ) from exc

        parts: list[str] = []
        usage = Usage()
        stop_reason: str | None = None
        finished = False

        def cancelled() -> ModelCancelled:
            # A cancelled reply is billed too: the prompt as message_start counted it, and the
            # output so far (estimated from the text received; the final count never comes).
            partial = "".join(parts)
            if not usage.total_input_tokens:
                return ModelCancelled(partial_text=partial)
            spent = dataclasses.replace(
                usage, output_tokens=max(usage.output_tokens, estimate_tokens(partial))
            )
            return ModelCancelled(
                partial_text=partial, usage=spent, cost_usd=compute_cost(spent, self._price)
            )

        try:
            for event in iterate_cancellable(stream, cancel):
                if cancel is not None and cancel.is_set():
                    raise cancelled()
                kind = event.type
                if kind == "message_start":
                    usage = _usage_from(event.message.usage, usage)
                elif kind == "content_block_delta" and getattr(event.delta, "type", "") == "text_delta":
                    parts.append(event.delta.text)
                    yield TextDelta(event.delta.text)
                elif kind == "message_delta":
                    stop_reason = event.delta.stop_reason or stop_reason
                    usage = _usage_from(event.usage, usage)
                elif kind == "message_stop":
                    finished = True
        except ModelCancelled as exc:
            raise cancelled() from exc
        except (anthropic.APIError, httpx2.HTTPError, httpx2.StreamError) as exc:
            if cancel is not None and cancel.is_set():
                raise cancelled() from exc
            partial = "".join(parts)
            error_type = _stream_error_type(exc)
            message = (
                f"the model stream broke after {len(partial)} characters ({error_type or type(exc).__name__})"
            )
            if parts:
                raise ModelStreamInterrupted(message, partial_text=partial) from exc
            if error_type and error_type not in RETRYABLE_STREAM_ERRORS:
                raise ModelError(_redact(f"model error in stream: {exc}", self._secret)) from exc
            raise _Retryable(
                RETRYABLE_STREAM_ERRORS.get(error_type or "", "stream broke"),
                None,
                exc,
                lambda n: ModelStreamInterrupted(f"{message}; gave up after {plural(n, 'attempt')}"),
            ) from exc
        finally:
            _close_quietly(stream)
        if cancel is not None and cancel.is_set():
            raise cancelled()
        if not finished:
            partial = "".join(parts)
            if parts:
                raise ModelStreamInterrupted(
                    f"the model stream ended without message_stop after {len(partial)} characters",
                    partial_text=partial,
                )
            raise _Retryable(
                "stream ended early",
                None,
                None,
                lambda n: ModelStreamInterrupted(f"the model stream ended early {plural(n, 'time')}"),
            )
        cost = compute_cost(usage, self._price)
        log.info(
            "model %s: %d in (+%d cache write, %d cache read), %d out, $%.5f",
            self.model,
            usage.input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
            usage.output_tokens,
            cost,
        )
        yield StreamDone(usage, cost, self.model, stop_reason, attempts=attempt + 1)

    def _status_problem(self, exc: Any, attempt: int) -> Exception:
        status = int(exc.status_code)
        detail = _redact(_error_message(exc), self._secret)
        if status in RETRYABLE_STATUS:
            headers = dict(exc.response.headers) if getattr(exc, "response", None) is not None else {}
            return _Retryable(
                f"{STATUS_WORDS.get(status, 'server error')} ({status})",
                parse_retry_after(headers),
                exc,
                lambda n: ModelError(
                    f"the Anthropic API answered HTTP {status} {plural(n, 'time')}: {detail}",
                    code="MODEL_OVERLOADED" if status in (429, 529) else None,
                    status=status,
                    hint=STATUS_HINTS.get(status, DEFAULT_STATUS_HINT),
                ),
            )
        if status == 404:
            return ModelUnavailable(
                f"model {self.model} is not known to the API: {detail}",
                code="MODEL_NOT_FOUND",
                hint="choose a model your account can use with --model or llm.model",
            )
        if status in (400, 413) and "too long" in detail:
            return ModelError(
                f"the request does not fit the model's context window: {detail}",
                code="MODEL_CONTEXT_TOO_LONG",
                status=status,
                hint="lower --budget (budget.context_tokens) or start a new session",
            )
        return ModelError(f"the Anthropic API refused the request (HTTP {status}): {detail}", status=status)

    def _base_url_text(self) -> str:
        return str(self._client.base_url)


class _Retryable(Exception):
    """Internal: this attempt failed in a way worth retrying; ``final(n)`` is the error after n tries."""

    def __init__(
        self, reason: str, retry_after: float | None, cause: BaseException | None, final: Any
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after
        self.cause = cause
        self.final = final


def _close_quietly(stream: Any) -> None:
    try:
        stream.close()
    except Exception as exc:  # closing a half-read response from another thread may raise transport errors
        log.debug("closing model stream: %s", type(exc).__name__)


def _usage_from(raw: Any, previous: Usage) -> Usage:
    """Merge a usage object from ``message_start`` or ``message_delta`` (later non-null values win)."""
    if raw is None:
        return previous

    def pick(name: str, old: int) -> int:
        value = getattr(raw, name, None)
        return int(value) if value is not None else old

    return Usage(
        pick("input_tokens", previous.input_tokens),
        pick("cache_creation_input_tokens", previous.cache_creation_input_tokens),
        pick("cache_read_input_tokens", previous.cache_read_input_tokens),
        pick("output_tokens", previous.output_tokens),
    )


def _error_message(exc: Any) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and error.get("message"):
            return f"{error.get('type', 'error')}: {error['message']}"
    return str(getattr(exc, "message", exc))


def _stream_error_type(exc: BaseException) -> str | None:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("type") or "") or None
    return None
