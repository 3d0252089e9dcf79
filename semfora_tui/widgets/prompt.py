"""The prompt: multi-line entry with history, slash completion and `@` mentions.

Enter submits; shift+enter or ctrl+j inserts a newline; up/down walk the history from
the first/last line; tab completes a slash command or an `@` mention from the list above
the prompt. Suggestions never take a keystroke the user meant as text: they only appear
for a `/` that starts the prompt or an `@` that starts a word, only tab (or a click)
takes one, and escape closes the list without touching the text. The prompt never runs
what it submits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from textual import events
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.message import Message
from textual.widgets import OptionList, TextArea
from textual.widgets.option_list import Option

from semfora_tui import slash
from semfora_tui.chat_text import literal
from semfora_tui.history import HISTORY_LIMIT

# An `@` that starts a word (start of line or after whitespace), then what could be a path
# or a symbol. `bob@example.com` (no word start) and `@app.route(` (the `(` ends the token)
# never match; a match only shows suggestions, it never takes the typing.
MENTION_AT_CURSOR = re.compile(r"(?:^|(?<=\s))@([\w./-]*)$")
# Rows shown in the suggestion list at most.
MAX_SUGGESTIONS = 30
COMMAND_PREFIX = "cmd:"
MENTION_PREFIX = "at:"


@dataclass(frozen=True)
class Mention:
    """One `@` suggestion: what it looks like in the list and what it inserts."""

    label: str
    value: str


def mention_query(line_before_cursor: str) -> str | None:
    """The text after a word-start `@` that ends at the cursor, or None when there is none."""
    match = MENTION_AT_CURSOR.search(line_before_cursor)
    return match.group(1) if match else None


class PromptInput(TextArea):
    """A TextArea that submits on enter."""

    class Submitted(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

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

    def line_before_cursor(self) -> str:
        row, column = self.cursor_location
        return self.document[row][:column]

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
        """Take the highlighted suggestion: a command name, or an `@` mention."""
        option_list = self.completions
        index = option_list.highlighted if option_list.highlighted is not None else 0
        if option_list.option_count:
            chosen = option_list.get_option_at_index(index).id or ""
            if chosen.startswith(COMMAND_PREFIX):
                self.load_text(f"/{chosen.removeprefix(COMMAND_PREFIX)} ")
                self.move_cursor(self.document.end)
            elif chosen.startswith(MENTION_PREFIX):
                self.insert_mention(chosen.removeprefix(MENTION_PREFIX))
        option_list.display = False

    def insert_mention(self, value: str) -> None:
        """Replace the `@partial` that ends at the cursor with ``@value``."""
        row, column = self.cursor_location
        query = mention_query(self.document[row][:column])
        start = column - len(query) - 1 if query is not None else column
        # A path with a space is quoted, the one form the engine reads as one mention (`@src
        # dir/a.py` was sent as "@src" and a stray "dir/a.py", and the file was not attached).
        mention = f'@"{value}"' if any(ch.isspace() for ch in value) else f"@{value}"
        self.replace(f"{mention} ", (row, start), (row, column))


class PromptBar(Vertical):
    """The suggestion list above the prompt, and the prompt."""

    class MentionQuery(Message):
        """The user is typing an `@` mention; the screen looks up ``query`` and calls back."""

        def __init__(self, query: str) -> None:
            super().__init__()
            self.query = query

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mention: str | None = None  # the `@` query the list is showing, if any

    def compose(self) -> ComposeResult:
        yield OptionList(id="completions")
        yield PromptInput(id="prompt")

    def on_mount(self) -> None:
        self.query_one("#completions", OptionList).display = False

    @property
    def suggestions(self) -> OptionList:
        return self.query_one("#completions", OptionList)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self._suggest(event.text_area.text)

    def on_text_area_selection_changed(self, event: TextArea.SelectionChanged) -> None:
        if self.mention is not None:
            self._suggest(event.text_area.text)

    def _suggest(self, text: str) -> None:
        option_list = self.suggestions
        if text.startswith("/") and " " not in text and "\n" not in text:
            self.mention = None
            word = text.strip()
            matches = slash.completions(word)
            if not matches or (len(matches) == 1 and f"/{matches[0].name}" == word):
                option_list.display = False
                return
            self._fill(
                Option(literal(f"{c.usage:<28} {c.help}"), id=COMMAND_PREFIX + c.name) for c in matches
            )
            return
        query = mention_query(self.query_one(PromptInput).line_before_cursor())
        if query is None:
            self.mention = None
            option_list.display = False
            return
        if query != self.mention:
            self.mention = query
            self.post_message(self.MentionQuery(query))

    def show_mentions(self, query: str, mentions: list[Mention]) -> None:
        """The screen's answer to a ``MentionQuery``; stale answers (the user typed on) are dropped."""
        if query != self.mention:
            return
        if not mentions:
            self.suggestions.display = False
            return
        unique = {m.value: m for m in reversed(mentions)}  # an option id may appear once: first wins
        shown = [m for m in mentions if unique.get(m.value) is m][:MAX_SUGGESTIONS]
        self._fill(Option(literal(m.label), id=MENTION_PREFIX + m.value) for m in shown)

    def _fill(self, options: Iterable[Option]) -> None:
        option_list = self.suggestions
        option_list.clear_options()
        option_list.add_options(options)
        option_list.highlighted = 0
        option_list.display = True

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        """A click (or enter inside the list) takes a suggestion like tab does."""
        event.stop()
        prompt = self.query_one(PromptInput)
        prompt.complete()
        self.screen.set_focus(prompt)
