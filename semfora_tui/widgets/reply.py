"""A model reply in the chat: streamed Markdown segments, the turn's steps and its context.

Imported on first use (it pulls in the Markdown parser), so the first frame does not pay
for it. Streamed text is appended with ``Markdown.append`` (a chunk extends the document
instead of re-rendering all of it); the screen batches chunks 20 times a second and never
runs two appends at once, which is the batching ``Markdown.get_stream`` would add.
"""

from __future__ import annotations

from pygments.token import Token
from rich.console import RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.content import Content
from textual.highlight import ANSIDarkHighlightTheme, HighlightTheme
from textual.widget import Widget
from textual.widgets import Collapsible, Markdown, Static
from textual.widgets.markdown import MarkdownFence

from semfora_tui.views import PackView

# Items listed when a turn's context summary is expanded; the rest is in /context.
MAX_LISTED_ITEMS = 40
# A streamed reply moves on to a new Markdown widget after about this many characters:
# appending re-lays-out the widget it goes to, so bounded widgets keep appends cheap.
SEGMENT_CHARS = 1500
# The spinner of a running turn: braille frames, 8 a second (smooth, and cheap to redraw).
SPINNER_FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SPINNER_INTERVAL = 1 / 8
# An edit block shows this many lines of each side in the chat; the rest are folded into one
# line (a 300-line new file streamed whole into the chat; the diff pane shows all of it).
FOLD_AFTER = 24
WAITING_TEXT = "building the context pack…"


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


class DiffHighlightTheme(HighlightTheme):
    """Textual's code colours, plus the two a diff needs (its theme leaves them plain)."""

    STYLES = {
        **HighlightTheme.STYLES,
        Token.Generic.Inserted: "$text-success",
        Token.Generic.Deleted: "$text-error",
        Token.Generic.Subheading: "$text-primary",
    }


class AnsiDiffHighlightTheme(HighlightTheme):
    """The same in the terminal's own colours (``ansi_color`` mode)."""

    STYLES = {
        **ANSIDarkHighlightTheme.STYLES,
        Token.Generic.Inserted: "ansi_green",
        Token.Generic.Deleted: "ansi_red",
        Token.Generic.Subheading: "ansi_blue",
    }


class ReplyFence(MarkdownFence):
    """A code fence of a reply: an edit block (a ``diff`` fence) shows removed lines red and
    added lines green. Long lines wrap: the chat pane is narrow, and a fence that scrolls
    sideways hid the end of every long line (the chat has no sideways scrolling key)."""

    DEFAULT_CSS = """
    ReplyFence {
        overflow-x: hidden;
        & > Label {
            width: 1fr;
            text-wrap: wrap;
        }
    }
    """

    @classmethod
    def highlight(cls, code: str, language: str, ansi: bool = False, dark: bool = False) -> Content:
        if language != "diff":
            return super().highlight(code, language, ansi=ansi, dark=dark)
        from textual.highlight import highlight

        return highlight(code, language="diff", theme=AnsiDiffHighlightTheme if ansi else DiffHighlightTheme)


class ReplyMarkdown(Markdown):
    """The Markdown of a model reply (its fences know diffs)."""

    BLOCKS = {**Markdown.BLOCKS, "fence": ReplyFence, "code_block": ReplyFence}


class Note(Markdown):
    """A message from semfora itself (command output, errors, offline notice)."""


class TableNote(Static):
    """Command output that is a table too wide for Markdown (it would wrap each cell)."""

    def __init__(self, renderable: RenderableType, plain: str, *, classes: str = "") -> None:
        super().__init__(renderable, classes=classes)
        self.source = plain


class FrozenSegment(Static):
    """A finished part of a long reply, rendered once."""

    # The padding of Textual's Markdown: a reply's text keeps one left edge as its parts freeze.
    DEFAULT_CSS = """
    FrozenSegment {
        padding: 0 2;
    }
    """

    source = ""


class ReplyLine(Static):
    """A line semfora adds to a reply: a step (a retry, a NEED round) or how the turn ended."""

    def __init__(self, text: str, *, classes: str) -> None:
        super().__init__(Text(text), classes=classes)
        self.plain = text


class TurnSpinner(Static):
    """The spinner line of a running turn: what it is doing now."""

    def __init__(self, message: str) -> None:
        super().__init__(classes="turn-working")
        self.message = message
        self._frame = 0

    def on_mount(self) -> None:
        self.set_interval(SPINNER_INTERVAL, self._tick)
        self._show()

    def say(self, message: str) -> None:
        self.message = message
        self.display = True
        self._show()

    def _tick(self) -> None:
        if self.display:
            self._frame += 1
            self._show()

    def _show(self) -> None:
        self.update(Text(f"{SPINNER_FRAMES[self._frame % len(SPINNER_FRAMES)]} {self.message}"))


class ReplyTurn(Vertical):
    """One model reply: its streamed Markdown, the steps of the turn and, once known, its context.

    A long reply is split into several Markdown widgets (see ``SEGMENT_CHARS``), so
    appending the 5,000th token costs what appending the 50th did. While the turn runs, a
    spinner line at the bottom says what it is doing (building the pack, waiting for the
    model, retrying, fetching what the model asked for).
    """

    def __init__(self, *, live: bool = True) -> None:
        super().__init__(classes="reply")
        self.segments: list[Markdown] = [ReplyMarkdown("", classes="reply-body")]
        self.frozen: list[FrozenSegment] = []
        self.cancelled = False
        self.spinner: TurnSpinner | None = TurnSpinner(WAITING_TEXT) if live else None
        self._streaming = False
        self._segment_text = ""
        self._fencer = EditBlockFencer()

    def compose(self) -> ComposeResult:
        yield self.segments[0]
        if self.spinner is not None:
            yield self.spinner

    @property
    def source(self) -> str:
        """The model's text, every attempt of it, in order."""
        return "".join(part.source for part in self.frozen) + self.segments[-1].source

    def transcript(self) -> str:
        """Everything the reply shows as text, steps and outcome included (for tests and copying)."""
        parts: list[str] = []
        for child in self.children:
            if isinstance(child, Markdown | FrozenSegment):
                parts.append(child.source)
            elif isinstance(child, ReplyLine):
                parts.append(child.plain + "\n")
        return "".join(parts)

    async def _mount_in_flow(self, widget: Widget) -> None:
        """Mount ``widget`` after the reply's content and above the spinner."""
        if self.spinner is not None and self.spinner.parent is self:
            await self.mount(widget, before=self.spinner)
        else:
            await self.mount(widget)

    def start_stream(self) -> None:
        self._streaming = True

    async def write(self, text: str) -> None:
        """Append streamed text, opening a new segment at a paragraph break when this one is long."""
        if not self._streaming:
            return
        shown = self._fencer.feed(text)
        if self.spinner is not None and text:
            folded = self._fencer.folding
            if folded:  # the text goes on, out of sight: say so, or the reply looks stuck
                self.spinner.say(f"writing the rest of the block: {folded:,} lines folded")
            else:
                self.spinner.display = False  # the text itself now shows that the turn is alive
        await self._append(shown)

    async def _append(self, text: str) -> None:
        if not self._streaming or not text:
            return
        base = len(self._segment_text)
        self._segment_text += text
        if len(self._segment_text) >= SEGMENT_CHARS:
            cut = _paragraph_break(self._segment_text, base)
            if cut is not None:
                head, tail = text[: cut - base], text[cut - base :]
                if head:
                    await self.segments[-1].append(head)
                await self._next_segment()
                self._segment_text = tail
                if tail:
                    await self.segments[-1].append(tail)
                return
        await self.segments[-1].append(text)

    async def _next_segment(self, between: Widget | None = None) -> None:
        """Freeze the current segment and stream into a new one below it (``between`` them)."""
        await self._freeze(self.segments[-1])
        if between is not None:
            await self._mount_in_flow(between)
        segment = ReplyMarkdown("", classes="reply-body")
        await self._mount_in_flow(segment)
        self.segments.append(segment)
        self._segment_text = ""

    async def _freeze(self, segment: Markdown) -> None:
        """Swap a finished segment for one Static: a Markdown widget is a tree of blocks that
        every layout pass walks again, while a Static's height is cached."""
        from rich.markdown import Markdown as RichMarkdown

        frozen = FrozenSegment(RichMarkdown(segment.source), classes="reply-frozen")
        frozen.source = segment.source
        await self.mount(frozen, after=segment)
        await segment.remove()
        self.frozen.append(frozen)

    def waiting(self, message: str) -> None:
        """What the turn waits for now, until text arrives (it stays out of the reply)."""
        if self.spinner is not None and not self.source:
            self.spinner.say(message)

    async def step(self, message: str) -> None:
        """A status line from the turn (a retry, a NEED round): kept in the reply where it
        happened, and shown by the spinner until more text arrives."""
        if self.spinner is not None:
            self.spinner.say(message)
        line = ReplyLine("↻ " + message, classes="turn-step")
        if self._streaming and self._segment_text:
            # A new attempt starts below the step, in fresh Markdown and a fresh fencer.
            await self._append(self._fencer.flush())
            self._fencer = EditBlockFencer()
            await self._next_segment(between=line)
        else:
            # Nothing streamed since the last step: the text that follows goes below this line.
            await self.mount(line, before=self.segments[-1])

    async def stop_stream(self) -> None:
        if self._streaming:
            await self._append(self._fencer.flush())
            self._streaming = False
        if self.spinner is not None:
            await self.spinner.remove()
            self.spinner = None

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
        """How the turn ended (cancelled, edit failed, staged...), as the reply's last line."""
        await self._mount_in_flow(ReplyLine(status, classes="turn-status"))


class EditBlockFencer:
    """Shows the SEARCH/REPLACE and SYMBOL blocks of a streamed reply as coloured diffs.

    A block becomes a ``diff`` code fence: the SEARCH lines prefixed ``-``, the replacement
    ``+``, a header line for a new file or a whole-symbol replacement; the path line above
    it stays as text. Unfenced, Markdown would turn ``=======`` into a heading rule and
    ``>>>>>>>`` into nested quotes; fenced as plain text, the reader had to find the change
    between conflict markers. A block the model wrapped in its own fence is shown the same
    way (the model's fence lines are dropped around it). Past ``FOLD_AFTER`` lines, the rest of
    a side is counted, not shown, and one line says how many. Text streams through at once,
    except the start of a line that could be a marker (it waits for the end of that line)
    and the opening of the model's fence with the line after it (they wait until it is
    known whether an edit block follows).
    """

    # A line starting with one of these may be a marker or a fence: hold it until it is whole.
    MAY_BE_MARKER = ("<", ">", "=", "`", "~")

    def __init__(self) -> None:
        self._partial = ""
        self._mid_line = False  # the start of the current line has been passed through already
        self._in_fence = False  # inside the model's own code fence, shown as it is
        self._section = ""  # inside a block: "search", "replace" or "symbol"; "" outside
        self._fresh_search = False  # the SEARCH section has no line yet (a new file if it stays so)
        self._model_fence = False  # inside the model's fence around blocks (its lines are dropped)
        self._held: list[str] = []  # the model's fence opening, and the line after it, held
        self._shown = 0  # lines of the current side of the block shown so far
        self.folding = 0  # lines of the current side folded so far (not shown)

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
            elif not self._held and not self._section and not self._partial.startswith(self.MAY_BE_MARKER):
                out.append(self._partial)
                self._partial = ""
                self._mid_line = True
        return "".join(out)

    def flush(self) -> str:
        """The held text, and a closing fence if the reply stopped inside a block."""
        rest = self._line(self._partial) if self._partial else ""
        self._partial = ""
        if self._held:
            rest += self._release()
        if self._section:
            self._section = ""
            rest += ("" if not rest or rest.endswith("\n") else "\n") + self._fold_line() + "```\n"
        return rest

    def _release(self) -> str:
        """Show the held fence opening and line as the model wrote them (no block followed)."""
        held, self._held = self._held, []
        self._in_fence = True
        return held[0] + "".join(self._line(line) for line in held[1:])

    def _line(self, line: str) -> str:
        if self._held:
            if _is_block_start(line):
                # The model fenced its block: drop its fence, keep the path line as text.
                path = "".join(self._held[1:])
                self._held = []
                self._model_fence = True
                return path + self._open(line)
            if len(self._held) == 1 and line.strip() and not _is_fence(line):
                self._held.append(line)
                return ""
            return self._release() + self._line(line)
        if self._section:
            return self._in_block(line)
        if self._in_fence:
            if _is_fence(line):
                self._in_fence = False
            return line
        if self._model_fence and _is_fence(line):
            self._model_fence = False  # the model's closing fence: already closed by ours
            return ""
        if _is_block_start(line):
            return self._open(line)
        if _is_fence(line):
            self._held = [line]
            return ""
        return line

    def _open(self, line: str) -> str:
        if line.startswith("<<<<<<< SYMBOL"):
            self._section = "symbol"
            name = line[len("<<<<<<< SYMBOL") :].strip()
            return f"```diff\n@@ new definition of {name} @@\n"
        self._section = "search"
        self._fresh_search = True
        return "```diff\n"

    def _in_block(self, line: str) -> str:
        body = line.rstrip("\n")
        if line.startswith(">>>>>>> REPLACE"):
            self._section = ""
            return self._fold_line() + "```\n"
        if self._section == "search" and body.rstrip() == "=======":
            self._section = "replace"
            return self._fold_line() + ("@@ new file @@\n" if self._fresh_search else "")
        self._fresh_search = False
        if self._shown >= FOLD_AFTER:
            self.folding += 1
            return ""
        self._shown += 1
        sign = "-" if self._section == "search" else "+"
        return f"{sign}{body}\n"

    def _fold_line(self) -> str:
        """The line that stands for the folded rest of a side (none if nothing was folded);
        the counts start again for the next side."""
        folded, self.folding, self._shown = self.folding, 0, 0
        if not folded:
            return ""
        return f"@@ {folded:,} more line{'s' if folded > 1 else ''} folded (F2 shows all) @@\n"


def _is_fence(line: str) -> bool:
    return line.lstrip().startswith(("```", "~~~"))


def _is_block_start(line: str) -> bool:
    return line.startswith(("<<<<<<< SEARCH", "<<<<<<< SYMBOL"))


def _paragraph_break(text: str, start: int) -> int | None:
    """The end of the last blank-line break at or after ``start`` that is outside a code fence."""
    at = text.rfind("\n\n", start)
    while at != -1:
        cut = at + 2
        fences = sum(1 for line in text[:cut].splitlines() if _is_fence(line))
        if fences % 2 == 0:
            return cut
        at = text.rfind("\n\n", start, at)
    return None
