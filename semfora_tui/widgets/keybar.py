"""The bottom line: which mode is active (PROMPT or REVIEW) and the keys that work in it.

It replaces Textual's footer because that footer cannot say which mode the keyboard is
in, and at 80 columns it cut the review keys that matter most. Hints carry a rank: when
the line is too narrow, the highest ranks are dropped first, the rest keep their order.
Display only; the screen tells it what to show.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

# Cells between two hints (one when the line is too narrow for two).
HINT_GAP = 2
# Hints of this rank or lower are worth a tighter line: they change files, leave the mode, or
# (`?`) list every key the line has no room for.
MUST_SHOW_RANK = 4


@dataclass(frozen=True)
class KeyHint:
    keys: str
    label: str
    rank: int = 0  # 0 is kept longest


def fit_hints(hints: list[KeyHint], width: int, gap: int = HINT_GAP) -> list[KeyHint]:
    """The hints that fit in ``width`` cells, dropping the highest ranks first, in their order."""

    def cells(h: KeyHint) -> int:
        return len(h.keys) + 1 + len(h.label) + gap

    kept = list(hints)
    while kept and sum(cells(h) for h in kept) > width:
        worst = max(range(len(kept)), key=lambda i: (kept[i].rank, i))
        del kept[worst]
    return kept


def layout_hints(hints: list[KeyHint], width: int) -> tuple[list[KeyHint], int]:
    """(hints, gap): two cells between hints when that drops nothing important, else one."""
    roomy = fit_hints(hints, width, HINT_GAP)
    if {h.rank for h in hints if h not in roomy} & set(range(MUST_SHOW_RANK + 1)):
        return fit_hints(hints, width, 1), 1
    return roomy, HINT_GAP


class KeyBar(Static):
    """Mode badge plus the keys of that mode."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.mode = "PROMPT"
        self.hints: list[KeyHint] = []
        self.shown: list[KeyHint] = []

    def show(self, mode: str, hints: list[KeyHint]) -> None:
        self.mode = mode
        self.hints = hints
        self._draw()

    def on_resize(self) -> None:
        self._draw()

    def _draw(self) -> None:
        badge = f" {self.mode} "
        self.shown, gap = layout_hints(self.hints, max(self.size.width - len(badge) - 1, 0))
        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(badge, style="bold reverse")
        text.append(" ")
        for hint in self.shown:
            text.append(hint.keys, style="bold")
            text.append(" " + hint.label + " " * gap)
        self.update(text)

    @property
    def plain(self) -> str:
        """What the bar says, as text (for tests)."""
        return f"{self.mode} " + " ".join(f"{h.keys} {h.label}" for h in self.shown)
