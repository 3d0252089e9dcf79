"""The per-repository edit lock that serialises commits, undos and recovery.

An ``fcntl.flock`` on ``edits/commit.lock``, re-entrant inside one process, with
a timeout after which ``LockBusy`` names the holder. The kernel drops the lock
when a process dies, so a killed committer never blocks anyone.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from engine import flock
from engine.errors import LockBusy


class _Held:
    def __init__(self) -> None:
        self.rlock = threading.RLock()
        self.fd: int | None = None
        self.depth = 0


_registry: dict[str, _Held] = {}
_registry_guard = threading.Lock()


def _holder(path: Path) -> str:
    pid = flock.holder_pid(path)
    return f"pid {pid}" if pid else "another process"


@contextmanager
def edit_lock(edits_dir: Path, *, timeout: float) -> Iterator[None]:
    """Hold the repository's edit lock; wait up to ``timeout`` seconds, then raise LockBusy."""
    path = edits_dir / "commit.lock"
    with _registry_guard:
        held = _registry.setdefault(str(path), _Held())
    if not held.rlock.acquire(timeout=max(timeout, 0.0)):
        raise LockBusy("another thread of this process is committing edits", hint="try again in a moment")
    try:
        if held.depth == 0:
            fd = flock.acquire(path, timeout)
            if fd is None:
                raise LockBusy(
                    f"another semfora process ({_holder(path)}) is committing edits in this repository; "
                    f"waited {timeout:g}s",
                    hint="retry when it finishes, or raise edits.lock_timeout",
                )
            held.fd = fd
        held.depth += 1
        try:
            yield
        finally:
            held.depth -= 1
            if held.depth == 0 and held.fd is not None:
                flock.release(held.fd)
                held.fd = None
    finally:
        held.rlock.release()
