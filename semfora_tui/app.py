"""The semfora Textual app: settings, themes, and the one main screen.

Owns what lives as long as the process: the ``EngineBridge`` (built in ``__init__`` so a
bad config is reported before the terminal switches), the themes, and the quit key. The
layout, the keyboard model and the workers are ``screens/main.py``; the slash commands
are ``semfora_tui/commands``. It holds no engine logic of its own.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.binding import Binding
from textual.message import Message

from engine import config as engine_config
from engine import quarantine
from engine.errors import SemforaError
from engine.words import plural
from semfora_tui.engine_bridge import EngineBridge
from semfora_tui.screens.main import MainScreen
from semfora_tui.theming import DEFAULT_THEME, SEMFORA_VARIABLE_DEFAULTS, load_themes
from semfora_tui.views import summarize_staged

if TYPE_CHECKING:
    from textual.command import Provider

    from semfora_tui.widgets.budget_pane import BudgetPane
    from semfora_tui.widgets.chat import ChatPane
    from semfora_tui.widgets.diff_pane import DiffPane
    from semfora_tui.widgets.header import StatusHeader
    from semfora_tui.widgets.prompt import PromptInput


def _slash_commands() -> type[Provider]:
    """The palette provider, imported when the palette first opens (not for the first frame)."""
    from semfora_tui.palette import SlashCommandProvider

    return SlashCommandProvider


# Titles of the engine's notices in the app.
CONFIG_NOTICE_TITLE = "Repository settings ignored"
STATE_NOTICE_TITLE = "Damaged file set aside"


class EngineNotice(Message):
    """An engine notice to show (posted from any thread: posting never waits for the UI)."""

    def __init__(self, title: str, message: str) -> None:
        super().__init__()
        self.title = title
        self.message = message


class SemforaApp(App[int]):
    """Chat, diff preview and context budget for one repository."""

    # The main screen's stylesheet, loaded by the app: Textual does not load the CSS_PATH of
    # a screen returned by get_default_screen().
    CSS_PATH = MainScreen.CSS_PATH
    TITLE = "semfora"
    COMMANDS = App.COMMANDS | {_slash_commands}
    BINDINGS = [Binding("ctrl+q", "quit", "Quit", priority=True)]
    # Seconds a warning toast stays up: long enough to read a sentence naming a file and a fix.
    NOTICE_TIMEOUT = 15

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
        # Engine notices (a damaged state file set aside, an untrusted repository configuration)
        # reach the user as a toast and a chat note, never as a stderr line under the screen.
        # Those raised before the screen exists wait in ``_pending_notices``.
        self._pending_notices: list[tuple[str, str]] = []
        self._notices_lock = threading.Lock()
        self._previous_config_sink = engine_config.notice_sink
        engine_config.notice_sink = self._config_notice
        quarantine.add_listener(self._state_notice)
        try:
            self.bridge = EngineBridge(Path(root), model=model, budget=budget)
        except BaseException:
            self._stop_notices()
            raise
        if self.bridge.config_notice and not any(
            m == self.bridge.config_notice for _t, m in self._pending_notices
        ):  # already said once in this process: the app still says it
            self._pending_notices.append((CONFIG_NOTICE_TITLE, self.bridge.config_notice))
        self.theme_problems: tuple[str, ...] = ()
        self._register_themes()
        self._screen_options = {
            "resume": resume,
            "start_index": start_index,
            "watch": self.bridge.settings.index.watch if watch is None else watch,
            "check_model": check_model,
        }
        self._main: MainScreen | None = None

    def get_default_screen(self) -> MainScreen:
        # Built here, inside the running app: widgets made before the app runs compose wrongly.
        self._main = MainScreen(self.bridge, **self._screen_options)
        return self._main

    @property
    def main(self) -> MainScreen:
        if self._main is None:
            raise RuntimeError("the main screen exists only while the app runs")
        return self._main

    def exit_notice(self) -> str | None:
        """What stays staged once the app has closed, for the terminal (read from disk: the
        truth, whatever the app showed last). A quit never writes nor drops a staged hunk."""
        try:
            files = self.bridge.staged_files()
        except SemforaError:
            return None
        if not files:
            return None
        s = summarize_staged(files)
        return (
            f"semfora: {plural(s.hunks, 'hunk')} in {s.where} {'stays' if s.hunks == 1 else 'stay'} staged "
            f"({s.states}), not written to the {'file' if s.files == 1 else 'files'}. Open semfora again "
            f"to review {s.them}, or run `semfora edits rollback` to discard {s.them}."
        )

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(SEMFORA_VARIABLE_DEFAULTS)

    def on_mount(self) -> None:
        self.call_after_refresh(self._flush_notices)
        if self.theme_problems:
            self.notify(
                f"Skipped {plural(len(self.theme_problems), 'invalid theme file')}:\n"
                + "\n".join(self.theme_problems),
                title="Themes",
                severity="error",
                timeout=10,
            )

    def on_unmount(self) -> None:
        self._stop_notices()
        self.bridge.close()

    # -- engine notices ------------------------------------------------------------------------------

    def _config_notice(self, message: str) -> None:
        self._notice(CONFIG_NOTICE_TITLE, message)

    def _state_notice(self, message: str) -> None:
        self._notice(STATE_NOTICE_TITLE, message)

    def _screen_ready(self) -> bool:
        main = getattr(self, "_main", None)
        return main is not None and main.is_mounted and self.is_running

    def _flush_notices(self) -> None:
        """Show the notices raised before the main screen was up (once its panes exist)."""
        if not self._screen_ready():
            self.call_after_refresh(self._flush_notices)
            return
        with self._notices_lock:
            pending, self._pending_notices = self._pending_notices, []
        for title, message in pending:
            self._show_notice(title, message)

    def _notice(self, title: str, message: str) -> None:
        """From any thread: show now if the screen runs, else keep it for the first frame."""
        if not self._screen_ready():
            with self._notices_lock:
                self._pending_notices.append((title, message))
        else:
            self.post_message(EngineNotice(title, message))

    def on_engine_notice(self, notice: EngineNotice) -> None:
        self._show_notice(notice.title, notice.message)

    def _show_notice(self, title: str, message: str) -> None:
        self.notify(message, title=title, severity="warning", timeout=self.NOTICE_TIMEOUT)
        self.call_later(self.main.note, f"**{title}.** {message}")

    def _stop_notices(self) -> None:
        quarantine.remove_listener(self._state_notice)
        if engine_config.notice_sink == self._config_notice:
            engine_config.notice_sink = self._previous_config_sink

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

    # -- shortcuts to the main screen's parts (tests and the palette use them) -----------------------

    @property
    def chat(self) -> ChatPane:
        return self.main.chat

    @property
    def diff(self) -> DiffPane:
        return self.main.diff

    @property
    def budget_pane(self) -> BudgetPane:
        return self.main.budget_pane

    @property
    def header(self) -> StatusHeader:
        return self.main.header

    @property
    def prompt(self) -> PromptInput:
        return self.main.prompt
