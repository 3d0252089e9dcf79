"""Worker processes for indexing: how they start (fork or forkserver) and that they die with semfora.

Owns ``worker_pool`` (the one way the indexer and the text index start processes) and
``pool_context``. Its own module so the indexer and the text-index pipeline share it without
importing each other. Must not know what the workers do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.context import BaseContext

from engine.lifetime import die_with_parent, may_fork


def pool_context() -> BaseContext:
    import multiprocessing

    # fork is fastest (workers inherit loaded grammars) but unsafe once threads run.
    if may_fork() and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    from multiprocessing import forkserver

    # Start the helper processes now, while stderr is a real file: a host that captures
    # stderr (Textual's fileno() is -1) would otherwise make them fail to spawn.
    with stderr_with_fd():
        forkserver.ensure_running()
    return multiprocessing.get_context("forkserver")


@contextmanager
def worker_pool(workers: int, context: BaseContext | None = None) -> Iterator[ProcessPoolExecutor]:
    """The one way indexing starts worker processes (parsing, resolving calls, chunking text),
    so how they start and end is decided in one place: they die with semfora (a killed `index`
    must leave no orphan holding index.lock), and a run stopped midway (Ctrl-C, the app closing)
    drops the batches not started yet instead of waiting while the workers parse them all."""
    context = context or pool_context()
    forked = context.get_start_method() == "fork"
    # A forked worker dies with its parent (us); a forkserver's worker watches us as its owner.
    parent, owner = (os.getpid(), None) if forked else (None, os.getpid())
    pool = ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=die_with_parent, initargs=(parent, owner)
    )
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


@contextmanager
def stderr_with_fd() -> Iterator[None]:
    """Point ``sys.stderr`` at the process's real stderr while child processes are spawned."""
    import sys

    try:
        valid = sys.stderr is not None and sys.stderr.fileno() >= 0
    except (OSError, ValueError, AttributeError):
        valid = False
    if valid or sys.__stderr__ is None:
        yield
        return
    captured, sys.stderr = sys.stderr, sys.__stderr__
    try:
        yield
    finally:
        sys.stderr = captured
