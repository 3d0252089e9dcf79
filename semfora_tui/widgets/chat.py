"""The conversation: user messages, streamed Markdown replies and notes.

Each reply carries a collapsed one-line summary of the context pack it used;
expanding it lists the items. Streaming goes through ``Markdown.get_stream``
so a chunk appends to the document instead of re-rendering all of it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Collapsible, Markdown, Static

from semfora_tui.views import PackView

# Items listed when a turn's context summary is expanded; the rest is in /context.
MAX_LISTED_ITEMS = 40


def pack_summary(pack: PackView) -> str:
    return f"context: {len(pack.items)} items · {pack.total_tokens:,}/{pack.budget:,} tokens · intent {pack.intent}"


def pack_listing(pack: PackView) -> Text:
    text = Text()
    for item in pack.items[:MAX_LISTED_ITEMS]:
        text.append(f"{item.priority:<8} ", style="bold")
        text.append(f"{item.kind:<8} {item.name}  ")
        text.append(f"{item.tokens:,} tok", style="dim")
        if item.reason:
            text.append(f"  — {item.reason}", style="italic dim")
        text.append("\n")
    if len(pack.items) > MAX_LISTED_ITEMS:
        text.append(f"… {len(pack.items) - MAX_LISTED_ITEMS} more (see /context)\n", style="dim")
    return text


class UserMessage(Static):
    pass


class Note(Markdown):
    """A message from semfora itself (command output, errors, offline notice)."""


class ReplyTurn(Vertical):
    """One model reply: its streamed Markdown and, once known, its context summary."""

    def __init__(self) -> None:
        super().__init__(classes="reply")
        self.markdown = Markdown("", classes="reply-body")
        self.cancelled = False

    def compose(self) -> ComposeResult:
        yield self.markdown

    async def set_context(self, pack: PackView) -> None:
        listing = Static(pack_listing(pack), classes="context-items")
        await self.mount(
            Collapsible(listing, title=pack_summary(pack), collapsed=True, classes="context-summary"),
            before=self.markdown,
        )

    async def mark(self, status: str) -> None:
        await self.mount(Static(status, classes="turn-status"))


class ChatPane(VerticalScroll):
    """A scrolling column of messages, anchored to the bottom while streaming."""

    can_focus = True

    async def add_user(self, text: str) -> None:
        await self.mount(UserMessage(Text("› " + text), classes="user"))
        self.scroll_end(animate=False)

    async def add_note(self, markdown: str, *, kind: str = "info") -> Note:
        note = Note(markdown, classes=f"note -{kind}")
        await self.mount(note)
        self.scroll_end(animate=False)
        return note

    async def start_reply(self) -> ReplyTurn:
        turn = ReplyTurn()
        await self.mount(turn)
        self.anchor()
        return turn

    async def clear(self) -> None:
        await self.remove_children()

    def transcript(self) -> str:
        """Plain text of the conversation, for tests and copying."""
        parts: list[str] = []
        for child in self.children:
            if isinstance(child, UserMessage):
                parts.append(str(child.render()))
            elif isinstance(child, Markdown):
                parts.append(child.source)
            elif isinstance(child, ReplyTurn):
                parts.append(child.markdown.source)
        return "\n".join(parts)
