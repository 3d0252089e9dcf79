"""Plain view data for the panes, converted from the engine's objects.

The panes render these frozen dataclasses and nothing else, so a pane can be
tested, snapshotted and reasoned about without an engine session behind it.
Conversion reads the engine's public attributes only; it never mutates them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

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

    @property
    def added(self) -> int:
        return sum(h.added for h in self.hunks)

    @property
    def removed(self) -> int:
        return sum(h.removed for h in self.hunks)

    def count(self, state: str) -> int:
        return sum(1 for h in self.hunks if h.state == state)


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


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _hunk_start(header: str) -> int:
    """The first new-file line of a unified-diff header ``@@ -a,b +c,d @@``."""
    for part in header.split():
        if part.startswith("+") and part[1:2].isdigit():
            return int(part[1:].split(",")[0])
    return 1


# Said in place when the engine flags a hunk or a file without its own message.
HUNK_CONFLICT_TEXT = "no longer applies: the file changed on disk (/preview after a rebase, or reject it)"
FILE_STALE_TEXT = "changed on disk since it was staged"


def _opt(obj: Any, name: str, flagged: str) -> str | None:
    """A flag attribute as text: its own message, ``flagged`` for a bare True, None when unset."""
    value = getattr(obj, name, None)
    if value is None or value is False or value == "":
        return None
    return flagged if value is True else str(value)


def files_from_session(changes: Iterable[Any]) -> tuple[FileView, ...]:
    """Turn ``EditSession.files()`` (FileChange objects) into file views."""
    files: list[FileView] = []
    for change in changes:
        path = _text(getattr(change, "path", ""))
        hunks: list[HunkView] = []
        for hunk in getattr(change, "hunks", ()):
            header = _text(getattr(hunk, "header", ""))
            lines = getattr(hunk, "lines", ())
            if isinstance(lines, str):
                lines = lines.splitlines()
            start = (
                getattr(hunk, "start_line", None) or getattr(hunk, "new_start", None) or _hunk_start(header)
            )
            hunks.append(
                HunkView(
                    id=_text(getattr(hunk, "id", "")),
                    path=path,
                    header=header,
                    lines=tuple(str(line) for line in lines),
                    state=_text(getattr(hunk, "state", "pending")) or "pending",
                    start_line=int(start),
                    conflict=_opt(hunk, "conflict", HUNK_CONFLICT_TEXT),
                    syntax_error=_opt(hunk, "syntax_error", "flagged"),
                )
            )
        files.append(
            FileView(
                path,
                tuple(hunks),
                conflict=_opt(change, "stale", FILE_STALE_TEXT) or _opt(change, "conflict", FILE_STALE_TEXT),
                syntax_error=_opt(change, "syntax_error", "flagged"),
            )
        )
    return tuple(files)


def _priority(value: Any) -> str:
    """Priority labels: the engine's ``Priority`` enum has ``.label``; JSON gives strings."""
    label = getattr(value, "label", None)
    if isinstance(label, str):
        return label
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name.lower()
    text = _text(value).lower()
    return text if text in PRIORITIES else "low"


def _item_name(item: Any) -> str:
    symbol = getattr(item, "symbol", None)
    file = getattr(item, "file", None)
    name = getattr(item, "name", None)
    if symbol and file:
        return f"{symbol} ({file})"
    return _text(symbol or name or file or getattr(item, "kind", "?"))


def pack_from_engine(pack: Any, task: str = "") -> PackView:
    """Turn an orchestrator ``ContextPack`` into a pack view."""
    items = tuple(
        PackItemView(
            kind=_text(getattr(item, "kind", "")),
            name=_item_name(item),
            tokens=int(getattr(item, "tokens", 0) or 0),
            priority=_priority(getattr(item, "priority", "low")),
            reason=_text(getattr(item, "reason", "")),
        )
        for item in getattr(pack, "items", ())
    )
    total = getattr(pack, "total_tokens", None)
    return PackView(
        task=_text(getattr(pack, "task", "") or task),
        intent=_text(getattr(pack, "intent", "general")),
        budget=int(getattr(pack, "budget", 0) or 0),
        total_tokens=int(total if total is not None else sum(i.tokens for i in items)),
        items=items,
    )


def cost_from_result(result: Any) -> TurnCost:
    """Usage and cost of one ``TurnResult`` (usage may be an object or a mapping)."""
    usage = getattr(result, "usage", None)

    def field(name: str) -> int:
        if usage is None:
            return 0
        value = usage.get(name, 0) if isinstance(usage, dict) else getattr(usage, name, 0)
        return int(value or 0)

    cost = getattr(result, "cost", 0.0)
    if not isinstance(cost, int | float):
        cost = getattr(cost, "total", None) or getattr(cost, "usd", 0.0) or 0.0
    return TurnCost(field("input_tokens"), field("output_tokens"), float(cost))
