"""Plain view data for the panes, converted from the engine's objects.

The panes render these frozen dataclasses and nothing else, so a pane can be
tested, snapshotted and reasoned about without an engine session behind it.
Conversion reads the engine's public, typed attributes only; it never mutates them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.api import ContextPack, TurnResult
    from engine.edits.session import StagedFile

PRIORITIES: tuple[str, ...] = ("critical", "high", "medium", "low")


@dataclass(frozen=True)
class HunkView:
    id: str
    path: str
    header: str
    lines: tuple[str, ...]
    state: str  # pending | accepted | rejected
    start_line: int = 1
    conflict: str | None = None
    syntax_error: str | None = None

    @property
    def added(self) -> int:
        return sum(1 for line in self.lines if line.startswith("+") and not line.startswith("+++"))

    @property
    def removed(self) -> int:
        return sum(1 for line in self.lines if line.startswith("-") and not line.startswith("---"))


@dataclass(frozen=True)
class FileView:
    path: str
    hunks: tuple[HunkView, ...]
    conflict: str | None = None
    syntax_error: str | None = None

    # A conflict's lines are not counted: no commit writes them (as `semfora edits list` counts).
    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks if not h.conflict)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks if not h.conflict)

    def count(self, state: str) -> int:
        return sum(1 for h in self.hunks if h.state == state)

    @property
    def conflicts(self) -> int:
        """Hunks that no longer fit the file (each still has its state: pending, rejected)."""
        return sum(1 for h in self.hunks if h.conflict)


@dataclass(frozen=True)
class PackItemView:
    kind: str
    name: str
    tokens: int
    priority: str
    reason: str


@dataclass(frozen=True)
class PackView:
    task: str
    intent: str
    budget: int
    total_tokens: int
    items: tuple[PackItemView, ...]
    warnings: tuple[str, ...] = ()  # what was off while gathering (e.g. vectors unavailable)

    def tokens_by_priority(self) -> dict[str, int]:
        out = dict.fromkeys(PRIORITIES, 0)
        for item in self.items:
            out[item.priority if item.priority in out else "low"] += item.tokens
        return out


@dataclass(frozen=True)
class TurnCost:
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0


@dataclass(frozen=True)
class PastTurn:
    """One turn of a resumed conversation: the question, the reply and how it ended."""

    request: str
    reply: str
    outcome: str  # answered | staged | applied | proposed | edit_failed | cancelled | error
    errors: tuple[str, ...] = ()
    edits: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.outcome in ("edit_failed", "error")


# Files a one-line summary of the staged session names before "and N more".
SUMMARY_FILES = 3
STATES: tuple[str, ...] = ("pending", "accepted", "rejected")


@dataclass(frozen=True)
class StagedSummary:
    """The staged session in a sentence's words (what stays staged when the app closes)."""

    hunks: int
    files: int
    where: str  # "app/config.py, app/server.py" (the first SUMMARY_FILES, then "and N more")
    states: str  # "1 pending, 1 rejected"

    @property
    def them(self) -> str:
        return "it" if self.hunks == 1 else "them"


def summarize_staged(files: tuple[FileView, ...], name: Callable[[str], str] = str) -> StagedSummary:
    """``name`` formats a path (the chat puts paths in code spans)."""
    where = ", ".join(name(f.path) for f in files[:SUMMARY_FILES])
    if len(files) > SUMMARY_FILES:
        where += f" and {len(files) - SUMMARY_FILES} more"
    counts = ((sum(f.count(state) for f in files), state) for state in STATES)
    return StagedSummary(
        hunks=sum(len(f.hunks) for f in files),
        files=len(files),
        where=where,
        states=", ".join(f"{n} {state}" for n, state in counts if n),
    )


# Said in place when the engine flags a hunk or a file without its own message.
# Only a rebase marks a hunk so (it found no place for it): "/rebase re-applies it" sent the
# user to the command that had just failed to.
HUNK_CONFLICT_TEXT = "no longer fits the file as it is on disk: reject it, or ask for the change again"
FILE_STALE_TEXT = "changed on disk since it was staged (/rebase re-applies its hunks)"


def files_from_session(changes: Iterable[StagedFile]) -> tuple[FileView, ...]:
    """Turn ``EditSession.files()`` into file views."""
    files: list[FileView] = []
    for change in changes:
        hunks = tuple(
            HunkView(
                id=str(hunk.id),
                path=change.path,
                header=hunk.header,
                lines=hunk.lines,
                state=hunk.state,
                start_line=max(hunk.new_start, 1),
                conflict=HUNK_CONFLICT_TEXT if hunk.conflict else None,
                syntax_error=hunk.syntax_error or None,
            )
            for hunk in change.hunks
        )
        files.append(
            FileView(
                change.path,
                hunks,
                conflict=FILE_STALE_TEXT if change.stale else None,
                syntax_error=change.syntax_error or None,
            )
        )
    return tuple(files)


def _item_name(symbol: str | None, file: str | None, kind: str) -> str:
    if symbol and file:
        return f"{symbol} ({file})"
    return symbol or file or kind


def pack_from_engine(pack: ContextPack, task: str = "") -> PackView:
    """Turn an orchestrator ``ContextPack`` into a pack view."""
    items = tuple(
        PackItemView(
            kind=item.kind,
            name=_item_name(item.symbol, item.file, item.kind),
            tokens=item.tokens,
            priority=item.priority.label if item.priority.label in PRIORITIES else "low",
            reason=item.reason,
        )
        for item in pack.items
    )
    return PackView(
        task=pack.task or task,
        intent=pack.intent or "general",
        budget=pack.budget,
        total_tokens=pack.total_tokens,
        items=items,
        warnings=tuple(pack.warnings),
    )


def cost_from_result(result: TurnResult) -> TurnCost:
    """Usage and cost of one ``TurnResult``."""
    return TurnCost(result.usage.total_input_tokens, result.usage.output_tokens, float(result.cost))
