"""Any non-Claude model (``ollama/qwen2.5-coder:7b``, ``openai/...``) through LiteLLM.

Owns the translation between our prompt blocks/messages and LiteLLM's OpenAI-style
streaming chunks, and maps its usage into ``Usage``. LiteLLM is imported lazily (it is
slow to import); ``ollama/`` models are sent to ``OLLAMA_HOST``. Never logs credentials.
"""

from __future__ import annotations

import json
import logging
import os
import re
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
from engine.llm.retry import RetryPolicy
from engine.services.ollama import normalise_host
from engine.tokens import estimate_tokens

log = logging.getLogger("semfora.llm.litellm")

OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")
# A provider's error message is quoted up to this many characters (its first line).
PROVIDER_MESSAGE_CHARS = 200
# Environment variable names quoted in a provider's "missing credentials" message.
_KEY_VARIABLE = re.compile(r"\b[A-Z][A-Z0-9_]*_(?:API_KEY|API_BASE|KEY)\b")


def import_litellm() -> Any:
    """LiteLLM, imported offline-first and quiet: its bundled price map instead of a fetch at
    import, and no "Provider List" or feedback banners printed into our stdout."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # slow to import; only when a non-Claude model is really used

    litellm.suppress_debug_info = True
    return litellm


def check_provider(model: str) -> None:
    """Raise ``ModelUnavailable`` (``MODEL_NOT_FOUND``) when LiteLLM cannot tell which provider
    serves ``model`` (``mistral-large-latest`` without ``mistral/``): said when the model is
    chosen, not as a bare ``BadRequestError`` at the first turn. Never calls the network."""
    litellm = import_litellm()
    try:
        litellm.get_llm_provider(model)
    except litellm.exceptions.BadRequestError:
        raise ModelUnavailable(
            f"LiteLLM does not know which provider serves {model!r}",
            code="MODEL_NOT_FOUND",
            hint="name the provider first, e.g. openai/gpt-4o, mistral/mistral-large-latest or "
            "ollama/qwen2.5-coder:7b (https://docs.litellm.ai/docs/providers)",
        ) from None


def missing_credentials(model: str) -> list[str]:
    """The key variables LiteLLM's provider for ``model`` needs and finds unset (``OPENAI_API_KEY``);
    [] when they are set or the provider needs none. Never calls the network."""
    litellm = import_litellm()
    try:
        found = litellm.validate_environment(model=model)
    except (ValueError, KeyError, litellm.exceptions.BadRequestError):  # a provider it cannot name
        return []
    return [str(v) for v in found.get("missing_keys") or []]


class LiteLLMReasoner(StreamingReasoner):
    """A ``Reasoner`` for any LiteLLM model string; local models cost 0 unless priced in config."""

    def __init__(self, settings: Settings, *, model: str) -> None:
        self.settings = settings
        self.model = model
        self.api_base: str | None = None
        if model.startswith(OLLAMA_PREFIXES):
            self.api_base = normalise_host(settings.ollama.host)  # carries OLLAMA_HOST (engine.config)
        self._price = price_for(settings.llm.prices, model)
        self.retry = RetryPolicy(max_retries=settings.llm.max_retries)

    def __repr__(self) -> str:
        return f"LiteLLMReasoner(model={self.model!r})"

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
        litellm = import_litellm()
        from engine.policy.redaction import redact_request

        system, messages = redact_request(system, messages)  # the last check before the network

        system_text = "\n\n".join(b.text for b in as_blocks(system) if b.text)
        full: list[dict[str, str]] = (
            [{"role": "system", "content": system_text}] if system_text else []
        ) + list(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": full,
            "stream": True,
            "max_tokens": max_tokens or self.settings.llm.max_output_tokens,
            "timeout": self.settings.llm.read_timeout,
            "num_retries": 0,  # retries are ours: bounded by the deadline and shown to the user
            "stream_options": {"include_usage": True},
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        budget = self.settings.llm.turn_timeout
        stop = TurnStop(cancel, deadline if deadline is not None else time.monotonic() + budget)
        attempt = 0
        last_problem = ""
        while True:
            try:
                response = call_cancellable(lambda: litellm.completion(**kwargs), stop, _close)
                break
            except ModelCancelled:
                if stop.cancelled or not stop.expired():
                    raise
                raise timeout_error(self.model, budget, last_problem) from None
            except Exception as exc:
                mapped = _map_error(litellm, self.model, exc)
                auth = getattr(mapped, "code", "") == "MODEL_AUTH"
                reason = None if auth else _retry_reason(litellm, exc)
                if reason is None or attempt >= self.retry.max_retries:
                    raise mapped from exc
                last_problem = reason
                wait = self.retry.delay(attempt)
                left = stop.remaining()
                if left is not None and wait >= left:
                    raise timeout_error(self.model, budget, last_problem) from exc
                message = retry_status(attempt + 1, self.retry.max_retries, wait, reason)
                log.info("model %s: %s", self.model, message)
                if on_status is not None:
                    on_status(message)
                if stop.wait(wait):
                    if stop.cancelled:
                        raise ModelCancelled() from exc
                    raise timeout_error(self.model, budget, last_problem) from exc
                attempt += 1

        parts: list[str] = []
        usage: Usage | None = None
        stop_reason: str | None = None
        try:
            for chunk in iterate_cancellable(response, stop):
                for choice in getattr(chunk, "choices", None) or []:
                    delta = getattr(choice, "delta", None)
                    text = getattr(delta, "content", None) if delta is not None else None
                    if text:
                        parts.append(text)
                        yield TextDelta(text)
                    if getattr(choice, "finish_reason", None):
                        stop_reason = choice.finish_reason
                raw_usage = getattr(chunk, "usage", None)
                if raw_usage is not None and getattr(raw_usage, "prompt_tokens", None) is not None:
                    usage = _usage_from_openai(raw_usage)
        except ModelCancelled as exc:
            _close(response)
            if stop.expired() and not stop.cancelled:
                raise timeout_error(self.model, budget, "the reply stalled", "".join(parts)) from exc
            raise ModelCancelled(partial_text="".join(parts)) from exc
        except Exception as exc:
            if not isinstance(exc, _stream_errors(litellm)):
                raise
            raise ModelStreamInterrupted(
                f"{self.model} stream broke after {len(''.join(parts))} characters ({type(exc).__name__})",
                partial_text="".join(parts),
            ) from exc
        text = "".join(parts)
        if usage is None:
            # Some providers send no usage in streams; fall back to the shared estimate.
            prompt = "\n".join(m.get("content", "") for m in full)
            usage = Usage(input_tokens=estimate_tokens(prompt), output_tokens=estimate_tokens(text))
        cost = compute_cost(usage, self._price)
        log.info("model %s: %d in, %d out, $%.5f", self.model, usage.input_tokens, usage.output_tokens, cost)
        yield StreamDone(usage, cost, self.model, _stop_reason(stop_reason), attempts=attempt + 1)


def _retry_reason(litellm: Any, exc: Exception) -> str | None:
    """Why another attempt is worth it (shown to the user), or None when it is not."""
    errors = litellm.exceptions
    if isinstance(exc, errors.RateLimitError):
        return "rate limited (429)"
    if isinstance(exc, errors.Timeout):
        return "timed out"
    if isinstance(exc, errors.APIConnectionError):
        return "could not connect"
    if isinstance(exc, errors.ServiceUnavailableError):
        return "unavailable (503)"
    if isinstance(exc, errors.InternalServerError):
        return "server error (500)"
    return None


def _missing_credentials(litellm: Any, model: str, exc: Exception) -> list[str] | None:
    """The variables a provider asked for when ``exc`` says its credentials are missing, else None."""
    errors = litellm.exceptions
    text = str(exc)
    if not (
        isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError)
        or "missing credentials" in text.lower()
        or "api_key client option must be set" in text.lower()
    ):
        return None
    named = list(dict.fromkeys(_KEY_VARIABLE.findall(text)))
    if not model.startswith(OLLAMA_PREFIXES):
        try:
            missing = list(litellm.validate_environment(model=model).get("missing_keys") or [])
        except Exception as check_exc:  # an unknown provider: keep what the message named
            log.debug("validate_environment(%s): %s", model, type(check_exc).__name__)
            missing = []
        named = missing or named  # the provider's own list is exact; a message may name extras
    return named


def _stream_errors(litellm: Any) -> tuple[type[BaseException], ...]:
    """What a broken provider stream raises: LiteLLM's (OpenAI-style) errors or the transport's."""
    import httpx
    import openai  # a LiteLLM dependency; the base of all its exception classes

    return (openai.APIError, httpx.HTTPError, litellm.exceptions.APIError)


def _map_error(litellm: Any, model: str, exc: Exception) -> Exception:
    """LiteLLM's exception for a failed call as our typed error (unknown exceptions pass through)."""
    errors = litellm.exceptions
    missing = _missing_credentials(litellm, model, exc)
    if missing is not None:
        wanted = " or ".join(missing) if missing else "the provider's API key variable"
        rejected = isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError)
        return ModelUnavailable(
            f"{model}: credentials rejected; check {wanted}"
            if rejected and "missing" not in str(exc).lower()
            else f"{model}: no credentials: set {wanted}",
            code="MODEL_AUTH",
            hint="or use a local model with --model ollama/qwen2.5-coder:7b",
        )
    if isinstance(exc, errors.NotFoundError):
        return ModelUnavailable(
            f"model {model} was not found by its provider",
            code="MODEL_NOT_FOUND",
            hint="check the model name (for Ollama: ollama pull <model>)",
        )
    if isinstance(exc, errors.APIConnectionError | errors.ServiceUnavailableError | errors.Timeout):
        return ModelUnavailable(f"{model} is not reachable ({type(exc).__name__})", code="MODEL_UNREACHABLE")
    if isinstance(exc, errors.ContextWindowExceededError):
        return ModelError(
            f"{model}: the request does not fit the context window",
            code="MODEL_CONTEXT_TOO_LONG",
            hint="lower --budget (budget.context_tokens) or start a new session",
        )
    if isinstance(exc, errors.RateLimitError):
        return ModelError(f"{model}: rate limited after every retry", code="MODEL_OVERLOADED", status=429)
    if isinstance(exc, _stream_errors(litellm)):
        return ModelError(
            f"{model}: {type(exc).__name__}{_provider_says(exc)}", status=getattr(exc, "status_code", None)
        )
    return exc


def _provider_says(exc: Exception) -> str:
    """``": "`` and the first line of what the provider answered (LiteLLM's prefix dropped,
    secrets masked, at most ``PROVIDER_MESSAGE_CHARS``); empty when it said nothing."""
    from engine.policy.redaction import redact

    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    if not lines:
        return ""
    first = re.sub(r"^litellm\.\w+:\s*", "", lines[0])
    first = re.sub(r"^\w+Exception\s*-\s*", "", first)
    try:  # Ollama and OpenAI-style bodies: {"error": "..."} or {"error": {"message": "..."}}
        body = json.loads(first)
    except ValueError:
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict):
        error = error.get("message")
    if isinstance(error, str) and error.strip():
        first = error.strip()
    first = redact(first)
    if len(first) > PROVIDER_MESSAGE_CHARS:
        first = first[: PROVIDER_MESSAGE_CHARS - 1] + "…"
    return f": {first}" if first else ""


def _usage_from_openai(raw: Any) -> Usage:
    prompt = int(getattr(raw, "prompt_tokens", 0) or 0)
    cached = 0
    details = getattr(raw, "prompt_tokens_details", None)
    if details is not None:
        cached = int(getattr(details, "cached_tokens", 0) or 0)
    return Usage(
        input_tokens=max(0, prompt - cached),
        cache_read_input_tokens=cached,
        output_tokens=int(getattr(raw, "completion_tokens", 0) or 0),
    )


def _stop_reason(finish_reason: str | None) -> str | None:
    """OpenAI-style finish reasons in Anthropic's vocabulary, so callers check one set."""
    return {"stop": "end_turn", "length": "max_tokens"}.get(finish_reason or "", finish_reason)


def _close(response: Any) -> None:
    closer = getattr(response, "close", None)
    if callable(closer):
        try:
            closer()
        except Exception as exc:  # best effort: the generator is being abandoned anyway
            log.debug("closing LiteLLM stream: %s", type(exc).__name__)
