"""Choosing the reasoner for a model string, and explaining why none can be used.

Owns the rule: a Claude model (``claude-*`` or ``anthropic/...``) goes to the Anthropic
API, anything else through LiteLLM. It checks only what is cheap and local (an API
key is set, a local Ollama answers) and never prints or logs credentials.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from engine.config import Settings
from engine.errors import ConfigError
from engine.llm.base import ModelUnavailable, Reasoner
from engine.services.ollama import OllamaClient, normalise_host

LOCAL_PROVIDERS = ("ollama/", "ollama_chat/")
# The key variables of LiteLLM providers that need exactly one key (any one of those listed): a model
# named with one of these prefixes and none of its variables set is refused here, before LiteLLM's
# import (seconds) and the pack, not after the first request. Checked against LiteLLM's own
# ``validate_environment`` by a test, so the table cannot drift from the installed LiteLLM.
PROVIDER_KEYS: dict[str, tuple[str, ...]] = {
    "openai/": ("OPENAI_API_KEY",),
    "gpt-": ("OPENAI_API_KEY",),  # LiteLLM serves a bare gpt-4o through OpenAI
    "gemini/": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    "mistral/": ("MISTRAL_API_KEY",),
    "codestral/": ("CODESTRAL_API_KEY",),
    "groq/": ("GROQ_API_KEY",),
    "deepseek/": ("DEEPSEEK_API_KEY",),
    "openrouter/": ("OPENROUTER_API_KEY",),
    "xai/": ("XAI_API_KEY",),
    "cohere/": ("COHERE_API_KEY",),
    "together_ai/": ("TOGETHERAI_API_KEY",),
    "fireworks_ai/": ("FIREWORKS_AI_API_KEY",),
    "perplexity/": ("PERPLEXITYAI_API_KEY",),
    "cerebras/": ("CEREBRAS_API_KEY",),
}


def is_claude_model(model: str) -> bool:
    return model.startswith("claude") or model.startswith("anthropic/")


def anthropic_base_url(env: Mapping[str, str]) -> str | None:
    """``ANTHROPIC_BASE_URL``, checked: a URL without ``http://`` or ``https://`` (``127.0.0.1:8080``)
    was retried five times as "could not connect" before the turn failed."""
    from urllib.parse import urlsplit

    raw = (env.get("ANTHROPIC_BASE_URL") or "").strip()
    if not raw:
        return None
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(
            f"ANTHROPIC_BASE_URL is {raw!r}, which is not an http:// or https:// URL",
            hint=f"write it with its scheme, e.g. ANTHROPIC_BASE_URL=http://{raw.split('://')[-1]}",
        )
    return raw


def resolve_model(settings: Settings, model: str | None = None) -> str:
    """``--model`` wins, then ``llm.model`` (which already carries ``SEMFORA_MODEL``)."""
    chosen = (model or settings.llm.model or "").strip()
    if not chosen:
        raise ModelUnavailable("no model configured")
    return chosen


def missing_provider_key(model: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The key variables of ``model``'s provider when none of them is set (``PROVIDER_KEYS``), else ()."""
    for prefix, names in PROVIDER_KEYS.items():
        if model.startswith(prefix):
            return () if any(env.get(n, "").strip() for n in names) else names
    return ()


def make_reasoner(
    settings: Settings, model: str | None = None, *, environ: Mapping[str, str] | None = None
) -> Reasoner:
    """The reasoner for ``model`` (default: the configured one).

    Raises ``ModelUnavailable`` (exit 3) when a Claude model has no ``ANTHROPIC_API_KEY``,
    an ``ollama/`` model's server does not answer, or LiteLLM cannot tell which provider
    serves the model (``MODEL_NOT_FOUND``); ``ConfigError`` (exit 2) when ``ANTHROPIC_BASE_URL``
    is not an http(s) URL.
    """
    env = os.environ if environ is None else environ
    chosen = resolve_model(settings, model)
    if is_claude_model(chosen):
        key = env.get("ANTHROPIC_API_KEY", "").strip()
        if not key:
            raise ModelUnavailable(f"no API key for {chosen}: ANTHROPIC_API_KEY is not set")
        from engine.llm.anthropic_reasoner import AnthropicReasoner

        return AnthropicReasoner(
            settings,
            model=chosen.removeprefix("anthropic/"),
            api_key=key,
            base_url=anthropic_base_url(env),
        )
    if chosen.startswith(LOCAL_PROVIDERS):
        host = normalise_host(settings.ollama.host)  # carries OLLAMA_HOST (engine.config)
        with OllamaClient(host, timeout=settings.ollama.timeout) as client:
            if not client.available():
                local = chosen.split("/", 1)[1] if "/" in chosen else chosen
                raise ModelUnavailable(
                    f"{chosen} needs Ollama, which is not reachable at {host}",
                    hint=f"start Ollama (`ollama serve`, then `ollama pull {local}`), set OLLAMA_HOST if it "
                    "runs elsewhere, or set ANTHROPIC_API_KEY and choose a Claude model",
                )
    missing = missing_provider_key(chosen, env)
    if missing:
        raise ModelUnavailable(
            f"{chosen}: no credentials: set {' or '.join(missing)}",
            code="MODEL_AUTH",
            hint="or use a local model with --model ollama/qwen2.5-coder:7b",
        )
    from engine.llm.litellm_reasoner import LiteLLMReasoner, check_provider

    if not chosen.startswith(LOCAL_PROVIDERS):
        check_provider(chosen)

    return LiteLLMReasoner(settings, model=chosen)


def describe_model_status(
    settings: Settings, model: str | None = None, *, environ: Mapping[str, str] | None = None
) -> str:
    """One line for status bars, ``doctor`` and "no model configured" messages. Never shows a key."""
    env = os.environ if environ is None else environ
    chosen = (model or settings.llm.model or "").strip()
    if not chosen:
        return "no model configured: set llm.model, SEMFORA_MODEL or --model"
    if is_claude_model(chosen):
        base = env.get("ANTHROPIC_BASE_URL") or "api.anthropic.com"
        if env.get("ANTHROPIC_API_KEY", "").strip():
            return f"{chosen} via the Anthropic API at {base} (API key set)"
        return (
            f"{chosen} is configured but ANTHROPIC_API_KEY is not set; set it, or use a local model "
            "with --model ollama/qwen2.5-coder:7b"
        )
    if chosen.startswith(LOCAL_PROVIDERS):
        host = normalise_host(settings.ollama.host)
        return f"{chosen} via LiteLLM and Ollama at {host}"
    missing = missing_provider_key(chosen, env)
    if missing:
        return f"{chosen} is configured but {' or '.join(missing)} is not set"
    return f"{chosen} via LiteLLM (provider credentials come from its usual environment variables)"
