"""A model reply in the chat: streamed Markdown segments and the turn's context summary.

Imported on first use (it pulls in the Markdown parser), so the first frame does not pay
for it. Streaming goes through ``Markdown.get_stream`` so a chunk appends to the document
instead of re-rendering all of it.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets._markdown import MarkdownStream

from semfora_tui.views import PackView

# Items listed when a turn's context summary is expanded; the rest is in /context.
MAX_LISTED_ITEMS = 40
# A streamed reply moves on to a new Markdown widget after about this many characters:
# appending re-lays-out the widget it goes to, so bounded widgets keep appends cheap.
SEGMENT_CHARS = 1500


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


class Note(Markdown):
    """A message from semfora itself (command output, errors, offline notice)."""


class FrozenSegment(Static):
    """A finished part of a long reply, rendered once."""

    source = ""


class ReplyTurn(Vertical):
    """One model reply: its streamed Markdown and, once known, its context summary.

    A long reply is split into several Markdown widgets (see ``SEGMENT_CHARS``), so
    appending the 5,000th token costs what appending the 50th did.
    """

    def __init__(self) -> None:
        super().__init__(classes="reply")
        self.segments: list[Markdown] = [Markdown("", classes="reply-body")]
        self.frozen: list[FrozenSegment] = []
        self.cancelled = False
        self._stream: MarkdownStream | None = None
        self._segment_text = ""
        self._fencer = EditBlockFencer()

    def compose(self) -> ComposeResult:
        yield self.segments[0]

    @property
    def source(self) -> str:
        return "".join(part.source for part in self.frozen) + self.segments[-1].source

    def start_stream(self) -> None:
        self._stream = Markdown.get_stream(self.segments[-1])

    async def write(self, text: str) -> None:
        """Append streamed text, opening a new segment at a paragraph break when this one is long."""
        if self._stream is None:
            return
        await self._append(self._fencer.feed(text))

    async def _append(self, text: str) -> None:
        if self._stream is None or not text:
            return
        base = len(self._segment_text)
        self._segment_text += text
        if len(self._segment_text) >= SEGMENT_CHARS:
            cut = _paragraph_break(self._segment_text, base)
            if cut is not None:
                head, tail = text[: cut - base], text[cut - base :]
                if head:
                    await self._stream.write(head)
                await self._stream.stop()
                await self._freeze(self.segments[-1])
                segment = Markdown("", classes="reply-body")
                await self.mount(segment, after=self.children[-1])
                self.segments.append(segment)
                self._stream = Markdown.get_stream(segment)
                self._segment_text = tail
                if tail:
                    await self._stream.write(tail)
                return
        await self._stream.write(text)

    async def _freeze(self, segment: Markdown) -> None:
        """Swap a finished segment for one Static: a Markdown widget is a tree of blocks that
        every layout pass walks again, while a Static's height is cached."""
        from rich.markdown import Markdown as RichMarkdown

        frozen = FrozenSegment(RichMarkdown(segment.source), classes="reply-frozen")
        frozen.source = segment.source
        await self.mount(frozen, after=segment)
        await segment.remove()
        self.frozen.append(frozen)

    async def stop_stream(self) -> None:
        if self._stream is not None:
            await self._append(self._fencer.flush())
            await self._stream.stop()
            self._stream = None

    async def set_text(self, markdown: str) -> None:
        """Show a whole reply at once (when nothing was streamed)."""
        fencer = EditBlockFencer()
        await self.segments[-1].update(fencer.feed(markdown) + fencer.flush())

    async def set_context(self, pack: PackView) -> None:
        listing = Static(pack_listing(pack), classes="context-items")
        await self.mount(
            Collapsible(listing, title=pack_summary(pack), collapsed=True, classes="context-summary"),
            before=self.children[0],
        )

    async def mark(self, status: str) -> None:
        await self.mount(Static(status, classes="turn-status"))


class EditBlockFencer:
    """Wraps the SEARCH/REPLACE and SYMBOL blocks of a streamed reply in code fences.

    Unfenced, Markdown would turn ``=======`` into a heading rule and ``>>>>>>>`` into
    nested quotes. Text streams through at once, except the start of a line that could
    be a marker (it waits for the end of that line).
    """

    # A line starting with one of these may be a marker or a fence: hold it until it is whole.
    MAY_BE_MARKER = ("<", ">", "=", "`", "~")

    def __init__(self) -> None:
        self._partial = ""
        self._mid_line = False  # the start of the current line has been passed through already
        self._in_fence = False  # inside the model's own code fence
        self._in_block = False  # inside an edit block we fenced

    def feed(self, text: str) -> str:
        out: list[str] = []
        for piece in text.splitlines(keepends=True):
            if self._mid_line:
                out.append(piece)
                self._mid_line = not piece.endswith("\n")
                continue
            self._partial += piece
            if self._partial.endswith("\n"):
                out.append(self._line(self._partial))
                self._partial = ""
            elif not self._partial.startswith(self.MAY_BE_MARKER):
                out.append(self._partial)
                self._partial = ""
                self._mid_line = True
        return "".join(out)

    def flush(self) -> str:
        """The held text, and a closing fence if the reply stopped inside a block."""
        rest = self._line(self._partial) if self._partial else ""
        self._partial = ""
        if self._in_block:
            self._in_block = False
            rest += ("" if not rest or rest.endswith("\n") else "\n") + "```\n"
        return rest

    def _line(self, line: str) -> str:
        if self._in_block:
            if line.startswith(">>>>>>> REPLACE"):
                self._in_block = False
                return line + ("" if line.endswith("\n") else "\n") + "```\n"
            return line
        if line.lstrip().startswith(("```", "~~~")):
            self._in_fence = not self._in_fence
            return line
        if not self._in_fence and line.startswith(("<<<<<<< SEARCH", "<<<<<<< SYMBOL")):
            self._in_block = True
            return "```text\n" + line
        return line


def _paragraph_break(text: str, start: int) -> int | None:
    """The end of the last blank-line break at or after ``start`` that is outside a code fence."""
    at = text.rfind("\n\n", start)
    while at != -1:
        cut = at + 2
        fences = sum(1 for line in text[:cut].splitlines() if line.lstrip().startswith(("```", "~~~")))
        if fences % 2 == 0:
            return cut
        at = text.rfind("\n\n", start, at)
    return None
