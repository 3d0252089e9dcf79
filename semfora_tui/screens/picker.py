"""A filterable list in a modal: the results of /search.

The caller supplies a blocking ``source(query) -> list[PickItem]`` that runs in a
thread worker on every keystroke (debounced), so lookups never block the UI.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Input, OptionList, Static
from textual.widgets.option_list import Option

# Seconds of typing pause before the source is asked again.
QUERY_DEBOUNCE = 0.15


@dataclass(frozen=True)
class PickItem:
    label: str
    value: str


PickSource = Callable[[str], list[PickItem]]


def filter_items(items: list[PickItem], query: str) -> list[PickItem]:
    """The items whose label holds every word of ``query`` (any case, any order): typing
    ``as_dict`` or ``config timeout`` narrows a result list to the lines that say so."""
    words = query.lower().split()
    return [item for item in items if all(w in item.label.lower() for w in words)]


class PickerScreen(ModalScreen[PickItem | None]):
    """Type to filter, up/down to move, enter to choose, escape to cancel."""

    CSS_PATH = Path(__file__).with_suffix(".tcss")
    BINDINGS = [
        Binding("escape", "dismiss_none", "Cancel"),
        Binding("down", "move(1)", "Down", show=False),
        Binding("up", "move(-1)", "Up", show=False),
    ]

    def __init__(
        self, title: str, source: PickSource, *, query: str = "", items: list[PickItem] | None = None
    ):
        super().__init__()
        self.title_text = title
        self.source = source
        self.initial_query = query
        self.items: list[PickItem] = list(items or [])
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="picker-box"):
            yield Static(self.title_text, id="picker-title")
            yield Input(self.initial_query, placeholder="type to filter", id="picker-input")
            yield OptionList(id="picker-list")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        if self.items:
            self._show(self.items)
        else:
            self._lookup(self.initial_query)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_timer(QUERY_DEBOUNCE, lambda: self._lookup(event.value))

    @work(thread=True, exclusive=True, group="picker")
    def _lookup(self, query: str) -> None:
        try:
            items = self.source(query)
        except Exception as exc:  # noqa: BLE001 - any engine failure is shown in the list, not raised
            self.app.call_from_thread(self._show_error, f"{exc.__class__.__name__}: {exc}")
            return
        self.app.call_from_thread(self._show, items)

    def _show(self, items: list[PickItem]) -> None:
        self.items = items
        option_list = self.query_one(OptionList)
        option_list.clear_options()
        option_list.add_options(Option(item.label, id=str(i)) for i, item in enumerate(items))
        if items:
            option_list.highlighted = 0
        else:
            typed = self.query_one(Input).value.strip()
            option_list.add_option(
                Option(f"nothing matches {typed!r}" if typed else "nothing", disabled=True)
            )

    def _show_error(self, message: str) -> None:
        option_list = self.query_one(OptionList)
        option_list.clear_options()
        option_list.add_option(Option(message, disabled=True))

    def action_move(self, step: int) -> None:
        option_list = self.query_one(OptionList)
        option_list.action_cursor_down() if step > 0 else option_list.action_cursor_up()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._choose(self.query_one(OptionList).highlighted)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self._choose(event.option_index)

    def _choose(self, index: int | None) -> None:
        if index is None or not (0 <= index < len(self.items)):
            return
        self.dismiss(self.items[index])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
