"""A killed `semfora index` leaves no orphan and no stale lock (issue 13, item 2).

Its parse workers used to survive a SIGKILL of the parent, blocked on a pipe and holding
the inherited `index.lock`, so every later `index` and search failed with INDEX_LOCKED until
someone killed them by hand. Workers now die with their parent, and a lock whose recorded
holder is dead is taken over.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from engine.repo.layout import RepoLayout
from tests.conftest import ROOT, SEMFORA, run_semfora


def _children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found |= {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is dead, waiting for its reaper


def _wait_until(condition, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


def _big_repo(make_repo) -> Path:
    files = {
        f"pkg/m{i:03d}.py": "".join(f"def f{i}_{j}(x):\n    return g{j}(x) + {j}\n\n" for j in range(60))
        for i in range(400)
    }
    return make_repo(files, commit=False)


def test_killing_index_kills_its_workers_and_the_next_index_runs(make_repo) -> None:
    root = _big_repo(make_repo)
    env = {**os.environ, "SEMFORA_INDEX__WORKERS": "2", "SEMFORA_INDEX__LOCK_TIMEOUT": "20"}
    proc = subprocess.Popen([SEMFORA, "index", "--no-vectors", "--path", str(root)], env=env)
    try:
        assert _wait_until(lambda: len(_children(proc.pid)) >= 2, 60), "the indexer started no workers"
        workers = _children(proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    try:
        assert _wait_until(lambda: not any(_alive(w) for w in workers), 10), "workers outlived their parent"
    finally:
        for orphan in (w for w in workers if _alive(w)):
            os.kill(orphan, signal.SIGKILL)  # never leave them behind, even when the test fails
    started = time.monotonic()
    again = run_semfora(
        "index", "--no-vectors", "--path", str(root), "--json", env={"SEMFORA_INDEX__LOCK_TIMEOUT": "20"}
    )
    assert again.returncode == 0, again.stderr
    assert time.monotonic() - started < 15  # it never waited out the lock


HOLDER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from engine import flock

    fd = flock.acquire(Path(sys.argv[1]), 5)
    assert fd is not None
    if os.fork() == 0:  # the orphan: inherits the locked descriptor and outlives its parent
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for stream in (0, 1, 2):
            os.dup2(null, stream)
        time.sleep(120)
        os._exit(0)
    print("locked", flush=True)
    os._exit(0)  # the holder dies without releasing; its child keeps the lock
    """
)


def test_a_lock_held_by_the_orphans_of_a_dead_process_is_taken_over(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    lock = RepoLayout.for_path(root).cache_dir / "index.lock"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.run(
        [sys.executable, "-c", HOLDER, str(lock)], env=env, capture_output=True, text=True, timeout=60
    )
    assert holder.stdout.strip() == "locked", holder.stderr
    orphan_pid = None
    for proc_dir in Path("/proc").glob("[0-9]*"):
        try:
            if f"{lock}" in (proc_dir / "cmdline").read_text() and int(proc_dir.name) != os.getpid():
                orphan_pid = int(proc_dir.name)
        except OSError:
            continue
    try:
        import fcntl

        probe = os.open(lock, os.O_RDWR)
        try:
            try:
                fcntl.flock(probe, fcntl.LOCK_EX | fcntl.LOCK_NB)
                raise AssertionError("the orphan should still hold the lock")
            except BlockingIOError:
                pass
        finally:
            os.close(probe)
        from engine.store.lock import writer_busy

        # The orphans of a dead holder are no writer: readers answer without a "being written" note.
        assert writer_busy(RepoLayout.for_path(root)) is None
        started = time.monotonic()
        proc = run_semfora(
            "index", "--no-vectors", "--path", str(root), env={"SEMFORA_INDEX__LOCK_TIMEOUT": "20"}
        )
        assert proc.returncode == 0, proc.stderr
        assert time.monotonic() - started < 10
    finally:
        if orphan_pid is not None:
            os.kill(orphan_pid, signal.SIGKILL)


def test_a_live_holder_is_never_taken_over(make_repo) -> None:
    from engine import flock

    root = make_repo({"a.py": "x = 1\n"})
    lock = RepoLayout.for_path(root).cache_dir / "index.lock"
    fd = flock.acquire(lock, 1)
    assert fd is not None
    try:
        from engine.store.lock import writer_busy

        assert writer_busy(RepoLayout.for_path(root)) == f"another semfora process (pid {os.getpid()})"
        proc = run_semfora(
            "index", "--no-vectors", "--path", str(root), env={"SEMFORA_INDEX__LOCK_TIMEOUT": "0.5"}
        )
        # It says it waits (INDEX_WAITING), then gives up: the live holder keeps its lock.
        assert proc.returncode == 1 and proc.stderr.strip().splitlines()[-1].startswith("error[INDEX_LOCKED]")
    finally:
        flock.release(fd)
