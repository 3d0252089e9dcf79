"""Cancellable iteration over a blocking stream, and the turn's stop signal.

Owns the one trick every reasoner needs: a reader thread feeds a queue so that the
consumer can notice a cancel event within ``CANCEL_POLL_SECONDS`` even while the
network read is stalled; ``call_cancellable`` does the same for one blocking call.
``TurnStop`` is the user's cancel event or the turn's deadline, whichever comes first.
It knows nothing about any model API.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from engine.llm.base import ModelCancelled

T = TypeVar("T")

# How often the consumer looks at the cancel event; bounds how late a cancel is noticed.
CANCEL_POLL_SECONDS = 0.05

_END = object()


class StopSignal(Protocol):
    """What the helpers below poll: a ``threading.Event`` or a ``TurnStop``."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class TurnStop:
    """Set when the user cancels or when the turn's deadline (``time.monotonic()``) passes.

    Quacks like a ``threading.Event`` for ``is_set`` and ``wait``, so every cancellable wait
    of a reasoner also ends at the deadline; ``expired`` then tells a timeout from a cancel.
    """

    def __init__(self, cancel: threading.Event | None, deadline: float | None) -> None:
        self.cancel = cancel
        self.deadline = deadline

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    def expired(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    def is_set(self) -> bool:
        return self.cancelled or self.expired()

    def wait(self, timeout: float | None = None) -> bool:
        end = None if timeout is None else time.monotonic() + timeout
        while not self.is_set():
            left = CANCEL_POLL_SECONDS if end is None else min(CANCEL_POLL_SECONDS, end - time.monotonic())
            if left <= 0:
                return False
            if self.cancel is not None:
                self.cancel.wait(left)
            else:
                time.sleep(left)
        return True


def call_cancellable(fn: Callable[[], T], stop: StopSignal | None, on_abandon: Callable[[T], None]) -> T:
    """``fn()`` in a helper thread; raise ``ModelCancelled`` soon after ``stop`` is set.

    A blocking request (waiting for response headers from an endpoint that never answers) cannot
    be interrupted; it is abandoned instead, and ``on_abandon`` gets its late result (to close it).
    """
    if stop is None:
        return fn()
    if stop.is_set():
        raise ModelCancelled()
    box: dict[str, object] = {}
    done = threading.Event()
    lock = threading.Lock()

    def run() -> None:
        try:
            result = fn()
        except BaseException as exc:  # handed over to the waiting thread, which re-raises it
            with lock:
                box["error"] = exc
                done.set()
            return
        with lock:
            if box.get("abandoned"):
                late = True
            else:
                box["result"], late = result, False
            done.set()
        if late:
            on_abandon(result)

    threading.Thread(target=run, name="semfora-model-call", daemon=True).start()
    while not done.wait(CANCEL_POLL_SECONDS):
        if stop.is_set():
            with lock:
                if not done.is_set():
                    box["abandoned"] = True
                    raise ModelCancelled()
            break
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["result"]  # type: ignore[return-value]


def iterate_cancellable(items: Iterable[T], cancel: StopSignal | None) -> Iterator[T]:
    """Yield from ``items``; raise ``ModelCancelled`` soon after ``cancel`` is set.

    Without an event this is plain iteration. With one, a daemon thread reads ``items``;
    on cancel the caller should close the underlying stream, which ends that thread's read.
    """
    if cancel is None:
        yield from items
        return
    if cancel.is_set():
        raise ModelCancelled()
    handoff: queue.Queue[object] = queue.Queue()
    abandoned = threading.Event()

    def read() -> None:
        try:
            for item in items:
                if abandoned.is_set():
                    return
                handoff.put(item)
            handoff.put(_END)
        except BaseException as exc:  # handed over to the consumer thread, which re-raises it
            handoff.put(exc)

    threading.Thread(target=read, name="semfora-model-stream", daemon=True).start()
    try:
        while True:
            try:
                item = handoff.get(timeout=CANCEL_POLL_SECONDS)
            except queue.Empty:
                if cancel.is_set():
                    raise ModelCancelled() from None
                continue
            if cancel.is_set():
                raise ModelCancelled()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        abandoned.set()
