"""The index's single-writer lock (``index.lock`` in the repository's cache directory).

Owns ``writer_lock``: the indexer holds it while it writes ``index.db``, and the store takes it
before rebuilding a damaged ``index.db``. Its own module so the store and the indexer above it
share it without importing each other. Must not open databases.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from engine import flock
from engine.errors import LockBusy
from engine.repo.layout import RepoLayout

LOCK_FILE = "index.lock"


@contextmanager
def writer_lock(layout: RepoLayout, timeout: float) -> Iterator[None]:
    """Hold ``index.lock`` exclusively; wait up to ``timeout`` seconds, then raise LockBusy."""
    fd = flock.acquire(layout.cache_dir / LOCK_FILE, timeout)
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
