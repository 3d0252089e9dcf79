"""When and how long to wait before retrying a model call.

Owns the backoff schedule (exponential with full jitter, bounded) and the reading
of ``retry-after`` / ``retry-after-ms`` headers. It never sleeps itself: callers
wait on their cancel event so a retry pause can be interrupted.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

# Status codes worth another try: timeouts, conflicts, rate limits, server trouble (529 = overloaded).
RETRYABLE_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True)
class RetryPolicy:
    """``max_retries`` extra attempts; the n-th waits ~``base_delay * 2**n`` (jittered), at most ``max_delay``."""

    max_retries: int = 4
    # Half a second first: long enough for a brief overload to clear, short enough to feel instant.
    base_delay: float = 0.5
    # Never pause longer than this between attempts, whatever the schedule says.
    max_delay: float = 8.0
    # A server's retry-after above this is not worth waiting for inside one turn.
    max_retry_after: float = 60.0

    def delay(
        self, attempt: int, retry_after: float | None = None, *, rng: random.Random | None = None
    ) -> float:
        """Seconds to wait before attempt ``attempt + 1`` (``attempt`` counts from 0).

        The server's ``retry-after`` is a floor: we never come back earlier than asked.
        """
        draw = (rng or random).uniform(0.5, 1.0)  # jitter keeps many clients from retrying in lockstep
        backoff = min(self.max_delay, self.base_delay * (2**attempt)) * draw
        if retry_after is not None:
            return max(min(retry_after, self.max_retry_after), backoff)
        return backoff


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds from ``retry-after-ms`` or ``retry-after`` (seconds, possibly fractional), if present."""
    if not headers:
        return None
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_ms = lowered.get("retry-after-ms")
    if raw_ms is not None:
        try:
            return max(0.0, float(raw_ms) / 1000.0)
        except ValueError:
            raw_ms = None
    raw = lowered.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw))
    except ValueError:
        return None  # an HTTP date: rare for this API; fall back to our own schedule
