"""The conversation column: user messages, notes from semfora, and model replies.

It owns ordering and scrolling (anchored to the bottom while a reply streams). Reply
and note widgets live in ``reply.py`` and are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

if TYPE_CHECKING:
    from semfora_tui.widgets.reply import Note, ReplyTurn


class UserMessage(Static):
    """One message the user sent."""


class ChatPane(VerticalScroll):
    """A scrolling column of messages, anchored to the bottom while streaming."""

    can_focus = True

    async def add_user(self, text: str) -> None:
        await self.mount(UserMessage(Text("› " + text), classes="user"))
        self.scroll_end(animate=False)

    async def add_note(self, markdown: str, *, kind: str = "info") -> Note:
        from semfora_tui.widgets.reply import Note

        note = Note(markdown, classes=f"note -{kind}")
        await self.mount(note)
        self.scroll_end(animate=False)
        return note

    async def start_reply(self) -> ReplyTurn:
        from semfora_tui.widgets.reply import ReplyTurn

        turn = ReplyTurn()
        await self.mount(turn)
        self.anchor()
        return turn

    async def clear(self) -> None:
        await self.remove_children()

    def transcript(self) -> str:
        """Plain text of the conversation, for tests and copying."""
        from semfora_tui.widgets.reply import Note, ReplyTurn

        parts: list[str] = []
        for child in self.children:
            if isinstance(child, UserMessage):
                parts.append(str(child.render()))
            elif isinstance(child, Note | ReplyTurn):
                parts.append(child.source)
        return "\n".join(parts)
