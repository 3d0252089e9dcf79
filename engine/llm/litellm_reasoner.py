"""Any non-Claude model (``ollama/qwen2.5-coder:7b``, ``openai/...``) through LiteLLM.

Owns the translation between our prompt blocks/messages and LiteLLM's OpenAI-style
streaming chunks, and maps its usage into ``Usage``. LiteLLM is imported lazily (it is
slow to import); ``ollama/`` models are sent to ``OLLAMA_HOST``. Never logs credentials.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator, Mapping
from typing import Any

from engine.config import Settings
from engine.llm.base import (
    Messages,
    ModelCancelled,
    ModelError,
    ModelStreamInterrupted,
    ModelUnavailable,
    StreamDone,
    StreamEvent,
    StreamingReasoner,
    SystemPrompt,
    TextDelta,
    Usage,
    as_blocks,
    compute_cost,
    price_for,
)
from engine.llm.cancel import iterate_cancellable
from engine.llm.ollama_client import normalise_host
from engine.llm.tokens import estimate_tokens

log = logging.getLogger("semfora.llm.litellm")

OLLAMA_PREFIXES = ("ollama/", "ollama_chat/")


class LiteLLMReasoner(StreamingReasoner):
    """A ``Reasoner`` for any LiteLLM model string; local models cost 0 unless priced in config."""

    def __init__(self, settings: Settings, *, model: str, environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        self.settings = settings
        self.model = model
        self.api_base: str | None = None
        if model.startswith(OLLAMA_PREFIXES):
            self.api_base = normalise_host(env.get("OLLAMA_HOST") or settings.ollama.host)
        self._price = price_for(settings.llm.prices, model)

    def __repr__(self) -> str:
        return f"LiteLLMReasoner(model={self.model!r})"

    def stream(
        self,
        system: SystemPrompt,
        messages: Messages,
        *,
        max_tokens: int | None = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[StreamEvent]:
        # Offline-first: use LiteLLM's bundled price map instead of fetching it at import.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm  # slow to import; only when a non-Claude model is really used

        litellm.suppress_debug_info = True  # its "Give Feedback" banner would land in our stdout
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
            "num_retries": self.settings.llm.max_retries,
            "stream_options": {"include_usage": True},
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if cancel is not None and cancel.is_set():
            raise ModelCancelled()
        try:
            response = litellm.completion(**kwargs)
        except Exception as exc:
            raise _map_error(litellm, self.model, exc) from exc

        parts: list[str] = []
        usage: Usage | None = None
        stop_reason: str | None = None
        try:
            for chunk in iterate_cancellable(response, cancel):
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
        yield StreamDone(usage, cost, self.model, _stop_reason(stop_reason))


def _stream_errors(litellm: Any) -> tuple[type[BaseException], ...]:
    """What a broken provider stream raises: LiteLLM's (OpenAI-style) errors or the transport's."""
    import httpx
    import openai  # a LiteLLM dependency; the base of all its exception classes

    return (openai.APIError, httpx.HTTPError, litellm.exceptions.APIError)


def _map_error(litellm: Any, model: str, exc: Exception) -> Exception:
    """LiteLLM's exception for a failed call as our typed error (unknown exceptions pass through)."""
    errors = litellm.exceptions
    if isinstance(exc, errors.AuthenticationError | errors.PermissionDeniedError):
        return ModelUnavailable(
            f"{model}: credentials rejected",
            code="MODEL_AUTH",
            hint="check the provider's API key variable, or use --model ollama/qwen2.5-coder:7b",
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
        return ModelError(f"{model}: {type(exc).__name__}", status=getattr(exc, "status_code", None))
    return exc


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
