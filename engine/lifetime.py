"""Child processes that never outlive semfora.

Owns ``die_with_parent``, the initializer every worker pool passes: on Linux it asks the
kernel (``prctl(PR_SET_PDEATHSIG)``) to SIGKILL the worker when its parent dies, so a killed
`semfora index` leaves no worker behind holding ``index.lock`` and a pipe. A forkserver's
worker also watches semfora itself (its parent is the forkserver, which outlives semfora while
any worker lives). Elsewhere it is a no-op. It starts and stops no process itself.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time

# From <linux/prctl.h>: deliver a signal to this process when its parent thread exits.
PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: int | None = None, owner: int | None = None) -> None:
    """Make the calling (worker) process get SIGKILL when its parent dies.

    ``expected_parent`` is the pid that forked it (a fork pool passes its own pid); if that
    parent is already gone when this runs, the worker exits at once (the kernel would never
    signal it). A forkserver pool passes ``owner``, semfora's pid, instead: its workers' parent
    is the forkserver, and the forkserver only exits once every worker has (each holds its
    "alive" pipe), so a killed `semfora mcp` or app left the forkserver and its workers behind
    for good; the worker exits when ``owner`` does.
    """
    if owner is not None:
        _exit_with(owner)
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            return  # no prctl here: the lock takeover in engine.flock still covers a stale lock
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(0)  # the parent died before the request above took effect


def _exit_with(owner: int) -> None:
    """Exit this process as soon as process ``owner`` has exited (a daemon thread waits on a
    pidfd; without pidfd support, a check every ``OWNER_POLL_S`` seconds)."""
    try:
        fd: int | None = os.pidfd_open(owner)
    except ProcessLookupError:
        os._exit(0)  # semfora died before this worker started
    except (AttributeError, OSError):  # no pidfd_open here (not Linux 5.3+)
        fd = None

    def watch() -> None:
        if fd is not None:
            select.select([fd], [], [])  # readable once the process has exited
        else:
            while _alive(owner):
                time.sleep(OWNER_POLL_S)
        os._exit(0)

    threading.Thread(target=watch, name=OWNER_WATCH_THREAD, daemon=True).start()


# The watcher's thread name. It only waits in ``select`` (its imports are done at module load, so
# it never holds the import lock), which makes forking beside it safe: see ``may_fork``.
OWNER_WATCH_THREAD = "semfora-owner-watch"


def may_fork() -> bool:
    """Whether this process may fork: no thread runs but the calling one and owner watchers.

    Forking copies locks other threads hold; an owner watcher holds none. A process the app starts
    to index (engine.index.child) watches the app this way and still forks its own workers.
    """
    current = threading.current_thread()
    return all(t is current or t.name == OWNER_WATCH_THREAD for t in threading.enumerate())


# Without a pidfd, how often a forkserver's worker checks that semfora still runs.
OWNER_POLL_S = 1.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
