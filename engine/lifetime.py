"""Child processes that never outlive semfora.

Owns ``die_with_parent``, the initializer every worker pool passes: on Linux it asks the
kernel (``prctl(PR_SET_PDEATHSIG)``) to SIGKILL the worker when its parent dies, so a killed
`semfora index` leaves no worker behind holding ``index.lock`` and a pipe. Elsewhere it is a
no-op. It starts and stops nothing itself.
"""

from __future__ import annotations

import os
import signal
import sys

# From <linux/prctl.h>: deliver a signal to this process when its parent thread exits.
PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: int | None = None) -> None:
    """Make the calling (worker) process get SIGKILL when its parent dies.

    ``expected_parent`` is the pid that forked it (a fork pool passes its own pid); if that
    parent is already gone when this runs, the worker exits at once (the kernel would never
    signal it). A forkserver pool passes nothing: its workers' parent is the forkserver, which
    itself exits when semfora does.
    """
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError):
            return  # no prctl here: the lock takeover in engine.flock still covers a stale lock
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(0)  # the parent died before the request above took effect
