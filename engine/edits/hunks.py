"""Hunks: how one file's staged change splits into independently reviewable pieces.

A hunk id hashes the path, the removed and added lines and which occurrence of
that same change it is, never line numbers, so it survives re-staging, partial
commits and rebases that move it. Pure functions on text; no I/O.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
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
    # The old (new) side of this hunk's window ends the file, and that file has no final newline.
    old_no_newline: bool = False
    new_no_newline: bool = False

    @property
    def header(self) -> str:
        """The unified-diff header of ``lines`` (context included), for this hunk on its own
        against the original file: ``header`` then ``lines`` is a hunk `git apply` takes.
        ``old_start``/``old_count`` and ``new_start``/``new_count`` count the changed lines only
        (the new side's numbers after every hunk of the file). A conflict's header says where
        it was instead, since it has no place in the file as it is now."""
        if self.conflict:
            # No place in the file as it is now: "@@ -0,1 +0,1 @@" read as a change at line 0.
            where = f" (was at line {self.old_start})" if self.old_start else ""
            return f"@@ conflict: no longer fits the file{where} @@"
        context = len(self.before) + len(self.after)
        first = (self.old_start - 1 if self.old_count else self.old_start) - len(self.before)
        old_n, new_n = self.old_count + context, self.new_count + context
        return f"@@ -{first + 1 if old_n else first},{old_n} +{first + 1 if new_n else first},{new_n} @@"

    @property
    def lines(self) -> tuple[str, ...]:
        """Unified-diff body lines: context, removals and additions, with the
        ``\\ No newline at end of file`` markers `git apply` needs."""
        rows = (
            [(" ", x) for x in self.before]
            + [("-", x) for x in self.old_lines]
            + [("+", x) for x in self.new_lines]
            + [(" ", x) for x in self.after]
        )
        if self.old_no_newline or self.new_no_newline:
            rows = _mark_missing_newlines(rows, self.old_no_newline, self.new_no_newline)
        return tuple(tag + text for tag, text in rows)

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


NO_NEWLINE = "\\ No newline at end of file"


def _last(rows: list[tuple[str, str]], tags: str) -> int | None:
    return max((i for i, (tag, _) in enumerate(rows) if tag in tags), default=None)


def _mark_missing_newlines(
    rows: list[tuple[str, str]], old_missing: bool, new_missing: bool
) -> list[tuple[str, str]]:
    """Add the no-final-newline markers after the last line of the old and of the new side.

    A context line stands for both sides, so when it ends one side without a newline but not
    the other the same way, it is shown removed and added instead.
    """
    out = list(rows)
    for missing, mine, other_missing, other in (
        (old_missing, " -", new_missing, " +"),
        (new_missing, " +", old_missing, " -"),
    ):
        at = _last(out, mine)
        if not missing or at is None or out[at][0] != " ":
            continue
        if _last(out, other) == at and other_missing:
            continue  # ends both sides, both without a newline: one marker serves both
        text = out[at][1]
        out[at : at + 1] = [("-", text), ("+", text)]
    marks = {
        i
        for i, missing, tags in ((_last(out, " -"), old_missing, ""), (_last(out, " +"), new_missing, ""))
        if missing and i is not None
    }
    for at in sorted(marks, reverse=True):
        out.insert(at + 1, ("\\", NO_NEWLINE[1:]))
    return out


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
    target: str | None = None,
    between: tuple[int, int | None] = (0, None),
) -> Hunk:
    """The display form of a raw hunk, with unified-diff numbering and context.

    ``target`` (the staged text) tells whether the new side lacks a final newline.
    ``between`` is (end, start) of the hunks before and after it in the original: its context
    stops there, so it never shows a neighbour's changed lines as unchanged ones.
    """
    a, final_a = split_lines(original)
    old_count, new_count = raw.i2 - raw.i1, raw.j2 - raw.j1
    floor, ceiling = between
    after = tuple(a[raw.i2 : min(raw.i2 + CONTEXT_LINES, len(a) if ceiling is None else ceiling)])
    new_no_newline = False
    if target is not None:
        b, final_b = split_lines(target)
        new_no_newline = raw.j2 + len(after) == len(b) and bool(b) and not final_b
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
        before=tuple(a[max(0, floor, raw.i1 - CONTEXT_LINES) : raw.i1]),
        after=after,
        conflict=conflict,
        syntax_error=syntax_error,
        old_no_newline=raw.i2 + len(after) == len(a) and bool(a) and not final_a,
        new_no_newline=new_no_newline,
    )


def file_views(
    path: str,
    original: str,
    target: str,
    raws: Sequence[RawHunk],
    states: Mapping[str, str],
    *,
    syntax_error: str | None = None,
) -> list[Hunk]:
    """Every hunk of one file for review, each with its own context.

    Two hunks a few lines apart share the lines between them as context; neither shows the
    other's changed lines (as unchanged context, which they are not once both are accepted).
    """
    ordered = sorted(raws, key=lambda r: r.i1)
    bounds = {
        r.id: (ordered[k - 1].i2 if k else 0, ordered[k + 1].i1 if k + 1 < len(ordered) else None)
        for k, r in enumerate(ordered)
    }
    return [
        view(
            path,
            original,
            raw,
            states.get(raw.id, "pending"),  # type: ignore[arg-type]
            syntax_error=syntax_error,
            target=target,
            between=bounds[raw.id],
        )
        for raw in raws
    ]


def unified_diff(
    original: str, target: str, raws: Sequence[RawHunk], label: Callable[[RawHunk], str]
) -> list[str]:
    """The hunks ``raws`` (in file order) as unified-diff hunks that `git apply` accepts.

    Hunks closer than twice the context are one unified hunk (as `diff -U3` prints them),
    since overlapping context would make a corrupt patch; ``label`` annotates each header
    after the closing ``@@`` (ids and states), where patch tools allow free text.
    """
    a, final_a = split_lines(original)
    b, final_b = split_lines(target)
    groups: list[list[RawHunk]] = []
    for raw in raws:
        if groups and raw.i1 - groups[-1][-1].i2 <= 2 * CONTEXT_LINES:
            groups[-1].append(raw)
        else:
            groups.append([raw])
    out: list[str] = []
    for group in groups:
        first, last = group[0], group[-1]
        lead = min(CONTEXT_LINES, first.i1)
        old_start, new_start = first.i1 - lead, first.j1 - lead
        old_end = min(len(a), last.i2 + CONTEXT_LINES)
        new_end = last.j2 + (old_end - last.i2)
        rows = [(" ", x) for x in a[old_start : first.i1]]
        for k, raw in enumerate(group):
            rows += [("-", x) for x in a[raw.i1 : raw.i2]] + [("+", x) for x in b[raw.j1 : raw.j2]]
            if k + 1 < len(group):
                rows += [(" ", x) for x in a[raw.i2 : group[k + 1].i1]]
        rows += [(" ", x) for x in a[last.i2 : old_end]]
        rows = _mark_missing_newlines(
            rows,
            old_end == len(a) and bool(a) and not final_a,
            new_end == len(b) and bool(b) and not final_b,
        )
        old_n, new_n = old_end - old_start, new_end - new_start
        out.append(
            f"@@ -{old_start + 1 if old_n else old_start},{old_n} +{new_start + 1 if new_n else new_start},{new_n} @@ "
            + " ".join(label(raw) for raw in group)
        )
        out.extend(tag + text for tag, text in rows)
    return out
