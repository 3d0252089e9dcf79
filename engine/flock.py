"""Exclusive advisory file locks with a wait limit: the one mechanism behind the index
writer lock and the edit lock.

Owns taking ``fcntl.flock`` on a lock file (polling until a deadline) and recording the
holder's pid in it. It raises nothing of its own: each caller says what was busy. The
kernel drops the lock when the holding process dies or closes the descriptor.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

# Polling interval while another process holds the lock; short enough to feel instant.
POLL_SECONDS = 0.05


def acquire(path: Path, timeout: float) -> int | None:
    """Open ``path`` and lock it exclusively, waiting up to ``timeout`` seconds.

    Returns the open descriptor holding the lock (the caller closes it to release), with this
    process's pid written into the file, or None when another process kept it that long.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(POLL_SECONDS)
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode("ascii"))
    return fd


def release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
