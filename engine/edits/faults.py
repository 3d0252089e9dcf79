"""Test-only fault points inside the commit path, driven by ``SEMFORA_FAULT_POINT``.

The spec is ``[kill|enospc|sleep@]POINT[:N][,...]``: at the N-th time (default 1)
the named point is reached, the process SIGKILLs itself, raises ENOSPC or pauses
(to let a test start a second committer). Unset,
every point is a no-op; nothing else in semfora reads this variable.
"""

from __future__ import annotations

import errno
import os
import signal
import time

FAULT_ENV = "SEMFORA_FAULT_POINT"
# The points the writer passes, in commit order (docs/edits.md lists them).
POINTS: tuple[str, ...] = (
    "after_tmp",
    "after_journal",
    "after_backup",
    "after_replace",
    "after_fsync",
    "after_complete",
)
# How long the ``sleep`` action pauses: long enough for a second process to hit the lock.
FAULT_SLEEP_SECONDS = 2.0
_counts: dict[str, int] = {}


def _parse(spec: str) -> list[tuple[str, str, int]]:
    out: list[tuple[str, str, int]] = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            continue
        action, _, rest = item.rpartition("@")
        point, _, nth = rest.partition(":")
        out.append((action or "kill", point, int(nth) if nth.isdigit() else 1))
    return out


def fault_point(name: str) -> None:
    """Count a pass through ``name`` and fire the configured fault if this is the one."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    _counts[name] = _counts.get(name, 0) + 1
    for action, point, nth in _parse(spec):
        if point != name or _counts[name] != nth:
            continue
        if action == "enospc":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + f" (fault point {name}:{nth})")
        if action == "sleep":
            time.sleep(FAULT_SLEEP_SECONDS)
            continue
        os.kill(os.getpid(), signal.SIGKILL)


def reset_fault_counts() -> None:
    """Forget how often each point was passed (tests that reuse one process)."""
    _counts.clear()
