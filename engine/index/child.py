"""A first build run in a process of its own, for hosts that run threads (the app, the MCP server).

Owns ``index_in_child``. A cold build forks its call resolution across workers only from a
process with no other thread (forking a threaded process is unsafe), so the app, whose indexer
ran in one of its threads, resolved every call site in one process, and its parse results were
unpacked and written under the same interpreter lock as the screen. Here the whole run goes to a
child started by the forkserver (single-threaded: it forks its own workers as `semfora index`
does); progress and warnings come back over a pipe, and the report or the typed error at the end.
Stopping (``cancel``, or the caller's progress callback raising) kills the child: its run is one
commit at its end, so the index stays as it was, and the lock dies with the process.
"""

from __future__ import annotations

import atexit
import importlib
import os
import signal
import threading
from multiprocessing.connection import Connection, wait
from typing import Any

from engine.config import Settings
from engine.errors import SemforaError, WarningSink
from engine.index.indexer import IndexReport, ProgressFn, index_repository
from engine.lifetime import die_with_parent, may_fork
from engine.repo import git
from engine.repo.layout import RepoLayout

# How long the parent waits for a message before it looks at ``cancel`` again.
CANCEL_POLL_S = 0.1
# After a kill, how long to wait for the child to be reaped.
REAP_S = 10.0
# How long a child asked to stop (SIGTERM) may take to clean up before it is killed.
TERM_GRACE_S = 2.0
# From this many files in the work tree, a first build runs in a child. Below, starting it (the
# forkserver and a fresh interpreter, ~0.7 s) costs more than it saves: a 2-file repository's first
# build took 0.9 s in a child against 0.2 s in the host, while 2,833 Python files take 6 s or more.
CHILD_MIN_FILES = 1000


class IndexProcessFailed(SemforaError):
    """The index process ended without a report (killed by the system, out of memory)."""

    code = "INDEX_ERROR"


def index_in_child(
    layout: RepoLayout,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    on_warning: WarningSink | None = None,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """``indexer.index_repository`` run in a forkserver child; same arguments, report and errors."""
    import multiprocessing

    from engine.index.workers import stderr_with_fd

    ctx = multiprocessing.get_context("forkserver")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(
        target=_child_main,
        args=(layout, settings, rebuild, send, os.getpid()),
        name="semfora-index",
        daemon=False,  # it starts workers of its own; it dies with this process (die_with_parent)
    )
    with stderr_with_fd():  # Textual's stderr has no file descriptor to hand the forkserver
        proc.start()
    send.close()

    def stop_child() -> None:
        # Registered after multiprocessing's own exit hook, so it runs first: a host that exits
        # during the run (an MCP client leaving) would otherwise wait there for the child to finish.
        if proc.is_alive():
            proc.kill()

    atexit.register(stop_child)
    report: IndexReport | None = None
    try:
        while report is None:
            if cancel is not None and cancel.is_set():
                return _cancelled(layout, settings)
            ready = wait([receive, proc.sentinel], timeout=CANCEL_POLL_S)
            if receive in ready:
                try:
                    kind, payload = receive.recv()
                except EOFError:
                    break
                if kind == "progress" and progress is not None:
                    progress(*payload)
                elif kind == "warning" and on_warning is not None:
                    on_warning(payload)
                elif kind == "done":
                    report = payload
                elif kind == "error":
                    raise _rebuilt(*payload)
                elif kind == "crash":
                    raise IndexProcessFailed(f"the index process failed: {payload}")
            elif proc.sentinel in ready and not receive.poll():
                break
    finally:
        atexit.unregister(stop_child)
        receive.close()
        if proc.is_alive() and report is None:
            # Asked to stop, it removes its call shards (hundreds of MB on a large tree) and its
            # workers end with it; killed only if it has not stopped by then.
            proc.terminate()
            proc.join(TERM_GRACE_S)
            if proc.is_alive():
                proc.kill()
        proc.join(REAP_S)
    if report is None:
        raise IndexProcessFailed(
            f"the index process ended without a report (exit code {proc.exitcode})",
            hint="run `semfora index` in a terminal to see why; the index is as it was before",
        )
    return report


def _cancelled(layout: RepoLayout, settings: Settings) -> IndexReport:
    """What an in-process run stopped by ``cancel`` raises: the lock error (the child is killed)."""
    from engine.errors import LockBusy

    raise LockBusy(
        "indexing was stopped before it finished; the index is as it was",
        code="INDEX_LOCKED",
    )


def _child_main(layout: RepoLayout, settings: Settings, rebuild: bool, send: Connection, owner: int) -> None:
    die_with_parent(owner=owner)  # the app killed: this run and its workers end too
    # Stopped by the host: unwind (the indexer's cleanup removes its shards), then exit.
    signal.signal(signal.SIGTERM, _stop)

    def progress(phase: str, done: int, total: int) -> None:
        send.send(("progress", (phase, done, total)))

    try:
        report = index_repository(
            layout,
            settings,
            rebuild=rebuild,
            progress=progress,
            on_warning=lambda w: send.send(("warning", w)),
        )
    except SystemExit:
        raise  # stopped by the host, which is no longer listening
    except SemforaError as exc:
        send.send(("error", (type(exc).__module__, type(exc).__qualname__, exc.message, exc.code, exc.hint)))
    except BaseException as exc:  # a bug: said in one line, not a traceback from another process
        send.send(("crash", f"{type(exc).__name__}: {exc}"))
    else:
        send.send(("done", report))
    finally:
        send.close()


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


def _large(layout: RepoLayout) -> bool:
    """Whether the work tree has ``CHILD_MIN_FILES`` files or more (git's list: one call in C);
    outside git, or when git fails, assumed large (a child costs under a second)."""
    proc = git.run(layout.root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    if proc is None or proc.returncode != 0:
        return True
    return proc.stdout.count(b"\0") >= CHILD_MIN_FILES


def _rebuilt(module: str, qualname: str, message: str, code: str, hint: str | None) -> SemforaError:
    """The child's typed error, as its own class when that is a ``SemforaError``."""
    cls: Any = None
    try:
        cls = getattr(importlib.import_module(module), qualname, None)
    except ImportError:
        cls = None
    if not (isinstance(cls, type) and issubclass(cls, SemforaError)):
        cls = SemforaError
    err: SemforaError = cls.__new__(cls)
    SemforaError.__init__(err, message, code=code, hint=hint)
    return err


def index_anywhere(
    layout: RepoLayout,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: ProgressFn | None = None,
    on_warning: WarningSink | None = None,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """Index here, or in a child when this process runs threads and the run is a first build
    (or a rebuild): the one run whose parallel call resolution pays for a process's start."""
    import multiprocessing

    first = rebuild or not layout.index_db.is_file()
    if (
        first
        and not may_fork()
        and "forkserver" in multiprocessing.get_all_start_methods()
        and _large(layout)
    ):
        return index_in_child(
            layout, settings, rebuild=rebuild, progress=progress, on_warning=on_warning, cancel=cancel
        )
    return index_repository(
        layout, settings, rebuild=rebuild, progress=progress, on_warning=on_warning, cancel=cancel
    )
