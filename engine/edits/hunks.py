"""Hunks: how one file's staged change splits into independently reviewable pieces.

A hunk id hashes the path, the removed and added lines and which occurrence of
that same change it is, never line numbers, so it survives re-staging, partial
commits and rebases that move it. Pure functions on text; no I/O.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NewType

from engine.edits.protocol import join_lines, split_lines

HunkId = NewType("HunkId", str)
HunkState = Literal["pending", "accepted", "rejected"]
HUNK_STATES: tuple[str, ...] = ("pending", "accepted", "rejected")
# Lines of unchanged context shown around a hunk, as in `git diff`.
CONTEXT_LINES = 3
# Hex digits of a hunk id: short enough to type, long enough not to collide in one session.
HUNK_ID_LEN = 8


@dataclass(frozen=True)
class RawHunk:
    """One contiguous change between an original and a target text (0-based line ranges)."""

    id: HunkId
    i1: int
    i2: int
    j1: int
    j2: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]


@dataclass(frozen=True)
class Hunk:
    """A reviewable hunk of a staged file, as the CLI, the TUI and the orchestrator see it."""

    id: HunkId
    path: str
    state: HunkState
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    old_lines: tuple[str, ...]
    new_lines: tuple[str, ...]
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    conflict: bool = False
    syntax_error: str | None = None

    @property
    def header(self) -> str:
        return f"@@ -{self.old_start},{self.old_count} +{self.new_start},{self.new_count} @@"

    @property
    def lines(self) -> tuple[str, ...]:
        """Unified-diff body lines: context, removals and additions."""
        return (
            tuple(" " + x for x in self.before)
            + tuple("-" + x for x in self.old_lines)
            + tuple("+" + x for x in self.new_lines)
            + tuple(" " + x for x in self.after)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "state": self.state,
            "header": self.header,
            "old_start": self.old_start,
            "old_count": self.old_count,
            "new_start": self.new_start,
            "new_count": self.new_count,
            "conflict": self.conflict,
            "syntax_error": self.syntax_error,
            "lines": list(self.lines),
        }


def hunk_id(path: str, old: Sequence[str], new: Sequence[str], occurrence: int) -> HunkId:
    raw = "\x00".join([path, "\x01".join(old), "\x01".join(new), str(occurrence)])
    return HunkId(hashlib.sha1(raw.encode("utf-8")).hexdigest()[:HUNK_ID_LEN])


def diff_hunks(path: str, original: str, target: str) -> list[RawHunk]:
    """The changes from ``original`` to ``target`` (LF texts) as independent hunks."""
    a, _ = split_lines(original)
    b, _ = split_lines(target)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    seen: dict[tuple[tuple[str, ...], tuple[str, ...]], int] = {}
    out: list[RawHunk] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        old, new = tuple(a[i1:i2]), tuple(b[j1:j2])
        n = seen.get((old, new), 0)
        seen[(old, new)] = n + 1
        out.append(RawHunk(hunk_id(path, old, new, n), i1, i2, j1, j2, old, new))
    if not out and original != target:
        # Only the final newline differs: one hunk so the change is still reviewable.
        old_t = tuple(a[-1:])
        out.append(
            RawHunk(
                hunk_id(path, old_t, ("<final newline>",), 0),
                max(0, len(a) - 1),
                len(a),
                max(0, len(b) - 1),
                len(b),
                old_t,
                tuple(b[-1:]),
            )
        )
    return out


def apply_selected(original: str, target: str, raw: Sequence[RawHunk], selected: Collection[str]) -> str:
    """``original`` with only the ``selected`` hunks (ids) of ``raw`` applied."""
    a, final_a = split_lines(original)
    b, final_b = split_lines(target)
    if raw and all(h.id in selected for h in raw):
        return target
    out: list[str] = []
    pos = 0
    for h in raw:
        out.extend(a[pos : h.i1])
        out.extend(b[h.j1 : h.j2] if h.id in selected else a[h.i1 : h.i2])
        pos = h.i2
    out.extend(a[pos:])
    final = final_a if a else final_b
    return join_lines(out, final)


def view(
    path: str,
    original: str,
    raw: RawHunk,
    state: HunkState,
    *,
    conflict: bool = False,
    syntax_error: str | None = None,
) -> Hunk:
    """The display form of a raw hunk, with unified-diff numbering and context."""
    a, _ = split_lines(original)
    old_count, new_count = raw.i2 - raw.i1, raw.j2 - raw.j1
    return Hunk(
        id=raw.id,
        path=path,
        state=state,
        old_start=raw.i1 + 1 if old_count else raw.i1,
        old_count=old_count,
        new_start=raw.j1 + 1 if new_count else raw.j1,
        new_count=new_count,
        old_lines=raw.old_lines,
        new_lines=raw.new_lines,
        before=tuple(a[max(0, raw.i1 - CONTEXT_LINES) : raw.i1]),
        after=tuple(a[raw.i2 : raw.i2 + CONTEXT_LINES]),
        conflict=conflict,
        syntax_error=syntax_error,
    )
