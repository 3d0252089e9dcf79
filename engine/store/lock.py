"""The index's single-writer lock (``index.lock`` in the repository's cache directory).

Owns ``writer_lock``: the indexer holds it while it writes ``index.db``, and the store takes it
before rebuilding a damaged ``index.db``; ``writer_busy`` tells readers that a writer is at
work. Its own module so the store and the indexer above it share it without importing each
other. Must not open databases.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from engine import flock
from engine.errors import LockBusy
from engine.repo.layout import RepoLayout

LOCK_FILE = "index.lock"


@contextmanager
def writer_lock(
    layout: RepoLayout,
    timeout: float,
    *,
    on_wait: Callable[[], None] | None = None,
    cancel: threading.Event | None = None,
) -> Iterator[None]:
    """Hold ``index.lock`` exclusively; wait up to ``timeout`` seconds, then raise LockBusy.

    ``on_wait`` hears, before the wait begins, that another process holds the lock: a second
    `semfora index` otherwise sat silent for as long as the first one took. ``cancel`` ends the
    wait early (LockBusy): the app quitting while another process indexed waited out the timeout.
    """
    path = layout.ensure_cache_dir() / LOCK_FILE
    fd = flock.acquire(path, 0) if on_wait is not None else None
    if fd is None:
        if on_wait is not None and timeout > 0:
            on_wait()
        fd = flock.acquire(path, timeout, cancel=cancel)
    if fd is None and cancel is not None and cancel.is_set():
        raise LockBusy(
            "stopped waiting for another `semfora index` to finish writing this repository's index",
            code="INDEX_LOCKED",
        )
    if fd is None:
        raise LockBusy(
            "another `semfora index` is writing this repository's index",
            code="INDEX_LOCKED",
            hint=f"waited {timeout:g}s; try again when it finishes",
        )
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def writer_busy(layout: RepoLayout) -> str | None:
    """Who is writing the index right now (``another semfora process (pid 123)``), or None
    (``flock.holder``: a probe that never takes the lock)."""
    pid = flock.holder(layout.cache_dir / LOCK_FILE)
    if pid is None:
        return None
    return f"another semfora process (pid {pid})" if pid else "another semfora process"
