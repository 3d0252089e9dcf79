"""Exclusive advisory file locks with a wait limit: the one mechanism behind the index
writer lock and the edit lock.

Owns taking ``fcntl.flock`` on a lock file (polling until a deadline), recording the holder
in it (``PID STARTTIME HOST``), and taking over a lock whose recorded holder is dead: forked
children inherit the descriptor, so orphans of a killed semfora would otherwise hold it
forever. The takeover replaces the lock file (a new inode the orphans do not hold) under a
short guard lock, after checking again. It raises nothing of its own: each caller says what
was busy.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import threading
import time
from pathlib import Path

log = logging.getLogger("semfora.flock")

# Polling interval while another process holds the lock; short enough to feel instant.
POLL_SECONDS = 0.05
# How long a takeover waits for another process's takeover of the same lock.
TAKEOVER_GUARD_SECONDS = 5.0


def _start_time(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks after boot), or None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def _identity() -> str:
    pid = os.getpid()
    return f"{pid} {_start_time(pid) or '-'} {socket.gethostname()}"


def holder_pid(path: Path) -> str:
    """The pid recorded in a lock file, for messages ("" when none is recorded)."""
    try:
        text = path.read_text(encoding="ascii", errors="replace").split()
    except OSError:
        return ""
    return text[0] if text else ""


def _holder_is_dead(record: str) -> bool:
    """True only when the recorded holder surely is gone (same host, no such process now)."""
    parts = record.split()
    if len(parts) < 1 or not parts[0].isdigit():
        return False  # nothing recorded yet (a holder between lock and write): wait
    pid = int(parts[0])
    if len(parts) >= 3 and parts[2] != socket.gethostname():
        return False  # another machine or container sharing the cache: never steal
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by someone else
    started = parts[1] if len(parts) >= 2 else "-"
    return started != "-" and _start_time(pid) not in (None, started)  # the pid was reused


def _read_record(fd: int) -> str:
    try:
        return os.pread(fd, 256, 0).decode("ascii", errors="replace").strip()
    except OSError:
        return ""


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _take_over(path: Path, stale: str) -> bool:
    """Replace ``path`` when it is still held under the dead holder ``stale``; True if now free."""
    guard = os.open(f"{path}.takeover", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + TAKEOVER_GUARD_SECONDS
        while True:
            try:
                fcntl.flock(guard, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(POLL_SECONDS)
        try:
            fd = os.open(path, os.O_RDWR)
        except FileNotFoundError:
            return True
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True  # freed meanwhile: no need to replace anything
            except BlockingIOError:
                pass
            if _read_record(fd) != stale:
                return False  # someone took it (or took it over) since we looked
        finally:
            os.close(fd)
        fresh = path.with_name(f"{path.name}.{os.getpid()}.new")
        os.close(os.open(fresh, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
        os.replace(fresh, path)
        log.warning(
            "%s was held by process %s, which is gone (its child processes kept the lock); taken over",
            path,
            stale.split()[0],
        )
        return True
    finally:
        os.close(guard)


def acquire(path: Path, timeout: float, *, cancel: threading.Event | None = None) -> int | None:
    """Open ``path`` and lock it exclusively, waiting up to ``timeout`` seconds.

    Returns the open descriptor holding the lock (the caller closes it to release), with this
    process recorded in the file, or None when another live process kept it that long, or
    once ``cancel`` is set (the wait is given up). A lock whose recorded holder is dead is
    taken over at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            record = _read_record(fd)
            os.close(fd)
            if _holder_is_dead(record) and _take_over(path, record):
                continue
            if time.monotonic() >= deadline or (cancel is not None and cancel.is_set()):
                return None
            time.sleep(POLL_SECONDS)
            continue
        if not _same_file(fd, path):
            os.close(fd)  # the file was replaced by a takeover while we locked the old one
            continue
        os.ftruncate(fd, 0)
        os.pwrite(fd, _identity().encode("ascii", errors="replace"), 0)
        return fd


def holder(path: Path) -> str | None:
    """Who holds the lock on ``path`` now: the recorded pid (``""`` when none is recorded), or
    None when nobody does, or only a dead holder's orphans do (the next ``acquire`` takes over).

    A probe, not a lock: a shared, non-blocking flock taken and dropped at once, on a descriptor
    opened read-only, so the lock file is never rewritten and a writer starting meanwhile only
    retries (``acquire`` polls).
    """
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None  # never locked here, or unreadable: nobody we can see
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        record = _read_record(fd)
        return None if _holder_is_dead(record) else (record.split() or [""])[0]
    except OSError:
        return None
    finally:
        os.close(fd)  # closing it drops the probe's shared lock
    return None


def release(fd: int) -> None:
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
