"""Cancellable iteration over a blocking stream.

Owns the one trick every reasoner needs: a reader thread feeds a queue so that the
consumer can notice a cancel event within ``CANCEL_POLL_SECONDS`` even while the
network read is stalled. It knows nothing about any model API.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

from engine.llm.base import ModelCancelled

T = TypeVar("T")

# How often the consumer looks at the cancel event; bounds how late a cancel is noticed.
CANCEL_POLL_SECONDS = 0.05

_END = object()


def iterate_cancellable(items: Iterable[T], cancel: threading.Event | None) -> Iterator[T]:
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
