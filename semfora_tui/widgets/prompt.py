"""The prompt: multi-line entry with history, slash completion and the `@` trigger.

Enter submits; shift+enter or ctrl+j inserts a newline; up/down walk the history
from the first/last line; tab completes a slash command. Typing `@` asks the app
to open the file/symbol picker. The prompt never runs what it submits.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from semfora_tui import slash
from semfora_tui.history import HISTORY_LIMIT


class PromptInput(TextArea):
    """A TextArea that submits on enter."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    class MentionRequested(Message):
        """The user typed `@`: open the picker and insert its choice."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, soft_wrap=True, show_line_numbers=False, tab_behavior="focus")
        self.past: list[str] = []
        self._history_index: int | None = None
        self._draft = ""

    @property
    def completions(self) -> OptionList:
        return self.screen.query_one("#completions", OptionList)

    def _completion_visible(self) -> bool:
        try:
            return bool(self.completions.display)
        except NoMatches:  # the list only exists inside a PromptBar
            return False

    async def _on_key(self, event: events.Key) -> None:
        key = event.key
        handled = True
        if key == "enter":
            self.submit()
        elif key in ("shift+enter", "ctrl+j", "newline"):
            start, end = self.selection
            self._replace_via_keyboard("\n", start, end)
        elif key == "tab" and self._completion_visible():
            self.complete()
        elif key in ("up", "down") and self._completion_visible():
            option_list = self.completions
            option_list.action_cursor_up() if key == "up" else option_list.action_cursor_down()
        elif key == "up" and self.cursor_at_first_line:
            self.history_step(-1)
        elif key == "down" and self.cursor_at_last_line and self._history_index is not None:
            self.history_step(1)
        elif key == "escape" and self._completion_visible():
            self.completions.display = False
        else:
            handled = False
        if handled:
            event.stop()
            event.prevent_default()
            return
        await super()._on_key(event)
        if event.character == "@":
            self.post_message(self.MentionRequested())

    def submit(self) -> None:
        text = self.text.strip()
        if not text:
            return
        if not self.past or self.past[-1] != text:
            self.past.append(text)
            del self.past[:-HISTORY_LIMIT]
        self._history_index = None
        self.clear()
        self.post_message(self.Submitted(text))

    def history_step(self, step: int) -> None:
        if not self.past:
            return
        if self._history_index is None:
            if step > 0:
                return
            self._draft = self.text
            index = len(self.past) - 1
        else:
            index = self._history_index + step
        if index >= len(self.past):
            self._history_index = None
            self.load_text(self._draft)
        else:
            self._history_index = max(index, 0)
            self.load_text(self.past[self._history_index])
        self.move_cursor(self.document.end)

    def complete(self) -> None:
        option_list = self.completions
        index = option_list.highlighted if option_list.highlighted is not None else 0
        if option_list.option_count:
            name = option_list.get_option_at_index(index).id
            self.load_text(f"/{name} ")
            self.move_cursor(self.document.end)
        option_list.display = False

    def insert_mention(self, value: str) -> None:
        """Replace the `@` just typed with ``@value``."""
        row, column = self.cursor_location
        line = self.document[row]
        if column and line[column - 1] == "@":
            self.replace(f"@{value} ", (row, column - 1), (row, column))
        else:
            self.insert(f"@{value} ")


class PromptBar(Vertical):
    """The completion list above the prompt, and the prompt."""

    def compose(self) -> ComposeResult:
        yield OptionList(id="completions")
        yield PromptInput(id="prompt")

    def on_mount(self) -> None:
        self.query_one("#completions", OptionList).display = False

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        text = event.text_area.text
        option_list = self.query_one("#completions", OptionList)
        word = text.strip()
        if not (text.startswith("/") and " " not in text and "\n" not in text):
            option_list.display = False
            return
        matches = slash.completions(word)
        if not matches or (len(matches) == 1 and f"/{matches[0].name}" == word):
            option_list.display = False
            return
        option_list.clear_options()
        option_list.add_options(Option(f"{c.usage:<28} {c.help}", id=c.name) for c in matches)
        option_list.highlighted = 0
        option_list.display = True
