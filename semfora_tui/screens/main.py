"""The main screen: chat, diff review and context budget, and who gets the keyboard.

Owns the keyboard model: the prompt keeps the focus unless the user moves it, review is a
mode the user enters (F2, a click, `/review`) and leaves with escape, and the footer says
which mode is on. Owns the order of events of a turn (queued messages, streaming, every
failure path shown as a state) and of indexing. Every blocking engine call runs in a
``@work`` thread that posts one typed message (``TurnFinished``, ``IndexFinished``,
``JobFinished``...), handled once here. Slash commands live in ``semfora_tui.commands``.
"""

from __future__ import annotations

import asyncio
import os
import string
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.timer import Timer

from engine.errors import SemforaError
from engine.words import plural
from semfora_tui import slash
from semfora_tui.chat_text import code, error_markdown
from semfora_tui.engine_bridge import EngineBridge, EngineUnavailable
from semfora_tui.screens.confirm import ConfirmScreen
from semfora_tui.turn_feed import Phase, Status, TurnFeed
from semfora_tui.views import (
    FileView,
    PackView,
    TurnCost,
    cost_from_result,
    pack_from_engine,
    summarize_staged,
)
from semfora_tui.widgets.budget_pane import BudgetPane
from semfora_tui.widgets.chat import ChatPane, UserMessage
from semfora_tui.widgets.diff_pane import REVIEW_HINTS, DiffPane
from semfora_tui.widgets.header import StatusHeader
from semfora_tui.widgets.keybar import KeyBar, KeyHint
from semfora_tui.widgets.prompt import Mention, PromptBar, PromptInput

if TYPE_CHECKING:
    from engine.api import IndexReport, TurnResult, VectorReport
    from semfora_tui.app import SemforaApp
    from semfora_tui.widgets.reply import ReplyTurn

T = TypeVar("T")

# Seconds between two flushes of streamed text into the Markdown widget: often
# enough to look live, rare enough that 5,000 tokens never starve the input.
STREAM_FLUSH_INTERVAL = 1 / 20
# watchfiles waits this long for a burst of saves to settle before re-indexing.
WATCH_DEBOUNCE_MS = 300
# The watcher wakes this often when nothing changes (so it can say it is watching, and stop).
WATCH_READY_MS = 1000
# Results offered for an `@` mention and shown by /search.
PICKER_LIMIT = 30
# Seconds of typing pause before an `@` query asks the symbol index.
MENTION_DEBOUNCE = 0.15
# What the header says while another process is writing the index this app waits for.
INDEX_WAITING_PHASE = "waiting: another semfora is indexing"
# Below this width the review mode gives the whole main area to the diff pane.
NARROW_WIDTH = 120
# While the vector build is off for want of an embedder or a Chroma server (or stopped part way
# when one went), it is tried again this often: an Ollama started after the app is then used
# without a re-index or a restart. A dead one costs nothing (its circuit breaker answers at once).
VECTORS_RECHECK_SECONDS = 60.0
# (key after "alt+", character) of the keys an escape can merge with: letters, capitals, digits.
ESCAPED_KEYS: tuple[tuple[str, str], ...] = (
    *((c, c) for c in string.ascii_lowercase + string.digits),
    *((f"shift+{c}", c.upper()) for c in string.ascii_lowercase),
)

OFFLINE_NOTICE = """\
**Offline: no model can be used.** {reason}

What works without a model: `/search`, `/symbol`, `/overview`, `/diff`, reviewing staged edits \
(`/review` or F2, then the review keys), `/context`, and staging edits from a file with `/edit --from FILE`.

To enable reasoning, set `ANTHROPIC_API_KEY` for Claude, or choose a local model with \
`/model ollama/qwen2.5-coder:7b` (or `llm.model` in config.toml) and start Ollama.
"""


class AppClosing(Exception):  # noqa: N818 - a signal to stop, not an error to report
    """Raised inside a worker's callback once the app is closing, to stop the work there."""


def attempt(run: Callable[[], T]) -> tuple[T | None, SemforaError | None]:
    """Run ``run`` at the worker boundary: its result, or the error to show (never raised,
    except ``AppClosing``, which ends the worker)."""
    try:
        return run(), None
    except SemforaError as err:
        return None, err
    except AppClosing:
        raise
    except Exception as exc:  # noqa: BLE001 - the worker boundary: any failure is shown, not lost
        from engine.errors import disk_full_error

        return None, disk_full_error(exc) or SemforaError(f"{exc.__class__.__name__}: {exc}", code="INTERNAL")


async def _settle(value: Awaitable[None] | None) -> None:
    if value is not None:
        await value


@dataclass
class Job(Generic[T]):
    """One blocking engine call and what to do with its result on the UI thread."""

    run: Callable[[], T]
    done: Callable[[T], Awaitable[None] | None]
    quiet: bool = False  # start-up probes log their errors instead of writing them in the chat
    failed: Callable[[SemforaError], Awaitable[None] | None] | None = None
    in_order: bool = False  # an edit-session job: one runs at a time, in the order asked
    shows_session: bool = False  # ``done`` only shows the session (skipped when a newer view follows)


@dataclass
class Queued:
    """A message the user sent while it could not go out yet, and its line in the chat."""

    task: str
    line: UserMessage


class MainScreen(Screen[None]):
    """Chat, diff preview and context budget for one repository."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    AUTO_FOCUS = "#prompt"
    # Keys that move the keyboard between modes are priority bindings: Textual runs those the
    # moment the key arrives, so the keys typed right after it already go to the new mode.
    # (A plain binding runs only after the key has bubbled up from the focused widget, and by
    # then the next keys were handed to the old one: "F3 /undo" lost its "/" that way.)
    BINDINGS = [
        Binding("escape", "escape", "Back / cancel", priority=True, show=False),
        Binding("ctrl+c", "cancel_stream", "Cancel reply", priority=True, show=False),
        Binding("f2", "review", "Review", priority=True),
        Binding("f3", "prompt", "Prompt", priority=True),
        Binding("slash", "command_from_review", "Command", priority=True, show=False),
        Binding("ctrl+up", "scroll_chat(-1)", "Scroll chat up", show=False),
        Binding("ctrl+down", "scroll_chat(1)", "Scroll chat down", show=False),
        # A terminal sends alt+w as ESC w, and an escape followed by a key within ESCDELAY
        # (100 ms: a fast typist's "esc, then the next question") reaches the app the same way.
        # Review mode has no alt keys: there it is the escape, then the key typed into the prompt
        # (the escape was lost, and the sentence after it ran as review keys).
        *(
            Binding(f"alt+{key}", f"escape_then({char!r})", priority=True, show=False)
            for key, char in ESCAPED_KEYS
        ),
    ]

    # -- messages from the workers ------------------------------------------------------------

    class TurnFinished(Message):
        def __init__(self, turn: ReplyTurn, result: TurnResult | None, error: SemforaError | None) -> None:
            super().__init__()
            self.turn = turn
            self.result = result
            self.error = error

    class IndexProgress(Message):
        def __init__(self, phase: str, done: int, total: int) -> None:
            super().__init__()
            self.phase = phase
            self.done = done
            self.total = total

    class SessionChanged(Message):
        """The edit session's file changed (this app, or `semfora edits` in another terminal)."""

    def on_main_screen_session_changed(self, _message: SessionChanged) -> None:
        """Show the staged changes as they are now: another process may have staged, committed
        or rolled back. The pane keeps its selected hunk."""

        self.session_job(self.bridge.staged_files, self._show_reloaded, quiet=True, view_only=True)

    class IndexFinished(Message):
        def __init__(
            self,
            report: IndexReport | None,
            error: SemforaError | None,
            *,
            rebuild: bool,
            announce: bool,
            watched: bool = False,
            changed_paths: tuple[str, ...] = (),
        ) -> None:
            super().__init__()
            self.report = report
            self.error = error
            self.rebuild = rebuild
            self.announce = announce
            self.watched = watched  # a re-index after a change on disk, not one the app started
            self.changed_paths = changed_paths

    class VectorsProgress(Message):
        def __init__(self, percent: int) -> None:
            super().__init__()
            self.percent = percent

    class VectorsFinished(Message):
        def __init__(self, report: VectorReport | None, error: SemforaError | None) -> None:
            super().__init__()
            self.report = report
            self.error = error

    class JobFinished(Message):
        def __init__(self, job: Job[Any], result: object, error: SemforaError | None) -> None:
            super().__init__()
            self.job = job
            self.result = result
            self.error = error

    class MentionsFound(Message):
        def __init__(self, query: str, mentions: list[Mention]) -> None:
            super().__init__()
            self.query = query
            self.mentions = mentions

    # -- state ----------------------------------------------------------------------------------

    def __init__(
        self,
        bridge: EngineBridge,
        *,
        resume: bool = False,
        start_index: bool = True,
        watch: bool = False,
        check_model: bool = True,
    ) -> None:
        super().__init__()
        self.bridge = bridge
        self.resume = resume
        self.start_index = start_index
        self.watch_enabled = watch
        self.watch_ready = threading.Event()  # set once the disk watcher is following the files
        self.check_model = check_model
        self.mode = "prompt"
        self.offline: bool | None = None
        self.offline_reason = ""
        self.streaming = False
        self.turn: ReplyTurn | None = None
        self.turn_line: UserMessage | None = None  # the message the turn answers
        self.queue: deque[Queued] = deque()
        self.session_cost = 0.0
        self.session_usage = TurnCost()
        self.turns = 0
        self.last_pack: PackView | None = None
        self.index_summary = "index: starting" if start_index else "index: not refreshed (/index)"
        self.indexing = False  # an index run the app started is under way
        # (rebuild, announce) of the run asked for while one was under way: it starts after it.
        self._next_index: tuple[bool, bool] | None = None
        self.index_ready = True  # False while an index is built from nothing: questions wait for it
        self.index_phase = ""
        self.vectors_reason = ""
        self._vectors_retry = False  # the last vector build lacked a service: try it again later
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._feed = TurnFeed()
        self._feed_lock = asyncio.Lock()  # one writer into the reply at a time (timer flush vs. end)
        self._flush_timer: Timer | None = None
        self._session_jobs: deque[Job[Any]] = deque()  # the running one first (see session_job)
        self._mention_timer: Timer | None = None
        self._files: list[str] | None = None

    @property
    def semfora(self) -> SemforaApp:
        from semfora_tui.app import SemforaApp

        return cast(SemforaApp, self.app)

    # -- layout ---------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        with Horizontal(id="main"):
            yield ChatPane(id="chat")
            with Vertical(id="side"):
                yield DiffPane(id="diff")
                yield BudgetPane(id="budget")
        yield PromptBar(id="prompt-bar")
        yield KeyBar(id="keybar")

    @property
    def chat(self) -> ChatPane:
        return self.query_one(ChatPane)

    @property
    def diff(self) -> DiffPane:
        return self.query_one(DiffPane)

    @property
    def budget_pane(self) -> BudgetPane:
        return self.query_one(BudgetPane)

    @property
    def header(self) -> StatusHeader:
        return self.query_one(StatusHeader)

    @property
    def prompt(self) -> PromptInput:
        return self.query_one(PromptInput)

    @property
    def prompt_bar(self) -> PromptBar:
        return self.query_one(PromptBar)

    @property
    def keybar(self) -> KeyBar:
        return self.query_one(KeyBar)

    def on_mount(self) -> None:
        header = self.header
        header.repo = self.bridge.root.name
        header.model = self.bridge.model
        header.index_state = self.index_summary
        self.diff.border_title = "staged changes"
        self.budget_pane.border_title = "context budget"
        self.chat.border_title = "chat"
        self.budget_pane.set_budget(self.bridge.budget)
        self.prompt.past = self.bridge.history.load()
        self.set_focus(self.prompt)
        self.refresh_keys()
        # Nothing heavy before the first frame: the workers import tree-sitter, anthropic and
        # friends, and would compete with the first paint for the interpreter.
        self.call_after_refresh(self._start_background_work)

    def _start_background_work(self) -> None:
        self.run_job(self.bridge.branch, self._set_branch, quiet=True)
        if self.check_model:
            self.run_job(self.bridge.reasoning_status, self._set_reasoning, quiet=True)
        if self.start_index:
            self.start_indexing(rebuild=False, announce=False)
        if self.watch_enabled:
            self._watch_worker()
        self.set_interval(VECTORS_RECHECK_SECONDS, self._recheck_vectors)
        self.session_job(self.bridge.open_session, self._session_opened, quiet=True)
        if self.resume:
            self.call_later(self.run_slash, "/resume")

    def on_unmount(self) -> None:
        self._stop.set()
        self._cancel.set()

    def on_resize(self, event: events.Resize) -> None:
        self.set_class(event.size.width < NARROW_WIDTH, "-narrow")

    # -- the keyboard model -----------------------------------------------------------------------

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        self._set_mode("review" if isinstance(event.widget, DiffPane) else "prompt")

    def _set_mode(self, mode: str) -> None:
        if mode != self.mode:
            self.mode = mode
            self.set_class(mode == "review", "-review")
        self.refresh_keys()

    def enter_review(self) -> None:
        """Review mode: the diff pane takes the keys (set now, so the next key already goes there)."""
        self.set_focus(self.diff)
        self._set_mode("review")

    def leave_review(self) -> None:
        if self.maximized is not None:
            self.minimize()
        self.set_focus(self.prompt)
        self._set_mode("prompt")

    def action_review(self) -> None:
        self.enter_review()

    def action_prompt(self) -> None:
        self.leave_review()

    async def action_escape(self) -> None:
        if self.mode == "review":
            self.leave_review()
        else:
            await self.action_cancel_stream()

    def action_escape_then(self, character: str) -> None:
        self.leave_review()
        self.prompt.insert(character)

    def action_command_from_review(self) -> None:
        """`/` in review mode starts a command in the prompt (letters there are review keys)."""
        self.leave_review()
        self.prompt.insert("/")

    def action_scroll_chat(self, direction: int) -> None:
        chat = self.chat
        chat.scroll_to(y=chat.scroll_y + direction * max(chat.size.height - 2, 1), animate=False)

    def on_key(self, event: events.Key) -> None:
        """A printable key that reaches the screen unhandled (the budget table had the focus)
        was meant for the prompt."""
        if self.mode == "review" or self.focused is self.prompt:
            return
        if event.is_printable and event.character:
            event.stop()
            event.prevent_default()
            self.set_focus(self.prompt)
            self.prompt.insert(event.character)

    def refresh_keys(self) -> None:
        """Tell the footer the mode and the keys that work in it now."""
        if not self.is_mounted:
            return
        if self.mode == "review":
            diff = self.diff
            hints = [
                KeyHint(h.keys, h.label, h.rank) for h in REVIEW_HINTS if diff.check_action(h.action, ())
            ]
            self.keybar.show("REVIEW", hints)
            return
        hints = []
        if self.streaming:
            hints.append(KeyHint("esc", "cancel reply", 0))
            hints.append(KeyHint("enter", "queue message", 1))
        else:
            hints.append(KeyHint("enter", "send", 1))
        hints.append(KeyHint("shift+enter", "new line", 4))
        hints.append(KeyHint("/", "commands", 3))
        hints.append(KeyHint("@", "files & symbols", 5))
        staged = sum(len(f.hunks) for f in self.diff.files)
        hints.append(KeyHint("F2", f"review ({staged} staged)" if staged else "review", 0))
        if self.queue:
            hints.append(KeyHint("⏳", f"{len(self.queue)} queued", 0))
        hints.append(KeyHint("ctrl+p", "palette", 6))
        hints.append(KeyHint("ctrl+q", "quit", 2))
        self.keybar.show("PROMPT", hints)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_stream":
            return self.streaming
        if action == "escape":
            # In the prompt, escape first closes the suggestion list, and only cancels a streaming reply.
            return self.mode == "review" or (self.streaming and not self.prompt_bar.suggestions.display)
        if action in ("command_from_review", "escape_then"):
            return self.mode == "review"
        return True

    # -- confirmations ---------------------------------------------------------------------------

    def confirm(self, question: str, yes: str, on_yes: Callable[[], None]) -> None:
        """Ask before something that changes files or history; ``on_yes`` runs only on a real yes."""

        def answered(answer: bool | None) -> None:
            if answer:
                on_yes()

        self.app.push_screen(ConfirmScreen(question, yes=yes, on_early_key=self._early_key), answered)

    def _early_key(self, event: events.Key) -> None:
        """A key typed before a confirmation was on screen: text for the prompt, never an answer."""
        if self.mode == "prompt" and event.is_printable and event.character:
            self.prompt.insert(event.character)

    # -- jobs -----------------------------------------------------------------------------------

    def run_job(
        self,
        run: Callable[[], T],
        done: Callable[[T], Awaitable[None] | None],
        *,
        quiet: bool = False,
        failed: Callable[[SemforaError], Awaitable[None] | None] | None = None,
    ) -> None:
        """Run ``run`` in a thread; its result goes to ``done`` (its error to ``failed`` or the chat)."""
        self._start(Job(run, done, quiet, failed))

    def session_job(
        self,
        run: Callable[[], T],
        done: Callable[[T], Awaitable[None] | None] | None = None,
        *,
        quiet: bool = False,
        view_only: bool | None = None,
    ) -> None:
        """Run a job that reads or changes the edit session, after those asked before it.

        Review keys typed in one burst (`a a c`) are applied in the order typed, one at a
        time, and the diff pane shows each decision at once. Without ``done``, the result (the
        session's files) is shown. A ``view_only`` job's ``done`` (default: when there is none)
        is skipped when a later session job follows: that one shows a newer state, and a view
        in between would take back decisions the pane already shows.
        """
        view = done is None if view_only is None else view_only
        self._start(Job(run, done or self.show_staged, quiet, in_order=True, shows_session=view))

    def _start(self, job: Job[Any]) -> None:
        if job.in_order:
            self._session_jobs.append(job)
            if len(self._session_jobs) > 1:
                return  # it starts when the jobs before it have finished
        self._job_worker(job)

    @work(thread=True, group="engine", exit_on_error=False)
    def _job_worker(self, job: Job[Any]) -> None:
        result, error = attempt(job.run)
        self.post_message(self.JobFinished(job, result, error))

    async def on_main_screen_job_finished(self, message: JobFinished) -> None:
        job, error = message.job, message.error
        followed = False
        if job.in_order:
            self._session_jobs.popleft()
            followed = bool(self._session_jobs)
            if followed:
                self._job_worker(self._session_jobs[0])
        if job.shows_session and followed and error is None:
            return  # a later session job shows a newer state (and the decisions typed since)
        if error is None:
            await _settle(job.done(message.result))
        elif job.failed is not None:
            await _settle(job.failed(error))
        elif job.quiet:
            self.log.warning(f"error[{error.code}] {error.message}")
        else:
            await self.show_error(error)
        if error is not None and job.shows_session and not followed:
            # The pane showed the decision that failed: show the real state (once: this one's
            # ``done`` is given, so its own failure asks for nothing more).
            self.session_job(self.bridge.staged_files, self.show_staged, view_only=False)

    async def show_error(self, err: SemforaError) -> None:
        await self.chat.add_note(error_markdown(err), kind="error")

    async def note(self, markdown: str) -> None:
        await self.chat.add_note(markdown)

    # -- start-up state -------------------------------------------------------------------------

    def _set_branch(self, branch: str) -> None:
        self.header.branch = branch

    async def _set_reasoning(self, status: tuple[bool, str]) -> None:
        usable, description = status
        self.offline = not usable
        self.offline_reason = description
        self.header.offline = not usable
        self.header.model = self.bridge.model
        if not usable:
            # A sentence of its own: it read "no model can be used. no API key for …" after the bold line.
            reason = description[:1].upper() + description[1:].rstrip(".") + "."
            await self.chat.add_note(OFFLINE_NOTICE.format(reason=reason), kind="offline")

    async def _session_opened(self, opened: tuple[object | None, tuple[FileView, ...]]) -> None:
        recovery, files = opened
        if recovery is not None:
            await self.note(f"An interrupted commit was rolled back at start-up: {recovery}")
        # Hunks this app staged before this answer came (a fast `/edit --from`) are not news.
        earlier = bool(files) and not self.diff.files and not self.resume  # /resume says it itself
        self.show_staged(files)
        if earlier:
            s = summarize_staged(files, code)
            await self.note(
                f"Still staged from an earlier session: {plural(s.hunks, 'hunk')} in {s.where} ({s.states}), "
                f"not written to the {'file' if s.files == 1 else 'files'}. F2 or `/review` reviews {s.them}; "
                f"`/rollback` discards {s.them}." + _changed_since(files)
            )

    # -- indexing -------------------------------------------------------------------------------

    def start_indexing(self, *, rebuild: bool, announce: bool) -> bool:
        """Start an index run, or (False) queue it behind the one under way: two runs in one
        process waited on each other's lock as if on "another semfora", and the second failed
        after 30 s on a big repository."""
        if rebuild:
            self.index_ready = False  # the pack would be empty: questions wait for the index
        if self.indexing:
            queued = self._next_index or (False, False)
            self._next_index = (rebuild or queued[0], announce or queued[1])
            return False
        self.indexing = True
        if not self.bridge.index_exists():
            self.index_ready = False
        self.index_phase = "rebuilding" if rebuild else "indexing"
        self.header.index_state = f"index: {self.index_phase}"
        self._index_worker(rebuild, announce)
        return True

    @work(thread=True, group="index", exit_on_error=False)
    def _index_worker(self, rebuild: bool, announce: bool) -> None:
        last: list[tuple[str, int]] = [("", -1)]

        def progress(phase: str, done: int, total: int) -> None:
            if self._stop.is_set():
                # The app is closing: stop here. Its end waits for this thread, and a quit during
                # the first index of a big repository showed a blank terminal for 45 s. An index
                # run is written in one commit at its end, so the index stays as it was.
                raise AppClosing
            # One message per phase change or percent, not per file: a big repository has 100k files.
            pct = int(done * 100 / total) if total else 100
            if (phase, pct) != last[0]:
                last[0] = (phase, pct)
                self.post_message(self.IndexProgress(phase, done, total))

        def waiting() -> None:
            # Another semfora (a `semfora index` in a terminal, say) holds the index lock.
            self.post_message(self.IndexProgress(INDEX_WAITING_PHASE, 0, 0))

        try:
            report, error = attempt(
                lambda: self.bridge.index(
                    rebuild=rebuild, progress=progress, on_wait=waiting, cancel=self._stop
                )
            )
        except AppClosing:
            return
        if self._stop.is_set():
            return  # closing: a wait for another process's run was given up (ctrl+q waited 30 s)
        self.post_message(self.IndexFinished(report, error, rebuild=rebuild, announce=announce))

    def on_main_screen_index_progress(self, message: IndexProgress) -> None:
        # Before a phase knows its total (discovery lists the files first), "0/0" says nothing.
        counts = f" {message.done:,}/{message.total:,}" if message.total else "…"
        self.index_phase = f"{message.phase}{counts}"
        self.header.index_state = f"index: {self.index_phase}"
        if message.phase == INDEX_WAITING_PHASE:
            # Nothing to measure, and the bar took the room of the words: the header read
            # "index: waiting for another semfora to" and lost the session cost.
            self.header.hide_progress()
        else:
            self.header.show_progress(message.done, message.total)

    async def on_main_screen_index_finished(self, message: IndexFinished) -> None:
        if not message.watched:
            self.indexing = self._next_index is not None  # the next run starts below
        elif message.report is None and message.error is None:
            # The watcher saw changes while a run was under way: index them after it.
            self.start_indexing(rebuild=False, announce=False)
        if not self.indexing:
            self.header.hide_progress()
        if message.error is not None:
            err = message.error
            if not self.indexing:
                self.index_ready = True  # nothing better is coming; questions go with what there is
            self.index_summary = f"index: unavailable ({err.code})"
            self.header.index_state = self.index_summary
            if not isinstance(err, EngineUnavailable):
                self.notify(err.message, title="Indexing failed", severity="error")
                await self.chat.add_note(
                    f"**Indexing failed** — {error_markdown(err)}\n\n`/index --rebuild` tries again from scratch.",
                    kind="error",
                )
        elif message.report is not None:
            report = message.report
            if not self.indexing:
                self.index_ready = True
            files = plural(report.files, "file", grouped=True)
            symbols = plural(report.symbols, "symbol", grouped=True)
            self.index_summary = f"index: {files} · {symbols}"
            self.header.index_state = self.index_summary
            if message.announce:
                changes = (
                    f"{report.changed} changed, {report.added} added, {report.deleted} deleted"
                    if not message.rebuild
                    else "rebuilt from scratch"
                )
                await self.note(
                    f"**Index ready:** {files}, {symbols}, "
                    f"{plural(report.edges, 'call site', grouped=True)} ({changes}) in {report.seconds:.1f} s."
                )
            self._files = None  # the `@` file list is read again on the next mention
            self._maybe_start_vectors()
        if message.changed_paths:
            self._files_changed(message.changed_paths)
        if not message.watched and self._next_index is not None:
            (rebuild, announce), self._next_index = self._next_index, None
            self.indexing = False
            self.start_indexing(rebuild=rebuild, announce=announce)
        await self.pump_queue()

    def _recheck_vectors(self) -> None:
        """Build the vectors again when the last build found no embedder or store (it may be up now)."""
        if self._vectors_retry and not self.indexing and self.index_ready:
            self._vectors_retry = False
            self._maybe_start_vectors(quiet=True)

    def _maybe_start_vectors(self, *, quiet: bool = False) -> None:
        """Start the vector build; ``quiet`` (a retry) leaves the header as it is until it progresses."""
        if not self.bridge.vectors_enabled():
            self.vectors_reason = self.bridge.vectors_off_reason()
            self.header.vectors = "vectors off: embedding=none"
            return
        if not any(w.group == "vectors" and w.is_running for w in self.workers):
            if not quiet:  # a retry said "starting" once a minute while the service stayed down
                self.header.vectors = "vectors: starting"  # no share done is claimed before one is
            self._vectors_worker()  # incremental: only changed chunks are embedded again

    @work(thread=True, group="vectors", exit_on_error=False)
    def _vectors_worker(self) -> None:
        last = [-1]

        def progress(_phase: str, done: int, total: int) -> None:
            pct = int(done * 100 / total) if total else 100
            if pct != last[0]:
                last[0] = pct
                self.post_message(self.VectorsProgress(pct))

        report, error = attempt(lambda: self.bridge.build_vectors(progress, self._stop))
        self.post_message(self.VectorsFinished(report, error))

    def on_main_screen_vectors_progress(self, message: VectorsProgress) -> None:
        self.header.vectors = f"vectors {message.percent}%"

    def on_main_screen_vectors_finished(self, message: VectorsFinished) -> None:
        report = message.report
        # A service missing or gone (not a configuration error): worth another try later.
        self._vectors_retry = report is not None and (not report.enabled or report.pending > 0)
        if message.error is not None:
            self.vectors_reason = f"error[{message.error.code}] {message.error.message}"
            self.header.vectors = f"vectors off: {message.error.code}"
        elif message.report is not None and not message.report.enabled:
            self.vectors_reason = message.report.reason or "no embedding provider is available"
            # A report that names a store had an embedder: the store (a Chroma server) is what failed.
            cause = "Chroma unavailable" if message.report.store else "no embedder"
            self.header.vectors = f"vectors off: {cause}"
        elif message.report is not None and message.report.pending:
            # Stopped part way (Ollama or the server gone): what it kept serves; /status says why.
            self.vectors_reason = message.report.message
            self.header.vectors = f"vectors: {message.report.pending:,} not embedded"
        else:
            self.vectors_reason = ""
            self.header.vectors = "vectors ready"

    @work(thread=True, group="watch", exit_on_error=False)
    def _watch_worker(self) -> None:
        """Follow the working tree; re-index incrementally after each debounced burst."""
        import watchfiles

        root = self.bridge.root
        skip = set(self.bridge.settings.index.exclude_dirs) | {".git"}
        # The edit session's file too: `semfora edits ...` in another terminal changes what is staged.
        try:
            session_file = self.bridge.layout.edit_session_file  # its folder is made if missing
            watched, session = [root, session_file.parent], str(session_file)
        except (OSError, SemforaError):
            watched, session = [root], ""
        inside = str(root) + os.sep

        def wanted(_change: watchfiles.Change, path: str) -> bool:
            if not path.startswith(inside):
                return path == session  # the one file followed outside the work tree
            return not any(part in skip for part in Path(path).relative_to(root).parts)

        for changes in watchfiles.watch(
            *watched,
            watch_filter=wanted,
            debounce=WATCH_DEBOUNCE_MS,
            stop_event=self._stop,
            raise_interrupt=False,
            rust_timeout=WATCH_READY_MS,
            yield_on_timeout=True,
        ):
            self.watch_ready.set()  # the first yield, a change or a timeout: the watch is on
            if any(p == session for _c, p in changes):
                self.post_message(self.SessionChanged())
            paths = tuple(
                sorted({str(Path(p).relative_to(root)) for _c, p in changes if p.startswith(inside)})
            )
            if not paths:
                continue
            if self.indexing:  # the app's own run holds the index: the UI thread queues one after it
                self.post_message(
                    self.IndexFinished(
                        None, None, rebuild=False, announce=False, watched=True, changed_paths=paths
                    )
                )
                continue
            report, error = attempt(lambda: self.bridge.index(rebuild=False, cancel=self._stop))
            self.post_message(
                self.IndexFinished(
                    report, error, rebuild=False, announce=False, watched=True, changed_paths=paths
                )
            )

    def _files_changed(self, paths: tuple[str, ...]) -> None:
        """Warn about staged files that someone else changed on disk.

        A change is only news when the session now finds the file stale: semfora's own commit of
        some of a file's hunks also changes it on disk, and leaves the file's other hunks staged.
        """
        touched = {f.path for f in self.diff.files} & set(paths)
        if not touched:
            return
        self.session_job(
            self.bridge.staged_files,
            lambda files: self._show_reloaded(files, touched),
            quiet=True,
            view_only=True,
        )

    def _show_reloaded(self, files: tuple[FileView, ...], among: set[str] | None = None) -> None:
        """Show the staged files as read again, and warn about those (``among`` the paths given)
        that have just become stale: changed on disk by someone else since they were staged."""
        known = {f.path for f in self.diff.files if f.conflict}
        if files != self.diff.files:
            self.show_staged(files)
        stale = sorted(
            f.path for f in files if f.conflict and f.path not in known and (among is None or f.path in among)
        )
        if stale:
            self.notify(
                f"{plural(len(stale), 'staged file')} changed on disk: "
                + ", ".join(stale)
                + f". /rebase re-applies {'its' if len(stale) == 1 else 'their'} hunks.",
                severity="warning",
            )

    # -- the prompt -----------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self.bridge.history.add(event.text)
        if slash.is_command(event.text):
            await self.run_slash(event.text)
        else:
            await self.ask(event.text)

    def on_prompt_bar_mention_query(self, event: PromptBar.MentionQuery) -> None:
        if self._mention_timer is not None:
            self._mention_timer.stop()
        query = event.query
        self._mention_timer = self.set_timer(MENTION_DEBOUNCE, lambda: self._mention_worker(query))

    @work(thread=True, group="mention", exclusive=True, exit_on_error=False)
    def _mention_worker(self, query: str) -> None:
        if self._files is None:
            self._files = self.bridge.list_files()
        needle = query.lower()
        files = [f for f in self._files if needle in f.lower()]
        files.sort(key=lambda f: (not Path(f).name.lower().startswith(needle), len(f)))
        mentions = [Mention(f"file   {f}", f) for f in files[:PICKER_LIMIT]]
        if len(query) >= 2:
            hits, _error = attempt(lambda: self.bridge.search(query, mode="symbols", limit=PICKER_LIMIT))
            # One entry per name: `@name` reads the same whichever file defines it.
            where: dict[str, list[str]] = {}
            for hit in hits or ():
                if hit.symbol:
                    where.setdefault(hit.symbol, []).append(hit.file)
            for name, files_of in where.items():
                place = files_of[0] if len(files_of) == 1 else plural(len(set(files_of)), "file")
                mentions.append(Mention(f"symbol {name}  ({place})", name))
        self.post_message(self.MentionsFound(query, mentions))

    def on_main_screen_mentions_found(self, message: MentionsFound) -> None:
        self.prompt_bar.show_mentions(message.query, message.mentions)

    def prefill_prompt(self, text: str) -> None:
        self.prompt.load_text(text)
        self.prompt.move_cursor(self.prompt.document.end)
        self.leave_review()

    async def run_slash(self, text: str) -> None:
        from semfora_tui.commands import handler_for

        try:
            parsed = slash.parse(text)
            await handler_for(parsed.name)(self, parsed)
        except SemforaError as err:
            await self.show_error(err)

    # -- conversation ---------------------------------------------------------------------------

    def _waiting_reason(self) -> str | None:
        """Why a question cannot go out now (it is queued), or None when it can."""
        if self.streaming:
            return "sent when the current reply ends"
        if self.indexing and not self.index_ready:
            return f"waiting for the index ({self.index_phase or 'starting'})"
        return None

    async def ask(self, task: str) -> None:
        if self.offline:
            await self.chat.add_user(task)
            await self.note(
                "No model is available, so this was not sent: " + self.offline_reason + "\n\n"
                "Try `/context " + task.replace("`", "'") + "` to see the context pack semfora would send."
            )
            return
        reason = self._waiting_reason()
        if reason is not None or self.queue:
            line = await self.chat.add_user(task, queued=reason or "after the messages before it")
            self.queue.append(Queued(task, line))
            self.refresh_keys()
            return
        line = await self.chat.add_user(task)
        await self._start_turn(task, line)

    async def pump_queue(self) -> None:
        """Send the oldest queued message once nothing holds it back."""
        if not self.queue or self._waiting_reason() is not None:
            return
        queued = self.queue.popleft()
        queued.line.mark_sent()
        self.refresh_keys()
        if self.offline:
            await self.note(
                "No model is available, so this queued message was not sent. " + self.offline_reason
            )
            return
        await self._start_turn(queued.task, queued.line)

    async def _start_turn(self, task: str, line: UserMessage) -> None:
        turn = await self.chat.start_reply()
        self.turn, self.turn_line = turn, line
        turn.start_stream()
        self._cancel = threading.Event()
        self._feed = TurnFeed()
        self.streaming = True
        self.refresh_bindings()
        self.refresh_keys()
        self._flush_timer = self.set_interval(STREAM_FLUSH_INTERVAL, self._flush_feed)
        self._turn_worker(turn, task, self._feed, self._cancel)

    @work(thread=True, group="turn", exit_on_error=False)
    def _turn_worker(self, turn: ReplyTurn, task: str, feed: TurnFeed, cancel: threading.Event) -> None:
        result, error = attempt(
            lambda: self.bridge.run_turn(task, feed.text, cancel, feed.status, feed.phase)
        )
        self.post_message(self.TurnFinished(turn, result, error))

    async def _flush_feed(self) -> None:
        async with self._feed_lock:
            await self._drain_feed()

    async def _drain_feed(self) -> None:
        turn = self.turn
        items = self._feed.drain()
        if turn is None or turn.cancelled:
            return
        for item in items:
            if isinstance(item, Status):
                await turn.step(item.message)
            elif isinstance(item, Phase):
                turn.waiting(item.message)
            else:
                await turn.write(item)

    async def _end_stream(self) -> None:
        # Take the lock first: stopping the timer cancels a flush it is running, and a flush
        # cancelled between two mounts would leave the reply half rearranged.
        async with self._feed_lock:
            if self._flush_timer is not None:
                self._flush_timer.stop()
                self._flush_timer = None
            await self._drain_feed()
            if self.turn is not None:
                await self.turn.stop_stream()
        self.streaming = False
        self.refresh_bindings()
        self.refresh_keys()

    async def on_main_screen_turn_finished(self, message: TurnFinished) -> None:
        turn = message.turn
        if turn is self.turn and self.streaming:
            await self._end_stream()
        if message.result is not None:
            await self._turn_done(turn, message.result)
        elif message.error is not None:
            await self._turn_failed(turn, message.error)
        await self.pump_queue()

    async def _turn_done(self, turn: ReplyTurn, result: TurnResult) -> None:
        cost = cost_from_result(result)
        self.turns += 1
        self.session_cost += cost.cost
        self.session_usage = TurnCost(
            self.session_usage.input_tokens + cost.input_tokens,
            self.session_usage.output_tokens + cost.output_tokens,
            self.session_cost,
        )
        self.header.session_cost = self.session_cost
        view = pack_from_engine(result.pack)
        self.last_pack = view
        await turn.set_context(view)
        self.budget_pane.show_pack(view)
        self.budget_pane.show_cost(cost, self.session_cost)
        for warning in view.warnings:  # e.g. vectors unavailable: the pack is poorer
            await self.note(f"_{warning}_")
        if turn.cancelled:
            return  # the user cancelled it; "cancelled" is already written under the reply
        if not turn.source.strip() and result.reply:
            await turn.set_text(result.reply)
        await turn.mark(_outcome_line(result))
        if result.outcome == "edit_failed":
            problems = "\n".join(f"- {e}" for e in result.errors)
            # "after 0 retries" it said of a refusal no retry could change (a deny-listed file).
            after = f" after {plural(result.edit_retries, 'retry', 'retries')}" if result.edit_retries else ""
            advice = (
                "Edit that file yourself: semfora never writes a file on the deny-list."
                if result.error_code == "SECRET_PATH_DENIED"
                else "Ask again with more detail, or stage blocks yourself with `/edit --from FILE`."
            )
            await self.chat.add_note(
                f"**The edit could not be staged**{after}; nothing was changed.\n\n{problems}\n\n{advice}",
                kind="error",
            )
        elif result.outcome not in ("cancelled",) and result.errors:
            await self.chat.add_note("\n".join(f"**problem**: {e}" for e in result.errors), kind="error")
        if result.edits_staged:
            self.refresh_staged()

    async def _turn_failed(self, turn: ReplyTurn, err: SemforaError) -> None:
        if turn.cancelled:
            return
        if err.code == "MODEL_CANCELLED":
            turn.cancelled = True
            await turn.mark("cancelled")
            return
        await self._show_failed_pack(turn, err)
        partial = str(getattr(err, "partial_text", "") or "")
        if partial and not turn.source:
            await turn.set_text(partial)
        await turn.mark(f"✗ failed: error[{err.code}]")
        await self.show_error(err)

    async def _show_failed_pack(self, turn: ReplyTurn, err: SemforaError) -> None:
        """The budget pane shows what the failed turn sent (or that it sent nothing): after a
        failure it went on showing the turn before's pack and cost as if they were this one's."""
        from engine.api import ContextPack

        pack = err.context_pack
        if isinstance(pack, ContextPack):
            view = pack_from_engine(pack)
            self.last_pack = view
            await turn.set_context(view)
            self.budget_pane.show_pack(view)
        else:
            self.budget_pane.show_no_pack("the last turn failed before its context pack was built")
        self.budget_pane.show_cost(TurnCost(), self.session_cost, failed=True)

    async def action_cancel_stream(self) -> None:
        turn = self.turn
        if not self.streaming or turn is None:
            return
        self._cancel.set()
        turn.cancelled = True
        await self._end_stream()
        await turn.mark("cancelled")
        await self.pump_queue()

    # -- the staged session ---------------------------------------------------------------------

    def refresh_staged(self) -> None:
        self.session_job(self.bridge.staged_files)

    def show_staged(self, files: tuple[FileView, ...]) -> None:
        """Show a new state of the session. The focus stays where the user put it."""
        self.diff.show(files)
        self.refresh_keys()

    def on_diff_pane_hunk_action(self, event: DiffPane.HunkAction) -> None:
        hunk_id, action = event.hunk_id, event.action
        self.session_job(lambda: self.bridge.hunk_action(hunk_id, action))
        self.refresh_keys()  # the pane shows the decision already (`c` may apply now)

    def on_diff_pane_file_action(self, event: DiffPane.FileAction) -> None:
        path, action = event.path, event.action
        self.session_job(lambda: self.bridge.file_action(path, action))
        self.refresh_keys()

    def on_diff_pane_commit_requested(self, _event: DiffPane.CommitRequested) -> None:
        from semfora_tui.commands.review import request_commit

        request_commit(self)

    def on_diff_pane_undo_requested(self, _event: DiffPane.UndoRequested) -> None:
        from semfora_tui.commands.review import request_undo

        request_undo(self, force=False)

    async def on_diff_pane_keys_help_requested(self, _event: DiffPane.KeysHelpRequested) -> None:
        from semfora_tui.commands.session import KEYS_HELP

        await self.note(KEYS_HELP)

    def on_diff_pane_rollback_requested(self, _event: DiffPane.RollbackRequested) -> None:
        from semfora_tui.commands.review import request_rollback

        request_rollback(self)

    def on_diff_pane_rebase_requested(self, _event: DiffPane.RebaseRequested) -> None:
        from semfora_tui.commands.review import rebase

        rebase(self)

    async def on_diff_pane_edit_requested(self, event: DiffPane.EditRequested) -> None:
        from semfora_tui.commands.review import request_edit

        await request_edit(self, event.path, event.line)


def _changed_since(files: tuple[FileView, ...]) -> str:
    """The sentence on staged files changed on disk since they were staged (said at start: the
    watcher only tells of changes while the app runs), or ""."""
    stale = [f.path for f in files if f.conflict]
    if not stale:
        return ""
    names = ", ".join(code(p) for p in stale)
    its = "its" if len(stale) == 1 else "their"
    return f"\n\n**Changed on disk since:** {names}. `/rebase` (or `b` in review) re-applies {its} hunks."


def _outcome_line(result: TurnResult) -> str:
    """The last line under a reply: how the turn ended, and the retries it took."""
    extra = []
    if result.need_rounds:
        extra.append(plural(result.need_rounds, "NEED round"))
    if result.edit_retries:
        extra.append(plural(result.edit_retries, "edit retry", "edit retries"))
    tail = f" ({', '.join(extra)})" if extra else ""
    if result.outcome == "staged":
        files = ", ".join(result.edits_staged)
        return f"✓ staged {plural(result.hunks, 'hunk')} in {files}{tail} — F2 or /review to review"
    if result.outcome == "edit_failed":
        return f"✗ edit failed{tail}"
    if result.outcome == "cancelled":
        return "cancelled"
    if result.errors:
        return f"⚠ answered with a problem{tail}"
    return f"✓ answered{tail}"
