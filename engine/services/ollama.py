"""A tiny, shared HTTP client for the Ollama API with timeouts and a circuit breaker.

Owns the calls to ``/api/tags``, ``/api/generate``, ``/api/chat`` and ``/api/embed`` at
``OLLAMA_HOST``, and remembers per host that the service is down so no caller waits
on a dead Ollama twice within the cool-down. It knows nothing about summaries or search.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

from engine.errors import SemforaError, ServiceUnavailable
from engine.policy.redaction import redact_json

log = logging.getLogger("semfora.llm.ollama")

DEFAULT_HOST = "http://127.0.0.1:11434"
# After a connection failure or timeout, skip the service for this long (a turn never waits twice).
BREAKER_COOLDOWN_SECONDS = 60.0
# Connecting to a local daemon is instant when it is up; cap the connect wait below any call timeout.
MAX_CONNECT_SECONDS = 1.0


class OllamaUnavailable(ServiceUnavailable):
    """Ollama is not reachable, too slow, or recently failed (the breaker is open) (exit 3)."""

    code = "OLLAMA_UNAVAILABLE"

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(
            message,
            hint=hint
            or "start Ollama (ollama serve) or point OLLAMA_HOST at it; semfora falls back where it can",
        )


class OllamaError(SemforaError):
    """Ollama answered, but with an error (unknown model, bad request) (exit 1)."""

    code = "OLLAMA_ERROR"


class CircuitBreaker:
    """Open for ``cooldown`` seconds after a failure; closed again by a success or when the time passes."""

    def __init__(
        self, cooldown: float = BREAKER_COOLDOWN_SECONDS, *, clock: Callable[[], float] = time.monotonic
    ):
        self.cooldown = cooldown
        self._clock = clock
        self._open_until = 0.0
        self._reason = ""
        self._lock = threading.Lock()

    def allow(self) -> bool:
        with self._lock:
            return self._clock() >= self._open_until

    @property
    def reason(self) -> str:
        return self._reason

    def record_failure(self, reason: str) -> None:
        with self._lock:
            self._open_until = self._clock() + self.cooldown
            self._reason = reason

    def record_success(self) -> None:
        with self._lock:
            self._open_until = 0.0
            self._reason = ""

    def reset(self) -> None:
        self.record_success()


_BREAKERS: dict[str, CircuitBreaker] = {}
_BREAKERS_LOCK = threading.Lock()


def breaker_for(host: str) -> CircuitBreaker:
    """The process-wide breaker of one Ollama host, shared by every client of that host."""
    key = normalise_host(host)
    with _BREAKERS_LOCK:
        if key not in _BREAKERS:
            _BREAKERS[key] = CircuitBreaker()
        return _BREAKERS[key]


def reset_breakers() -> None:
    """Forget every host's failures (tests use this so one test's dead service does not leak)."""
    with _BREAKERS_LOCK:
        _BREAKERS.clear()


def normalise_host(host: str | None) -> str:
    """``ollama.host`` forms (``host:port``, ``0.0.0.0``, trailing slash) as a base URL.

    The host comes from ``Settings.ollama.host`` (which carries ``OLLAMA_HOST``: only
    ``engine.config`` reads the environment); None or "" means the default local server.
    """
    raw = (host or DEFAULT_HOST).strip().rstrip("/")
    if "://" not in raw:
        raw = "http://" + raw
    scheme, rest = raw.split("://", 1)
    if rest.startswith("0.0.0.0"):
        rest = "127.0.0.1" + rest[len("0.0.0.0") :]
    if ":" not in rest.split("/", 1)[0]:
        rest = rest.split("/", 1)[0] + ":11434" + ("/" + rest.split("/", 1)[1] if "/" in rest else "")
    return f"{scheme}://{rest}"


class OllamaClient:
    """Synchronous Ollama calls; every failure is ``OllamaUnavailable`` or ``OllamaError``.

    ``timeout`` bounds each call (connect is capped at ``MAX_CONNECT_SECONDS``). Connection
    failures and timeouts open the host's breaker; while it is open calls fail at once.
    """

    def __init__(
        self, host: str | None = None, timeout: float = 3.0, *, breaker: CircuitBreaker | None = None
    ):
        self.host = normalise_host(host)
        self.timeout = timeout
        self.breaker = breaker or breaker_for(self.host)
        self._client: httpx.Client | None = None

    @property
    def _http(self) -> httpx.Client:
        # httpx costs ~150 ms to import: only pay it when Ollama is actually called.
        if self._client is None:
            import httpx

            self._client = httpx.Client(
                base_url=self.host, timeout=self._timeout(self.timeout), trust_env=False
            )
        return self._client

    @staticmethod
    def _timeout(seconds: float) -> httpx.Timeout:
        import httpx

        return httpx.Timeout(seconds, connect=min(seconds, MAX_CONNECT_SECONDS))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()

    def __enter__(self) -> OllamaClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _request(self, method: str, path: str, payload: dict[str, Any] | None, timeout: float | None) -> Any:
        import httpx

        if not self.breaker.allow():
            raise OllamaUnavailable(
                f"Ollama at {self.host} recently failed ({self.breaker.reason}); skipping"
            )
        try:
            response = self._http.request(
                method,
                path,
                json=redact_json(payload),  # summaries, embeddings, rerank: never a secret
                timeout=self._timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
            )
        except httpx.TimeoutException as exc:
            self.breaker.record_failure("timed out")
            raise OllamaUnavailable(f"Ollama at {self.host} did not answer {path} in time") from exc
        except httpx.TransportError as exc:
            self.breaker.record_failure(type(exc).__name__)
            raise OllamaUnavailable(f"Ollama is not reachable at {self.host}") from exc
        if response.status_code >= 500:
            self.breaker.record_failure(f"HTTP {response.status_code}")
            raise OllamaUnavailable(f"Ollama at {self.host} failed on {path}: HTTP {response.status_code}")
        self.breaker.record_success()
        try:
            data = response.json()
        except ValueError as exc:
            raise OllamaError(f"Ollama sent a non-JSON answer to {path}") from exc
        if response.status_code >= 400:
            message = data.get("error") if isinstance(data, dict) else None
            raise OllamaError(f"Ollama {path}: {message or 'HTTP ' + str(response.status_code)}")
        return data

    def available(self) -> bool:
        """True when Ollama answers ``/api/tags`` (False at once while the breaker is open)."""
        try:
            self.tags()
        except (OllamaUnavailable, OllamaError):
            return False
        return True

    def tags(self) -> list[str]:
        """Names of the installed models (``qwen2.5-coder:1.5b``, ...)."""
        data = self._request("GET", "/api/tags", None, None)
        return [str(m.get("name") or m.get("model")) for m in data.get("models", [])]

    def has_model(self, model: str) -> bool:
        """Whether ``model`` is installed; a name without a tag matches ``:latest``."""
        names = set(self.tags())
        return model in names or (":" not in model and f"{model}:latest" in names)

    def generate(
        self,
        model: str,
        prompt: str,
        *,
        system: str | None = None,
        options: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str:
        """One non-streamed completion from ``/api/generate``; returns the response text."""
        payload: dict[str, Any] = {"model": model, "prompt": prompt, "stream": False}
        if system:
            payload["system"] = system
        if options:
            payload["options"] = options
        data = self._request("POST", "/api/generate", payload, timeout)
        return str(data.get("response", ""))

    def chat(
        self,
        model: str,
        messages: list[dict[str, str]],
        *,
        options: dict[str, Any] | None = None,
        timeout: float | None = None,
    ) -> str:
        """One non-streamed chat reply from ``/api/chat``; returns the assistant's content."""
        payload: dict[str, Any] = {"model": model, "messages": messages, "stream": False}
        if options:
            payload["options"] = options
        data = self._request("POST", "/api/chat", payload, timeout)
        return str((data.get("message") or {}).get("content", ""))

    def embed(self, model: str, texts: list[str], *, timeout: float | None = None) -> list[list[float]]:
        """Embeddings for ``texts`` from ``/api/embed``, one vector per text, in order."""
        if not texts:
            return []
        data = self._request("POST", "/api/embed", {"model": model, "input": texts}, timeout)
        vectors = data.get("embeddings")
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise OllamaError(
                f"Ollama /api/embed returned {len(vectors or [])} vectors for {len(texts)} texts"
            )
        return [[float(x) for x in vec] for vec in vectors]
