"""A yes/no modal asked before anything that changes files or history.

It only answers the question it was given; the caller decides what happens next. Keys
typed before the dialog was on screen never answer it: a `y` or an Enter that was part
of a burst of typing (a paste, a fast typist finishing a sentence) is not consent. Those
early keys are handed to ``on_early_key`` (the prompt takes the printable ones), and the
buttons only appear once the dialog accepts answers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

# A key pressed within this long after the dialog was painted was on its way before the
# user could have read the question (a person needs ~200 ms to see and react).
ARMING_DELAY = 0.15


class ConfirmScreen(ModalScreen[bool]):
    """Ask one question; `y`/enter confirms, `n`/escape declines, once the dialog is armed."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    AUTO_FOCUS = None
    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(
        self,
        question: str,
        *,
        yes: str = "Yes",
        on_early_key: Callable[[events.Key], None] | None = None,
    ) -> None:
        super().__init__()
        self.question = question
        self.yes = yes
        self.on_early_key = on_early_key
        self.armed_at = float("inf")  # time.monotonic() from which keys count as answers
        self.ignored: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(self.question, id="confirm-question", markup=False)
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", variant="primary", id="confirm-yes")
                yield Button("No (n)", id="confirm-no")

    def on_mount(self) -> None:
        self.query_one("#confirm-buttons").display = False
        self.call_after_refresh(self._painted)

    def _painted(self) -> None:
        self.armed_at = time.monotonic() + ARMING_DELAY
        self.set_timer(ARMING_DELAY, self._arm)

    def _arm(self) -> None:
        self.query_one("#confirm-buttons").display = True
        self.set_focus(self.query_one("#confirm-yes", Button))

    @property
    def armed(self) -> bool:
        return time.monotonic() >= self.armed_at

    def on_key(self, event: events.Key) -> None:
        # Runs before any binding of this screen (bindings are checked when the key reaches the app).
        if event.time >= self.armed_at:
            return
        event.stop()
        event.prevent_default()
        self.ignored.append(event.key)
        if self.on_early_key is not None:
            self.on_early_key(event)

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if self.armed:
            self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        if self.armed:
            self.dismiss(answer)
