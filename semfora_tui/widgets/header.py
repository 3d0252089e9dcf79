"""The top bar: repository, branch, model, index state and session cost.

It only displays what the app tells it through its reactive attributes; it
never asks the engine anything itself.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.widgets import ProgressBar, Static

SEPARATOR = " │ "


class StatusHeader(Horizontal):
    """One line of state plus a progress bar that shows while indexing."""

    repo: reactive[str] = reactive("")
    branch: reactive[str] = reactive("")
    model: reactive[str] = reactive("")
    offline: reactive[bool] = reactive(False)
    index_state: reactive[str] = reactive("index: starting")
    vectors: reactive[str] = reactive("")
    session_cost: reactive[float] = reactive(0.0)

    def compose(self) -> ComposeResult:
        yield Static(id="header-text")
        yield ProgressBar(total=100, show_eta=False, id="index-progress")

    def on_mount(self) -> None:
        self.query_one("#index-progress", ProgressBar).display = False
        self._render_text()

    def watch_repo(self) -> None:
        self._render_text()

    watch_branch = watch_model = watch_offline = watch_index_state = watch_vectors = watch_session_cost = (
        watch_repo
    )

    def _render_text(self) -> None:
        if not self.is_mounted:
            return
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(" semfora ", style="bold reverse")
        text.append(f" {self.repo}", style="bold")
        if self.branch:
            text.append(f" ⎇ {self.branch}")
        text.append(SEPARATOR)
        if self.offline:
            text.append("offline (no model)", style="bold")
        else:
            text.append(self.model or "model: checking")
        text.append(SEPARATOR)
        text.append(self.index_state)
        if self.vectors:
            # The reason vectors are off is /status's to tell: the bar keeps room for the cost.
            text.append(" · " + ("vectors off" if self.vectors.startswith("vectors off") else self.vectors))
        text.append(SEPARATOR)
        text.append(f"${self.session_cost:.4f}", style="bold")
        self.query_one("#header-text", Static).update(text)

    def show_progress(self, done: int, total: int) -> None:
        bar = self.query_one("#index-progress", ProgressBar)
        bar.display = True
        bar.update(total=total or None, progress=done)  # no total yet: an indeterminate bar

    def hide_progress(self) -> None:
        self.query_one("#index-progress", ProgressBar).display = False
