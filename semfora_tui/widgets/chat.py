"""The conversation column: user messages, notes from semfora, and model replies.

It owns ordering and scrolling (anchored to the bottom while a reply streams). Reply
and note widgets live in ``reply.py`` and are imported on first use. A message the
user sends while a reply streams (or while the index rebuilds) shows as queued until
it is sent.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.widgets import Static

from semfora_tui.chat_text import plain_text

if TYPE_CHECKING:
    from semfora_tui.widgets.reply import Note, ReplyTurn, TableNote


# A note shown as a toast (the chat hidden) stays this long at least, longer when it is long.
TOAST_SECONDS = 6.0
TOAST_CHARS_PER_SECOND = 25

# A pasted log or traceback is sent whole, but shown folded: its first and last lines around a
# count, so one paste does not push the conversation out of the chat.
FOLD_ABOVE_LINES = 12
FOLD_HEAD_LINES = 8
FOLD_TAIL_LINES = 2


def _folded(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= FOLD_ABOVE_LINES:
        return text
    hidden = len(lines) - FOLD_HEAD_LINES - FOLD_TAIL_LINES
    return "\n".join(
        [*lines[:FOLD_HEAD_LINES], f"  … {hidden:,} more lines (sent in full) …", *lines[-FOLD_TAIL_LINES:]]
    )


class UserMessage(Static):
    """One message the user sent (or queued)."""

    def __init__(self, text: str, *, queued: str | None = None) -> None:
        super().__init__(classes="user")
        self.text = text
        self.queued = queued
        self._draw()

    def _draw(self) -> None:
        line = Text("› " + _folded(self.text))
        if self.queued:
            line.append(f"  ⏳ queued: {self.queued}", style="italic dim")
        self.set_class(bool(self.queued), "-queued")
        self.update(line)

    def mark_sent(self) -> None:
        self.queued = None
        self._draw()

    @property
    def plain(self) -> str:
        return "› " + self.text + (f"  ⏳ queued: {self.queued}" if self.queued else "")


class ChatPane(VerticalScroll):
    """A scrolling column of messages, anchored to the bottom while streaming.

    It never takes the keyboard (a click on it must not swallow what the user types next);
    the mouse wheel and ctrl+up / ctrl+down scroll it.
    """

    can_focus = False

    async def add_user(self, text: str, *, queued: str | None = None) -> UserMessage:
        message = UserMessage(text, queued=queued)
        await self.mount(message)
        self.scroll_end(animate=False)
        return message

    async def add_note(self, markdown: str, *, kind: str = "info") -> Note:
        from semfora_tui.widgets.reply import Note

        note = Note(markdown, classes=f"note -{kind}")
        await self.mount(note)
        self.scroll_end(animate=False)
        if not self.display:
            # Review mode under 120 columns hides the chat: `?`, a commit's note or an error of
            # `e` said nothing the user could see. The note is a toast as well.
            self.app.notify(
                plain_text(markdown),
                markup=False,
                severity="error" if kind == "error" else "information",
                timeout=max(TOAST_SECONDS, len(markdown) / TOAST_CHARS_PER_SECOND),
            )
        return note

    async def add_table(self, renderable: RenderableType, plain: str) -> TableNote:
        """Output that is a wide table (a Rich renderable); ``plain`` is its text for the transcript."""
        from semfora_tui.widgets.reply import TableNote

        note = TableNote(renderable, plain, classes="note -table")
        await self.mount(note)
        self.scroll_end(animate=False)
        return note

    async def start_reply(self, *, live: bool = True) -> ReplyTurn:
        from semfora_tui.widgets.reply import ReplyTurn

        turn = ReplyTurn(live=live)
        await self.mount(turn)
        self.anchor()
        return turn

    async def clear(self, *, keep: Collection[Widget] = ()) -> None:
        """Remove every message but those in ``keep`` (a reply still being written, and the
        message it answers: the turn writes into it until it ends)."""
        await self.remove_children([child for child in self.children if child not in keep])

    def transcript(self) -> str:
        """Plain text of the conversation, for tests and copying."""
        from semfora_tui.widgets.reply import Note, ReplyTurn, TableNote

        parts: list[str] = []
        for child in self.children:
            if isinstance(child, UserMessage):
                parts.append(child.plain)
            elif isinstance(child, Note | TableNote):
                parts.append(child.source)
            elif isinstance(child, ReplyTurn):
                parts.append(child.transcript())
        return "\n".join(parts)
