"""What a running turn hands to the UI thread: reply text and status lines, in order.

The turn's worker thread appends; the UI drains on a timer (20 times a second), so
5,000 tokens never mean 5,000 UI calls. Text and status share one queue because their
order matters: a retry notice belongs after the reply it retries. It must not import textual.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Status:
    """A "what is happening now" line from the orchestrator's ``on_status`` (COMMON contract 2)."""

    message: str


@dataclass(frozen=True)
class Phase:
    """What the turn waits for now (the spinner's words); not kept in the reply."""

    message: str


FeedItem = str | Status | Phase


class TurnFeed:
    """A thread-safe, ordered buffer of reply text and status lines for one turn."""

    def __init__(self) -> None:
        self._items: list[FeedItem] = []
        self._lock = threading.Lock()

    def text(self, chunk: str) -> None:
        if not chunk:
            return
        with self._lock:
            if self._items and isinstance(self._items[-1], str):
                self._items[-1] += chunk
            else:
                self._items.append(chunk)

    def status(self, message: str) -> None:
        with self._lock:
            self._items.append(Status(message))

    def phase(self, message: str) -> None:
        with self._lock:
            self._items.append(Phase(message))

    def drain(self) -> list[FeedItem]:
        with self._lock:
            items, self._items = self._items, []
        return items
