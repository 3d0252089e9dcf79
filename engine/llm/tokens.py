"""Token counting: an optional exact count, falling back to the one estimate (``engine.tokens``).

``engine.tokens.estimate_tokens`` (chars/4, rounded up) is what budgets are built on. ``TokenCounter``
asks Anthropic's count_tokens endpoint only when ``llm.exact_token_count`` is on and
the API answers; otherwise it returns the estimate. It never sends secrets or logs keys.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections import OrderedDict
from typing import Any

from engine.config import Settings
from engine.policy.redaction import redact
from engine.tokens import estimate_tokens

log = logging.getLogger("semfora.llm.tokens")

# Exact counts remembered per text hash, so a budget re-fit does not call the API again.
EXACT_CACHE_SIZE = 4096
# After the count endpoint fails, use the estimate for this long before trying again.
EXACT_RETRY_AFTER_SECONDS = 60.0
# count_tokens bills a few tokens of message framing for an empty user turn; subtract it back out.
EXACT_FRAMING_TOKENS = 7


class TokenCounter:
    """Counts tokens exactly through the Anthropic API when enabled and online, else estimates."""

    def __init__(
        self, settings: Settings, *, api_key: str | None = None, base_url: str | None = None
    ) -> None:
        self.settings = settings
        self._api_key = api_key if api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._base_url = base_url if base_url is not None else os.environ.get("ANTHROPIC_BASE_URL")
        self._client: Any = None
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()
        self._down_until = 0.0

    @property
    def exact_enabled(self) -> bool:
        model = self.settings.llm.model
        is_claude = model.startswith("claude") or model.startswith("anthropic/")
        return bool(self.settings.llm.exact_token_count and self._api_key and is_claude)

    def count(self, text: str) -> int:
        """Tokens in ``text``; exact when possible, the chars/4 estimate otherwise."""
        if not text or not self.exact_enabled or time.monotonic() < self._down_until:
            return estimate_tokens(text)
        key = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        exact = self._count_remote(text)
        if exact is None:
            return estimate_tokens(text)
        with self._lock:
            self._cache[key] = exact
            while len(self._cache) > EXACT_CACHE_SIZE:
                self._cache.popitem(last=False)
        return exact

    def _count_remote(self, text: str) -> int | None:
        import anthropic  # heavy; only when exact counting is really used

        try:
            if self._client is None:
                self._client = anthropic.Anthropic(
                    api_key=self._api_key,
                    base_url=self._base_url or None,
                    max_retries=0,
                    timeout=anthropic.Timeout(
                        self.settings.llm.connect_timeout, connect=self.settings.llm.connect_timeout
                    ),
                )
            model = self.settings.llm.model.removeprefix("anthropic/")
            result = self._client.messages.count_tokens(
                model=model, messages=[{"role": "user", "content": redact(text)}]
            )
        except anthropic.APIError as exc:
            log.warning(
                "exact token count unavailable (%s); using chars/4 for %.0fs",
                type(exc).__name__,
                EXACT_RETRY_AFTER_SECONDS,
            )
            self._down_until = time.monotonic() + EXACT_RETRY_AFTER_SECONDS
            return None
        return max(0, int(result.input_tokens) - EXACT_FRAMING_TOKENS)
