"""Cancellable iteration: a stalled producer never holds the caller past the poll interval."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from engine.llm.base import ModelCancelled
from engine.llm.cancel import iterate_cancellable


def _slow(n: int, pause: float) -> Iterator[int]:
    for i in range(n):
        yield i
        time.sleep(pause)


def test_without_an_event_it_is_plain_iteration() -> None:
    assert list(iterate_cancellable(range(5), None)) == [0, 1, 2, 3, 4]


def test_items_and_errors_pass_through_in_order() -> None:
    def broken() -> Iterator[int]:
        yield 1
        raise ValueError("transport broke")

    seen: list[int] = []
    with pytest.raises(ValueError, match="transport broke"):
        for item in iterate_cancellable(broken(), threading.Event()):
            seen.append(item)
    assert seen == [1]


def test_cancel_during_a_stall_returns_within_the_poll_interval() -> None:
    cancel = threading.Event()
    seen: list[int] = []
    started = time.monotonic()
    with pytest.raises(ModelCancelled):
        for item in iterate_cancellable(_slow(3, 5.0), cancel):
            seen.append(item)
            threading.Timer(0.1, cancel.set).start()
    assert seen == [0] and time.monotonic() - started < 0.5
