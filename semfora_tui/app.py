"""The semfora Textual app: layout, slash commands and the workers that call the engine.

Owns what the user sees and the order of events; every blocking engine call goes
through ``EngineBridge`` inside a thread worker, and results come back to the UI
thread with ``call_from_thread``. It holds no engine logic of its own.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.app import App, ComposeResult, SuspendNotSupported
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer

from engine.errors import NotFoundError, SemforaError, UsageError
from semfora_tui import slash
from semfora_tui.engine_bridge import EngineBridge, EngineUnavailable
from semfora_tui.screens.confirm import ConfirmScreen
from semfora_tui.screens.picker import PickerScreen, PickItem
from semfora_tui.theming import DEFAULT_THEME, SEMFORA_VARIABLE_DEFAULTS, load_themes
from semfora_tui.views import FileView, PackView, TurnCost, cost_from_result
from semfora_tui.widgets.budget_pane import BudgetPane
from semfora_tui.widgets.chat import ChatPane
from semfora_tui.widgets.diff_pane import DiffPane
from semfora_tui.widgets.header import StatusHeader
from semfora_tui.widgets.prompt import PromptBar, PromptInput

if TYPE_CHECKING:
    from textual.command import Provider

    from semfora_tui.widgets.reply import ReplyTurn

# Seconds between two flushes of streamed text into the Markdown widget: often
# enough to look live, rare enough that 5,000 tokens never starve the input.
STREAM_FLUSH_INTERVAL = 1 / 20
# watchfiles waits this long for a burst of saves to settle before re-indexing.
WATCH_DEBOUNCE_MS = 300
# Results shown in the `@` picker and by /search.
PICKER_LIMIT = 30

OFFLINE_NOTICE = """\
**Offline: no model can be used.** {reason}

What works without a model: `/search`, `/symbol`, `/overview`, `/diff`, reviewing staged edits \
(`/preview` and the diff-pane keys), `/context`, and staging edits from a file with `/edit --from FILE`.

To enable reasoning, set `ANTHROPIC_API_KEY` for Claude, or choose a local model with \
`/model ollama/qwen2.5-coder:7b` (or `llm.model` in config.toml) and start Ollama.
"""


def _internal(exc: Exception) -> SemforaError:
    """An unexpected exception from the engine, as an error the chat can show."""
    return SemforaError(f"{exc.__class__.__name__}: {exc}", code="INTERNAL")


def _error_markdown(err: SemforaError) -> str:
    text = f"**error[{err.code}]**: {err.message}"
    if err.hint and err.hint not in err.message:
        text += f"  \n_{err.hint}_"
    return text


def _slash_commands() -> type[Provider]:
    """The palette provider, imported when the palette first opens (not for the first frame)."""
    from semfora_tui.palette import SlashCommandProvider

    return SlashCommandProvider


class SemforaApp(App[int]):
    """Chat, diff preview and context budget for one repository."""

    CSS_PATH = Path(__file__).with_name("app.tcss")
    TITLE = "semfora"
    COMMANDS = App.COMMANDS | {_slash_commands}
    BINDINGS = [
        Binding("escape,ctrl+c", "cancel_stream", "Cancel reply", priority=True),
        Binding("f2", "focus_diff", "Review diff"),
        Binding("f3", "focus_prompt", "Prompt"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(
        self,
        root: Path,
        *,
        model: str | None = None,
        budget: int | None = None,
        resume: bool = False,
        start_index: bool = True,
        watch: bool | None = None,
        check_model: bool = True,
    ) -> None:
        super().__init__()
        self.bridge = EngineBridge(Path(root), model=model, budget=budget)
        self.resume = resume
        self.start_index = start_index
        self.watch_enabled = self.bridge.settings.index.watch if watch is None else watch
        self.check_model = check_model
        self.offline: bool | None = None
        self.offline_reason = ""
        self.streaming = False
        self.session_cost = 0.0
        self.session_usage = TurnCost()
        self.turns = 0
        self.last_pack: PackView | None = None
        self.theme_problems: tuple[str, ...] = ()
        self._register_themes()
        self.index_summary = "index: starting" if start_index else "index: not refreshed (/index)"
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._pending: list[str] = []
        self._pending_lock = threading.Lock()
        self._turn: ReplyTurn | None = None
        self._flush_timer: Any = None

    # -- layout ---------------------------------------------------------------------------------

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(SEMFORA_VARIABLE_DEFAULTS)

    def compose(self) -> ComposeResult:
        yield StatusHeader(id="header")
        with Horizontal(id="main"):
            yield ChatPane(id="chat")
            with Vertical(id="side"):
                yield DiffPane(id="diff")
                yield BudgetPane(id="budget")
        yield PromptBar(id="prompt-bar")
        yield Footer()

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

    def on_mount(self) -> None:
        self._report_theme_problems()
        header = self.header
        header.repo = self.bridge.root.name
        header.model = self.bridge.model
        header.index_state = self.index_summary
        self.diff.border_title = "staged changes"
        self.budget_pane.border_title = "context budget"
        self.chat.border_title = "chat"
        self.budget_pane.set_budget(self.bridge.budget)
        self.prompt.past = self.bridge.history.load()
        self.prompt.focus()
        # Nothing heavy before the first frame: the workers import tree-sitter, anthropic and
        # friends, and would compete with the first paint for the interpreter.
        self.call_after_refresh(self._start_background_work)

    def _start_background_work(self) -> None:
        self._background(self.bridge.branch, self._set_branch, group="branch")
        if self.check_model:
            self._background(self.bridge.reasoning_status, self._set_reasoning, group="model")
        if self.start_index:
            self.start_indexing(rebuild=False)
        if self.watch_enabled:
            self.run_worker(self._watch_disk, thread=True, group="watch", exit_on_error=False)
        self._background(self.bridge.open_session, self._session_opened, group="session", quiet=True)
        if self.resume:
            self.call_later(self.run_slash, "/resume")

    def on_unmount(self) -> None:
        self._stop.set()
        self._cancel.set()
        self.bridge.close()

    def _register_themes(self) -> None:
        """Register built-in and user themes and pick the configured one.

        Called from ``__init__``: choosing the theme before the first CSS pass saves a
        second pass (and a visible flash) at start-up.
        """
        loaded = load_themes()
        for theme in loaded.themes:
            self.register_theme(theme)
        self.theme_problems = loaded.problems
        wanted = self.bridge.settings.ui.theme
        if wanted not in self.available_themes:
            self.theme_problems += (f"unknown theme {wanted!r} in ui.theme; using {DEFAULT_THEME}",)
            wanted = DEFAULT_THEME
        self.theme = wanted

    def _report_theme_problems(self) -> None:
        if self.theme_problems:
            self.notify(
                "Skipped invalid theme file(s):\n" + "\n".join(self.theme_problems),
                title="Themes",
                severity="error",
                timeout=10,
            )

    # -- workers --------------------------------------------------------------------------------

    def _background(
        self,
        job: Callable[[], Any],
        done: Callable[[Any], Awaitable[None] | None],
        *,
        group: str = "engine",
        exclusive: bool = False,
        quiet: bool = False,
    ) -> None:
        """Run ``job`` in a thread; hand its result (or its typed error) back to the UI thread.

        ``quiet`` jobs (start-up probes) log their errors instead of writing them in the chat.
        """

        def run() -> None:
            try:
                result = job()
            except SemforaError as err:
                if quiet:
                    self._from_thread(self.log.warning, f"{group}: error[{err.code}] {err.message}")
                else:
                    self._from_thread(self.show_error, err)
                return
            except Exception as exc:  # noqa: BLE001 - the worker boundary: any failure is shown, not lost
                self._from_thread(self.show_error, _internal(exc))
                return
            self._from_thread(done, result)

        self.run_worker(run, thread=True, group=group, exclusive=exclusive, exit_on_error=False)

    def _from_thread(self, callback: Callable[..., Any], *args: Any) -> None:
        if self._stop.is_set():
            return
        try:
            self.call_from_thread(callback, *args)
        except RuntimeError:
            # The app closed while the worker was finishing; nobody is left to show the result.
            self._stop.set()

    async def show_error(self, err: SemforaError) -> None:
        await self.chat.add_note(_error_markdown(err), kind="error")

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
            await self.chat.add_note(OFFLINE_NOTICE.format(reason=description), kind="offline")
        self.refresh_bindings()

    async def show_error_offline(self, err: SemforaError) -> None:
        await self._set_reasoning((False, err.message))

    # -- indexing -------------------------------------------------------------------------------

    def start_indexing(self, *, rebuild: bool) -> None:
        self.header.index_state = "index: rebuilding" if rebuild else "index: indexing"
        last = {"pct": -1}

        def progress(_message: str, done: int, total: int) -> None:
            pct = int(done * 100 / total) if total else 100
            if pct != last["pct"]:
                last["pct"] = pct
                self._from_thread(self.header.show_progress, done, total)

        def job() -> Any:
            return self.bridge.index(rebuild=rebuild, progress=progress)

        def run() -> None:
            try:
                report = job()
            except SemforaError as err:
                self._from_thread(self._index_failed, err)
                return
            except Exception as exc:  # noqa: BLE001 - the worker boundary: any failure is shown, not lost
                self._from_thread(self._index_failed, _internal(exc))
                return
            self._from_thread(self._index_done, report)

        self.run_worker(run, thread=True, group="index", exclusive=True, exit_on_error=False)

    async def _index_failed(self, err: SemforaError) -> None:
        self.header.hide_progress()
        self.index_summary = f"index: unavailable ({err.code})"
        self.header.index_state = self.index_summary
        if not isinstance(err, EngineUnavailable):
            self.notify(err.message, title="Indexing failed", severity="error")
            await self.chat.add_note(
                f"**Indexing failed** — {_error_markdown(err)}\n\n`/index --rebuild` tries again from scratch.",
                kind="error",
            )

    def _index_done(self, report: Any) -> None:
        self.header.hide_progress()
        files = getattr(report, "files", "?")
        symbols = getattr(report, "symbols", "?")
        self.index_summary = f"index: {files} files · {symbols} symbols · FTS ready"
        self.header.index_state = self.index_summary
        if self.bridge.settings.search.embedding != "none":
            self._start_vectors()
        else:
            self.header.vectors = "vectors off"

    def _start_vectors(self) -> None:
        self.header.vectors = "vectors 0%"

        last = {"pct": -1}

        def progress(_message: str, done: int, total: int) -> None:
            pct = int(done * 100 / total) if total else 100
            if pct != last["pct"]:
                last["pct"] = pct
                self._from_thread(setattr, self.header, "vectors", f"vectors {pct}%")

        def run() -> None:
            try:
                report = self.bridge.build_vectors(progress, self._stop)
            except SemforaError as err:
                self._from_thread(setattr, self.header, "vectors", f"vectors off ({err.code})")
                return
            state = "vectors ready" if getattr(report, "enabled", True) else "vectors off"
            self._from_thread(setattr, self.header, "vectors", state)

        self.run_worker(run, thread=True, group="vectors", exclusive=True, exit_on_error=False)

    def _watch_disk(self) -> None:
        """Follow the working tree; re-index incrementally after each debounced burst."""
        import watchfiles

        root = self.bridge.root
        skip = set(self.bridge.settings.index.exclude_dirs) | {".git"}

        def wanted(_change: watchfiles.Change, path: str) -> bool:
            rel = Path(path).relative_to(root) if path.startswith(str(root)) else Path(path)
            return not any(part in skip for part in rel.parts)

        for changes in watchfiles.watch(
            root,
            watch_filter=wanted,
            debounce=WATCH_DEBOUNCE_MS,
            stop_event=self._stop,
            raise_interrupt=False,
        ):
            paths = sorted({str(Path(p).relative_to(root)) for _c, p in changes if p.startswith(str(root))})
            report = None
            try:
                report = self.bridge.index(rebuild=False)
            except SemforaError as err:
                self._from_thread(self._index_failed, err)
            except Exception as exc:  # noqa: BLE001 - keep following the disk after a failed re-index
                self._from_thread(self._index_failed, _internal(exc))
            if report is not None:
                self._from_thread(self._index_done_quiet, report)
            self._from_thread(self._files_changed, paths)

    def _index_done_quiet(self, report: Any) -> None:
        files = getattr(report, "files", "?")
        symbols = getattr(report, "symbols", "?")
        self.index_summary = f"index: {files} files · {symbols} symbols · FTS ready"
        self.header.index_state = self.index_summary
        vectors_running = any(w.group == "vectors" and w.is_running for w in self.workers)
        if self.bridge.settings.search.embedding != "none" and not vectors_running:
            self._start_vectors()  # incremental: only the changed chunks are embedded again

    def _files_changed(self, paths: list[str]) -> None:
        staged = {f.path for f in self.diff.files}
        if staged & set(paths):
            self._background(self.bridge.staged_files, self._show_staged_quiet, group="session")
            self.notify(
                "A staged file changed on disk: " + ", ".join(sorted(staged & set(paths))), severity="warning"
            )

    # -- the prompt -----------------------------------------------------------------------------

    async def on_prompt_input_submitted(self, event: PromptInput.Submitted) -> None:
        self.bridge.history.add(event.text)
        if slash.is_command(event.text):
            await self.run_slash(event.text)
        else:
            await self.ask(event.text)

    def on_prompt_input_mention_requested(self, event: PromptInput.MentionRequested) -> None:
        def source(query: str) -> list[PickItem]:
            needle = query.lower()
            files = [f for f in self.bridge.list_files() if needle in f.lower()][:PICKER_LIMIT]
            items = [PickItem(f"file   {f}", f) for f in files]
            if query.strip():
                try:
                    hits = self.bridge.search(query, mode="symbols", limit=PICKER_LIMIT)
                except EngineUnavailable:
                    hits = []
                for hit in hits:
                    name = getattr(hit, "symbol", None) or ""
                    if name:
                        items.append(PickItem(f"symbol {name}  ({getattr(hit, 'file', '')})", name))
            return items

        def chosen(item: PickItem | None) -> None:
            if item is not None:
                self.prompt.insert_mention(item.value)
            self.prompt.focus()

        self.push_screen(PickerScreen("@ file or symbol", source), chosen)

    def prefill_prompt(self, text: str) -> None:
        self.prompt.load_text(text)
        self.prompt.move_cursor(self.prompt.document.end)
        self.prompt.focus()

    async def run_slash_from_palette(self, text: str) -> None:
        await self.run_slash(text)

    async def run_slash(self, text: str) -> None:
        try:
            parsed = slash.parse(text)
        except slash.UnknownCommand as err:
            await self.show_error(err)
            return
        handler = getattr(self, f"cmd_{parsed.name}")
        try:
            await handler(parsed)
        except SemforaError as err:
            await self.show_error(err)

    # -- conversation ---------------------------------------------------------------------------

    async def ask(self, task: str) -> None:
        await self.chat.add_user(task)
        if self.streaming:
            await self.note("A reply is still streaming; press esc to cancel it first.")
            return
        if self.offline:
            await self.note(
                "No model is available, so this was not sent. " + self.offline_reason + "\n\n"
                "Try `/context " + task.replace("`", "'") + "` to see the context pack semfora would send."
            )
            return
        await self._start_turn(task)

    async def _start_turn(self, task: str) -> None:
        turn = await self.chat.start_reply()
        self._turn = turn
        turn.start_stream()
        self._cancel = threading.Event()
        self.streaming = True
        self.refresh_bindings()
        self._flush_timer = self.set_interval(STREAM_FLUSH_INTERVAL, self._flush_stream)
        cancel = self._cancel

        def on_text(chunk: str) -> None:
            with self._pending_lock:
                self._pending.append(chunk)

        def on_status(message: str) -> None:
            self._from_thread(self.notify, message, title="semfora")

        def run() -> None:
            try:
                result = self.bridge.run_turn(task, on_text, cancel, on_status)
            except SemforaError as err:
                self._from_thread(self._turn_failed, turn, err)
                return
            except Exception as exc:  # noqa: BLE001 - a turn must always end, or the prompt stays blocked
                self._from_thread(self._turn_failed, turn, _internal(exc))
                return
            self._from_thread(self._turn_done, turn, result)

        self.run_worker(run, thread=True, group="turn", exit_on_error=False)

    async def _flush_stream(self) -> None:
        with self._pending_lock:
            text = "".join(self._pending)
            self._pending.clear()
        if text and self._turn is not None and not self._turn.cancelled:
            await self._turn.write(text)

    async def _end_stream(self) -> None:
        if self._flush_timer is not None:
            self._flush_timer.stop()
            self._flush_timer = None
        await self._flush_stream()
        if self._turn is not None:
            await self._turn.stop_stream()
        self.streaming = False
        self.refresh_bindings()

    async def _turn_done(self, turn: ReplyTurn, result: Any) -> None:
        if turn is self._turn and not turn.cancelled:
            await self._end_stream()
            reply = getattr(result, "reply", "") or ""
            if not turn.source.strip() and reply:
                await turn.set_text(reply)
        cost = cost_from_result(result)
        self.turns += 1
        self.session_cost += cost.cost
        self.session_usage = TurnCost(
            self.session_usage.input_tokens + cost.input_tokens,
            self.session_usage.output_tokens + cost.output_tokens,
            self.session_cost,
        )
        self.header.session_cost = self.session_cost
        pack = getattr(result, "pack", None)
        if pack is not None:
            view = self._pack_view(pack)
            self.last_pack = view
            await turn.set_context(view)
            self.budget_pane.show_pack(view)
        self.budget_pane.show_cost(cost, self.session_cost)
        for error in getattr(result, "errors", ()) or ():
            await self.note(f"**edit problem**: {error}")
        if getattr(result, "edits_staged", 0):
            self._background(self.bridge.staged_files, self._show_staged_focus, group="session")

    def _pack_view(self, pack: Any) -> PackView:
        from semfora_tui.views import pack_from_engine

        return pack if isinstance(pack, PackView) else pack_from_engine(pack)

    async def _turn_failed(self, turn: ReplyTurn, err: SemforaError) -> None:
        if turn.cancelled:
            return
        await self._end_stream()
        partial = getattr(err, "partial_text", "")
        if err.code == "MODEL_CANCELLED":
            turn.cancelled = True
            await turn.mark("cancelled")
            return
        if partial and not turn.source:
            await turn.set_text(partial)
        await self.show_error(err)

    async def action_cancel_stream(self) -> None:
        turn = self._turn
        if not self.streaming or turn is None:
            return
        self._cancel.set()
        turn.cancelled = True
        await self._end_stream()
        await turn.mark("cancelled")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "cancel_stream":
            return self.streaming
        return True

    def action_focus_diff(self) -> None:
        self.diff.focus()

    def action_focus_prompt(self) -> None:
        self.prompt.focus()

    # -- the diff pane --------------------------------------------------------------------------

    async def _session_opened(self, opened: tuple[Any, tuple[FileView, ...]]) -> None:
        recovery, files = opened
        if recovery is not None:
            await self.note(f"An interrupted commit was rolled back at start-up: {recovery}")
        self.diff.show(files)

    def _show_staged_quiet(self, files: tuple[FileView, ...]) -> None:
        self.diff.show(files)

    def _show_staged_focus(self, files: tuple[FileView, ...]) -> None:
        self.diff.show(files)
        if files:
            self.diff.focus()

    def on_diff_pane_hunk_action(self, event: DiffPane.HunkAction) -> None:
        self._background(
            lambda: self.bridge.hunk_action(event.hunk_id, event.action),
            self._show_staged_quiet,
            group="session",
        )

    def on_diff_pane_file_action(self, event: DiffPane.FileAction) -> None:
        self._background(
            lambda: self.bridge.file_action(event.path, event.action),
            self._show_staged_quiet,
            group="session",
        )

    def on_diff_pane_commit_requested(self, _event: DiffPane.CommitRequested) -> None:
        self.request_commit()

    def on_diff_pane_undo_requested(self, _event: DiffPane.UndoRequested) -> None:
        self._do_undo()

    def on_diff_pane_rollback_requested(self, _event: DiffPane.RollbackRequested) -> None:
        self.request_rollback()

    def on_diff_pane_edit_requested(self, event: DiffPane.EditRequested) -> None:
        self.open_editor(event.path, event.line)

    def request_commit(self) -> None:
        files, hunks = self.diff.totals()
        if not hunks:
            self.notify("No accepted hunks to commit: accept some with a, A or /accept.", severity="warning")
            return
        pending = sum(f.count("pending") for f in self.diff.files)
        question = f"Commit {hunks} accepted hunk(s) in {files} file(s)?"
        if pending:
            question += f"\n{pending} pending hunk(s) stay staged."

        def answered(yes: bool | None) -> None:
            if yes:
                self._background(self.bridge.commit, self._committed, group="session")

        self.push_screen(ConfirmScreen(question, yes="Commit"), answered)

    async def _committed(self, result: Any) -> None:
        if not getattr(result, "committed", True):
            await self.note(str(getattr(result, "message", "nothing was committed")))
        else:
            files = ", ".join(f"`{f}`" for f in getattr(result, "files", ()) or ())
            message = getattr(result, "message", "committed")
            await self.note(f"{message.capitalize()}: {files}. `u` or `/undo` reverts it.")
        self._background(self.bridge.staged_files, self._show_staged_quiet, group="session")

    def request_rollback(self) -> None:
        if not self.diff.files:
            self.notify("Nothing is staged.", severity="warning")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._background(self.bridge.rollback, self._rolled_back, group="session")

        hunks = sum(len(f.hunks) for f in self.diff.files)
        self.push_screen(
            ConfirmScreen(f"Discard the staged session ({hunks} hunk(s))?", yes="Discard"), answered
        )

    async def _rolled_back(self, _result: Any) -> None:
        await self.note("Staged session discarded.")
        self._background(self.bridge.staged_files, self._show_staged_quiet, group="session")

    def _do_undo(self) -> None:
        self._background(self.bridge.undo, self._undone, group="session")

    async def _undone(self, result: Any) -> None:
        files = ", ".join(f"`{f}`" for f in getattr(result, "files", ()) or ())
        await self.note(f"Undid the last commit{': ' + files if files else ''}.")
        self._background(self.bridge.staged_files, self._show_staged_quiet, group="session")

    def open_editor(self, path: str, line: int) -> None:
        """Open ``path`` at ``line`` in $VISUAL/$EDITOR, suspending the app while it runs."""
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        target = (self.bridge.root / path).resolve()
        if not target.is_relative_to(self.bridge.root):
            self.notify(f"{path} is outside the repository.", severity="error")
            return
        command = [*shlex.split(editor), f"+{line}", str(target)]
        try:
            with self.suspend():
                subprocess.run(command, check=False)
        except SuspendNotSupported:
            # Headless runs (tests, web) cannot hand over the terminal; run it detached from it.
            subprocess.run(command, check=False, stdin=subprocess.DEVNULL, capture_output=True)
        except OSError as exc:
            self.notify(f"Cannot start {editor}: {exc.strerror}", severity="error")
            return
        self._background(self.bridge.staged_files, self._show_staged_quiet, group="session")

    # -- slash commands -------------------------------------------------------------------------

    async def cmd_help(self, _cmd: slash.ParsedCommand) -> None:
        rows = "\n".join(f"| `{c.usage}` | {c.help} |" for c in slash.COMMANDS)
        keys = (
            "Diff pane (F2): `n`/`p` or `j`/`k` hunk, `N`/`P` file, `a`/`r`/`space` accept/reject/toggle, "
            "`A`/`R` whole file, `c` commit, `u` undo, `x` rollback, `e` open in $EDITOR."
        )
        await self.note(
            f"| command | does |\n|---|---|\n{rows}\n\n{keys}\n\nctrl+p opens the command palette."
        )

    async def cmd_quit(self, _cmd: slash.ParsedCommand) -> None:
        self.exit(0)

    async def cmd_clear(self, _cmd: slash.ParsedCommand) -> None:
        await self.chat.clear()

    async def cmd_cost(self, _cmd: slash.ParsedCommand) -> None:
        turn = self.budget_pane.turn
        total = self.session_usage
        await self.note(
            f"**Last turn:** {turn.input_tokens:,} input / {turn.output_tokens:,} output tokens, ${turn.cost:.4f}  \n"
            f"**Session:** {self.turns} turn(s), {total.input_tokens:,} input / {total.output_tokens:,} output tokens, "
            f"${self.session_cost:.4f}"
        )

    async def cmd_budget(self, cmd: slash.ParsedCommand) -> None:
        if not cmd.args:
            await self.note(
                f"Context budget: {self.bridge.budget:,} tokens per request. `/budget N` changes it."
            )
            return
        try:
            value = int(cmd.args[0].replace(",", "").replace("_", ""))
        except ValueError as exc:
            raise UsageError(f"/budget needs a number of tokens, not {cmd.args[0]!r}") from exc
        self.bridge.set_budget(value)
        self.budget_pane.set_budget(value)
        await self.note(f"Context budget set to {value:,} tokens.")

    async def cmd_model(self, cmd: slash.ParsedCommand) -> None:
        if not cmd.args:
            state = "offline: " + self.offline_reason if self.offline else self.offline_reason or "checking"
            await self.note(f"Model: `{self.bridge.model}` — {state}")
            return
        name = cmd.args[0]
        self.header.model = name

        def switched(status: tuple[bool, str]) -> Awaitable[None]:
            return self._model_switched(name, status)

        self._background(lambda: self.bridge.set_model(name), switched, group="model")

    async def _model_switched(self, name: str, status: tuple[bool, str]) -> None:
        usable, description = status
        was_offline = self.offline
        self.offline = not usable
        self.offline_reason = description
        self.header.offline = not usable
        self.header.model = name
        if usable:
            await self.note(f"Model switched to `{name}`: {description}")
        else:
            await self.note(f"Model set to `{name}`, but it cannot be used: {description}")
        if was_offline and usable:
            self.notify("Reasoning enabled.")

    async def cmd_theme(self, cmd: slash.ParsedCommand) -> None:
        if not cmd.args:
            names = ", ".join(f"`{n}`" for n in sorted(self.available_themes))
            await self.note(f"Theme: `{self.theme}`. Available: {names}")
            return
        name = cmd.args[0]
        if name not in self.available_themes:
            suggestion = slash.difflib.get_close_matches(name, list(self.available_themes), n=1)
            hint = f" Did you mean `{suggestion[0]}`?" if suggestion else ""
            raise UsageError(f"unknown theme {name!r}.{hint}")
        self.theme = name
        from engine.config import save_user_setting

        path = save_user_setting("ui.theme", name)
        await self.note(f"Theme `{name}` saved in `{path}`.")

    async def cmd_index(self, cmd: slash.ParsedCommand) -> None:
        rebuild = "--rebuild" in cmd.args
        self.start_indexing(rebuild=rebuild)
        await self.note("Rebuilding the index…" if rebuild else "Re-indexing changed files…")

    async def cmd_status(self, _cmd: slash.ParsedCommand) -> None:
        if self.offline is None:
            model = "checking"
        else:
            model = ("offline — " if self.offline else "") + self.offline_reason
        pack = self.last_pack
        pack_line = f"{pack.total_tokens:,} tokens in {len(pack.items)} items" if pack else "no pack yet"
        staged = sum(len(f.hunks) for f in self.diff.files)
        await self.note(
            f"- **repository:** `{self.bridge.root}` ({self.header.branch or 'no branch'})\n"
            f"- **model:** `{self.bridge.model}` — {model}\n"
            f"- **{self.index_summary}**{' · ' + self.header.vectors if self.header.vectors else ''}\n"
            f"- **budget:** {self.bridge.budget:,} tokens per request; last pack {pack_line}\n"
            f"- **memory:** {self.turns} turn(s) this session, ${self.session_cost:.4f}\n"
            f"- **staged:** {len(self.diff.files)} file(s), {staged} hunk(s)"
        )

    async def cmd_context(self, cmd: slash.ParsedCommand) -> None:
        if cmd.rest:
            self._background(lambda: self.bridge.context(cmd.rest), self._show_context, group="context")
            return
        if self.last_pack is None:
            await self.note("No context pack yet. `/context TASK` builds one without calling a model.")
            return
        await self._show_context(self.last_pack)

    async def _show_context(self, pack: PackView) -> None:
        self.last_pack = pack
        self.budget_pane.show_pack(pack)
        rows = "\n".join(
            f"| {i.kind} | {i.name.replace('|', '/')} | {i.tokens:,} | {i.priority} | {i.reason.replace('|', '/')} |"
            for i in pack.items
        )
        await self.note(
            f"**Context pack** for _{pack.task}_ — intent `{pack.intent}`, {pack.total_tokens:,} of "
            f"{pack.budget:,} tokens, {len(pack.items)} items\n\n"
            f"| kind | name | tokens | priority | reason |\n|---|---|---:|---|---|\n{rows}"
        )

    async def cmd_search(self, cmd: slash.ParsedCommand) -> None:
        if not cmd.rest:
            raise UsageError("/search needs a query, e.g. /search parse config")
        query = cmd.rest
        self._background(
            lambda: self.bridge.search(query, limit=PICKER_LIMIT),
            lambda hits: self._show_search(query, hits),
            group="search",
        )

    async def _show_search(self, query: str, hits: list[Any]) -> None:
        if not hits:
            await self.note(f"No results for _{query}_.")
            return
        items: list[PickItem] = []
        lines: list[str] = []
        for hit in hits:
            file = getattr(hit, "file", "")
            symbol = getattr(hit, "symbol", None) or ""
            start = getattr(hit, "start_line", 1) or 1
            end = getattr(hit, "end_line", start) or start
            score = float(getattr(hit, "score", 0.0) or 0.0)
            label = f"{file}:{start}  {symbol}  ({score:.3f})"
            items.append(PickItem(label, f"{file}\t{symbol}\t{start}\t{end}"))
            lines.append(f"- `{file}:{start}` {symbol}")
        await self.note(f"**{len(hits)} result(s)** for _{query}_:\n" + "\n".join(lines))

        def chosen(item: PickItem | None) -> None:
            if item is not None:
                file, symbol, start, end = item.value.split("\t")
                self.open_result(file, symbol, int(start), int(end))
            self.prompt.focus()

        self.push_screen(PickerScreen(f"/search {query}", lambda _q: items, items=items), chosen)

    def open_result(self, file: str, symbol: str, start: int, end: int) -> None:
        """Show the symbol's source (or the hit's lines) in the chat."""

        def job() -> str:
            source: dict[str, Any] | None = None
            if symbol:
                try:
                    source = self.bridge.symbol_source(symbol)
                except NotFoundError:
                    source = None  # the index moved on since the search; show the hit's own lines
            return self._source_markdown(source, file) if source else self._file_lines(file, start, end)

        self._background(job, self.note, group="open")

    def _file_lines(self, file: str, start: int, end: int) -> str:
        target = (self.bridge.root / file).resolve()
        if not target.is_relative_to(self.bridge.root):
            raise UsageError(f"{file} is outside the repository")
        lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
        body = "\n".join(lines[start - 1 : max(end, start)])
        return f"`{file}:{start}-{end}`\n\n```{_fence_language(file)}\n{body}\n```"

    def _source_markdown(self, source: dict[str, Any], file: str) -> str:
        file = source.get("file") or file
        where = f"{file}:{source.get('start_line', '?')}-{source.get('end_line', '?')}"
        body = source.get("source", "")
        return f"`{source.get('symbol', '')}` — `{where}`\n\n```{_fence_language(file)}\n{body}\n```"

    async def cmd_symbol(self, cmd: slash.ParsedCommand) -> None:
        if not cmd.rest:
            raise UsageError("/symbol needs a name or id, e.g. /symbol Config.load")
        self._background(
            lambda: self.bridge.symbols(cmd.rest),
            lambda found: self._show_symbols(cmd.rest, found),
            group="symbol",
        )

    async def _show_symbols(self, name: str, found: list[dict[str, Any]]) -> None:
        blocks: list[str] = []
        for sym in found:
            qualified = sym.get("qualified_name") or sym.get("name") or name
            where = f"{sym.get('file', '?')}:{sym.get('start_line', '?')}-{sym.get('end_line', '?')}"
            lines = [
                f"### `{qualified}` ({sym.get('kind', '?')})",
                f"`{where}` · risk {sym.get('risk', '?')}",
            ]
            if sym.get("doc"):
                lines.append(f"_{sym['doc']}_")
            lines.append(f"```\n{sym.get('signature') or qualified}\n```")
            calls = ", ".join(f"`{c['name']}`" for c in sym.get("calls", [])[:12])
            callers = ", ".join(
                f"`{c['name']}` ({c['file']}:{c['line']})" for c in sym.get("callers", [])[:8]
            )
            if calls:
                lines.append(f"**calls:** {calls}")
            if callers:
                lines.append(f"**called by:** {callers}")
            blocks.append("\n\n".join(lines))
        await self.note("\n\n".join(blocks))

    async def cmd_overview(self, _cmd: slash.ParsedCommand) -> None:
        self._background(
            self.bridge.overview,
            lambda text: self.note(f"**Repository overview**\n\n```\n{text}\n```"),
            group="overview",
        )

    async def cmd_diff(self, cmd: slash.ParsedCommand) -> None:
        base = cmd.args[0] if cmd.args else None
        target = cmd.args[1] if len(cmd.args) > 1 else None
        self._background(
            lambda: self.bridge.semantic_diff(base, target), self._show_semantic_diff, group="diff"
        )

    async def _show_semantic_diff(self, result: Any) -> None:
        render = getattr(result, "to_text", None)
        text = render() if callable(render) else str(result)
        await self.note(f"**Semantic diff**\n\n```\n{text}\n```")

    async def cmd_edit(self, cmd: slash.ParsedCommand) -> None:
        if cmd.args[:1] == ("--from",):
            if len(cmd.args) < 2:
                raise UsageError("/edit --from needs a file of SEARCH/REPLACE blocks")
            source = cmd.args[1]
            self._background(
                lambda: self.bridge.stage_from_file(source), self._staged_from_file, group="session"
            )
            return
        if not cmd.rest:
            raise UsageError("/edit needs a task, or --from FILE")
        await self.ask(cmd.rest)

    async def _staged_from_file(self, files: tuple[FileView, ...]) -> None:
        hunks = sum(len(f.hunks) for f in files)
        await self.note(f"Staged {hunks} hunk(s) in {len(files)} file(s). Review them in the diff pane (F2).")
        self._show_staged_focus(files)

    async def cmd_preview(self, _cmd: slash.ParsedCommand) -> None:
        self._background(self.bridge.staged_files, self._previewed, group="session")

    async def _previewed(self, files: tuple[FileView, ...]) -> None:
        self._show_staged_focus(files)
        if not files:
            await self.note("Nothing is staged.")
            return
        lines = "\n".join(
            f"- `{f.path}` +{f.added} -{f.removed}: {f.count('accepted')} accepted, {f.count('rejected')} rejected, "
            f"{f.count('pending')} pending" + (f" — **conflict**: {f.conflict}" if f.conflict else "")
            for f in files
        )
        await self.note(f"**Staged changes**\n\n{lines}")

    async def _decide(self, cmd: slash.ParsedCommand, action: str) -> None:
        target = cmd.args[0] if cmd.args else None
        if target == "all":
            self._background(
                lambda: self.bridge.accept_all(action == "accept"), self._show_staged_quiet, group="session"
            )
            return
        if target is None:
            current = self.diff.current
            if current is None:
                raise UsageError(f"nothing selected: /{action} HUNK_ID or /{action} all")
            target = current.hunk.id
        hunk_id = target
        self._background(
            lambda: self.bridge.hunk_action(hunk_id, action), self._show_staged_quiet, group="session"
        )

    async def cmd_accept(self, cmd: slash.ParsedCommand) -> None:
        await self._decide(cmd, "accept")

    async def cmd_reject(self, cmd: slash.ParsedCommand) -> None:
        await self._decide(cmd, "reject")

    async def cmd_commit(self, _cmd: slash.ParsedCommand) -> None:
        self.request_commit()

    async def cmd_rollback(self, _cmd: slash.ParsedCommand) -> None:
        self.request_rollback()

    async def cmd_undo(self, _cmd: slash.ParsedCommand) -> None:
        self._do_undo()

    async def cmd_resume(self, _cmd: slash.ParsedCommand) -> None:
        def job() -> tuple[list[str], tuple[FileView, ...]]:
            lines: list[str] = []
            try:
                lines = self.bridge.resume()
            except EngineUnavailable as err:
                lines = [f"(conversation memory unavailable: {err.message})"]
            return lines, self.bridge.staged_files()

        self._background(job, self._resumed, group="session")

    async def _resumed(self, resumed: tuple[list[str], tuple[FileView, ...]]) -> None:
        lines, files = resumed
        self._show_staged_focus(files)
        hunks = sum(len(f.hunks) for f in files)
        summary = "\n".join(lines) if lines else "_no earlier turns_"
        await self.note(
            f"**Resumed the last session.** Staged: {len(files)} file(s), {hunks} hunk(s).\n\n{summary}"
        )


def _fence_language(file: str) -> str:
    return {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust"}.get(
        Path(file).suffix, ""
    )
