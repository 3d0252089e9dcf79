"""Index refreshes, vectors, reasoners, orchestrators and run logs, as the faces ask for them.

`semfora context|ask|index`, the app's bridge and the MCP server's ``get_context`` go through
these functions rather than the indexer, the vector indexer, the model selection or the
orchestrator's modules. The orchestrator itself is the turn API: ``build_context`` returns a
frozen ``ContextPack`` and ``run_turn`` a frozen ``TurnResult``, each with ``to_json()``.
Heavy modules are imported inside each function. Must not print.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.api.tools import Engine
    from engine.config import Settings
    from engine.errors import WarningSink
    from engine.index.indexer import IndexReport
    from engine.index.vectors import VectorReport
    from engine.llm.base import Reasoner
    from engine.orchestrator.core import Orchestrator
    from engine.repo.layout import RepoLayout

# (phase, done, total): the progress shape of the indexer and the vector indexer (COMMON contract 3).
Progress = Callable[[str, int, int], None]


def index_is_empty(engine: Engine) -> bool:
    """Nothing indexed yet (the store is opened, never built, by this question)."""
    return engine.store(ensure_index=False).is_empty()


def index_busy_note(engine: Engine) -> str | None:
    """When another process is writing an index that exists, the one line the faces say before
    answering from it as it is (they do not wait for the writer); else None. With no index at
    all there is nothing to answer from: the caller waits for (or builds) the first one."""
    from engine.store.lock import writer_busy

    who = writer_busy(engine.layout)
    if who is None or index_is_empty(engine):
        return None
    return f"{who} is writing the index; answering from the index as it is (it may not show the latest edits)"


def refresh_index(
    engine: Engine,
    *,
    refresh: bool,
    on_first: Callable[[], None] | None = None,
    on_busy: Callable[[str], None] | None = None,
    progress: Progress | None = None,
    busy_wait: float | None = None,
) -> None:
    """Build the index the first time; with ``refresh`` also bring it up to date (incremental).

    ``on_first`` hears that a first build begins, ``progress`` follows the indexing. When another
    process holds the index lock and an index exists, ``on_busy`` hears why it was not refreshed
    and the index is used as it is; with no index at all the ``LockBusy`` error propagates.
    ``busy_wait`` bounds the wait for that lock when an index exists (default
    ``index.lock_timeout``; the MCP server answers at once); a first build waits the full timeout.
    """
    from engine.errors import LockBusy

    empty = index_is_empty(engine)
    if not empty and not refresh:
        return
    if empty and on_first is not None:
        on_first()
    try:
        engine.index(progress=progress, lock_timeout=None if empty else busy_wait)
    except LockBusy as exc:
        if empty:
            raise
        if on_busy is not None:
            on_busy(exc.message)


def index_repository(
    layout: RepoLayout,
    settings: Settings,
    *,
    rebuild: bool = False,
    progress: Progress | None = None,
    on_warning: WarningSink | None = None,
    cancel: threading.Event | None = None,
) -> IndexReport:
    """One indexing run without an ``Engine`` (the app's worker threads own no store);
    ``cancel`` ends a wait for another process's run (the app is closing)."""
    from engine.index.child import index_anywhere

    return index_anywhere(
        layout, settings, rebuild=rebuild, progress=progress, on_warning=on_warning, cancel=cancel
    )


def build_vectors(
    layout: RepoLayout,
    settings: Settings,
    *,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> VectorReport:
    """Embed the chunks not embedded yet with the configured model (safe to stop and rerun).

    An embedded store is written by a child process that holds no credential (docs/security.md)."""
    from engine.index.vector_writer import build_vectors as build

    return build(layout, settings, progress=progress, cancel=cancel)


def skipped_vectors(layout: RepoLayout, settings: Settings) -> VectorReport:
    """The report of a run that skips the vector pass (`index --no-vectors`): what index.db records
    (chunks with vectors, of which model, in which store), without opening the store or a model."""
    from engine.index.vectors import skipped_report

    return skipped_report(layout, settings)


def make_reasoner(settings: Settings, model: str | None = None) -> Reasoner:
    """The reasoner for ``model`` (default: the configured one); ModelUnavailable (exit 3) if none."""
    from engine.llm.select import make_reasoner as select

    return select(settings, model)


def describe_model(settings: Settings, model: str | None = None) -> str:
    """One line for status bars and `doctor`; never shows a key."""
    from engine.llm.select import describe_model_status

    return describe_model_status(settings, model)


def open_orchestrator(
    layout: RepoLayout, settings: Settings, reasoner: Reasoner | None = None, *, resume: bool = False
) -> Orchestrator:
    """A Model-B orchestrator for one repository; ``resume`` reopens the last conversation."""
    from engine.orchestrator.core import Orchestrator

    return Orchestrator(layout, settings, reasoner, resume=resume)


def load_run(layout: RepoLayout, run_id: str) -> dict[str, Any]:
    """One turn's run log (NotFoundError when it is gone)."""
    from engine.orchestrator.runlog import load_run as read_run

    return read_run(layout, run_id)
