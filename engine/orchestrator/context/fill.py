"""Step 4 of the pack: fit the ranked candidates to the budget, code first, the map around it.

Owns the filling rule. Candidates are taken best first while they are *relevant* (named by
the task, holding at least ``MIN_COVERAGE`` of the task's term weight, ranked near the top
by search, or a call-graph neighbour of a hit that shares a term with the task) and the
budget lasts:

1. a file the user ``@mentioned`` is sent whole when it is small enough;
2. **code**: each relevant definition as a ``source`` item, whole when it fits its share of
   the budget (``LEAD_SHARE`` for the best, ``SUPPORT_SHARE`` for the next four,
   ``TAIL_SHARE`` after), else its head, the lines holding the task's terms and marked gaps
   (``excerpt``); a class shows its own lines, its methods compete on their own;
3. **the map**: one-line briefs of what the code calls and is called by, and of the relevant
   candidates that did not fit, within ``MAP_SHARE`` of the budget;
4. **more code** with whatever the map left, so a bigger budget always buys more source
   while relevant candidates remain (here a share too small for any excerpt still buys the
   smallest one: a small budget is spent on code, not left unused).

It never exceeds the budget (``ContextBudget`` refuses what does not fit) and never ranks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engine.orchestrator.budget import ContextBudget, ContextItem, Priority
from engine.orchestrator.context.candidates import Candidate
from engine.orchestrator.context.excerpt import MIN_EXCERPT_TOKENS, doc_lines, excerpt, signature_end
from engine.orchestrator.intent import Intent
from engine.tokens import CHARS_PER_TOKEN, tokens_for_chars
from engine.words import plural

# Shares of the budget one definition may take, by its place among the code items: the best
# candidate is most likely the one to change, and an edit needs all of it (30% holds a 180-line
# function at 8,000); the next few are probably read or changed too; past them a definition
# earns its head and the lines that match the task, and the model can ask for the rest (NEED).
# Smaller shares buy more definitions at small budgets (on the public set at 2,000: code
# coverage 0.59 -> 0.66 on real fixes from 0.4/0.2/0.08 to these), at no cost at 8,000.
LEAD_SHARE = 0.3
SUPPORT_SHARE = 0.12
SUPPORT_RANKS = 4
TAIL_SHARE = 0.06
# The map's share of the budget, reserved before the code is laid out: names with signatures
# are what a model needs to ask a precise NEED, and they cost one line each.
MAP_SHARE = 0.12
# Briefs in the map at most: past a screenful, names stop helping the model choose.
MAX_MAP_ITEMS = 24
# Candidates looked at for the map at most, and the least room a brief needs: beyond, the map
# is full (or what is left of the pool would not fit anyway).
MAX_MAP_SCAN = 4 * MAX_MAP_ITEMS
MIN_BRIEF_TOKENS = 16
# Relevance, absolute rather than relative to the best candidate: evidence of any kind of its
# own. A candidate is about the task when it holds some of the task's (IDF-weighted) vocabulary,
# when the task names it, when a channel found it, when a call edge ties it to a hit, or when
# its file is among the most implicated (``LOCALITY_FLOOR`` of the best file's evidence): a
# definition next to the code being changed is often changed with it. Order is the score's;
# this only decides where the list ends, and the budget decides how far down it a pack goes.
MIN_COVERAGE = 0.05
LOCALITY_FLOOR = 0.5
# The first few code items of an edit, refactor or review are its targets: CRITICAL, so the
# budget never evicts them for anything else.
TARGETS = 3
# Code items after this many are MEDIUM: evicted first if something more important arrives.
HIGH_ITEMS = 8
# A definition whose body other items already show at least this much of is not sent again.
SHOWN_ENOUGH = 0.6
# An @mentioned file is sent whole if it takes at most this share of the budget.
MENTIONED_FILE_SHARE = 0.3

ItemFactory = Callable[..., ContextItem]

# The reason an excerpt's item gives; engine.api.get_context rewords it for an MCP agent,
# which has get_symbol_source, not NEED.
EXCERPT_REASON = "excerpt: gaps marked, ask NEED for the rest"


@dataclass
class Layout:
    """What has been laid out so far: the code ranges shown, by file, and the map's items."""

    # file -> ranges whose every line the model has (whole definitions, files named with @);
    # an excerpt's lines are not recorded: its definition is still worth a NEED, and its lines
    # must not be hidden from a nested definition shown later (they would cut its head off).
    shown: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    code: list[str] = field(default_factory=list)  # candidate keys shown as code, in order
    # file -> every line some source item shows (whole or excerpt): a closure whose body an
    # excerpt of its function already shows is not sent a second time.
    lines_shown: dict[str, set[int]] = field(default_factory=dict)
    map_ids: dict[str, str] = field(default_factory=dict)  # candidate key -> map item id
    sections: dict[str, int] = field(default_factory=dict)  # item id -> section (send order)

    def covered(self, file: str, a: int, b: int) -> bool:
        return any(x <= a and b <= y for x, y in self.shown.get(file, ()))

    def inside(self, file: str, a: int, b: int) -> list[tuple[int, int]]:
        """Shown ranges strictly inside ``a..b`` (a closure or a method already sent)."""
        return [(x, y) for x, y in self.shown.get(file, ()) if a <= x and y <= b and (x, y) != (a, b)]


# Send order (see gatherer): 0 the cached prefix, 1 staged edits, then these, then 5 recalled turns.
SECTION_FILES, SECTION_CODE, SECTION_MAP = 2, 3, 4


def relevant(c: Candidate) -> bool:
    """Whether ``c`` is about the task at all (see the module docstring)."""
    if c.bonus > 0 or c.coverage >= MIN_COVERAGE or c.ranks:
        return True
    return c.graph > 0 or c.locality >= LOCALITY_FLOOR


def share_for(place: int) -> float:
    if place == 0:
        return LEAD_SHARE
    return SUPPORT_SHARE if place <= SUPPORT_RANKS else TAIL_SHARE


class Filler:
    """Lays out one pack: ``fill`` is the whole step; the rest are its parts."""

    def __init__(
        self,
        *,
        budget: ContextBudget,
        intent: Intent,
        make_item: ItemFactory,
        ranker: Any,
        digests: Any,
        reader: Any,
        header_tokens: Callable[[ContextItem], int],
        notes: list[str],
    ) -> None:
        self.budget = budget
        self.intent = intent
        self.make_item = make_item
        self.ranker = ranker
        self.digests = digests
        self.reader = reader
        self.header_tokens = header_tokens
        self.notes = notes
        self.layout = Layout()

    # -- the step ---------------------------------------------------------------------------

    def fill(self, ranked: list[Candidate], mentioned: list[str]) -> Layout:
        for rel in mentioned:
            self.add_file(rel)
        if not ranked:
            self.notes.append("no symbol or search hit for this task")
            return self.layout
        pool = [c for c in ranked if c.is_code and relevant(c)]
        if not pool:
            self.notes.append("no candidate shares enough of the task's words to be sent")
        map_reserve = int(MAP_SHARE * self.budget.limit)
        self.add_code(pool, reserve=map_reserve)
        self.add_map(ranked, pool, limit=map_reserve)
        before = len(self.layout.code)
        self.add_code(pool, reserve=0)
        added = len(self.layout.code) - before
        if added > 0:
            self.notes.append(f"{plural(added, 'more definition')} sent with what the map left")
        left = [
            c
            for c in pool
            if c.key not in self.layout.code
            and c.key not in self.layout.map_ids
            and not self.layout.covered(c.file, c.start_line or 0, c.end_line or c.start_line or 0)
        ]
        if left:
            self.notes.append(f"{plural(len(left), 'relevant candidate')} left out: over budget")
        return self.layout

    # -- code -------------------------------------------------------------------------------

    def priority(self, place: int) -> Priority:
        if place < TARGETS and self.intent in (Intent.EDIT, Intent.REFACTOR, Intent.REVIEW):
            return Priority.CRITICAL
        return Priority.HIGH if place < HIGH_ITEMS else Priority.MEDIUM

    def label(self, place: int) -> str:
        if place >= TARGETS:
            return "relevant code"
        if self.intent in (Intent.EDIT, Intent.REFACTOR):
            return "edit target"
        if self.intent == Intent.REVIEW:
            return "under review"
        return "top match" if self.intent != Intent.LOCATE else "best match"

    def add_code(self, pool: list[Candidate], *, reserve: int) -> None:
        for c in pool:
            if c.key in self.layout.code:
                continue
            room = self.budget.remaining - reserve
            if room < MIN_EXCERPT_TOKENS:
                break
            self.add_source(c, room, leftover=not reserve)

    def add_source(self, c: Candidate, room: int, *, leftover: bool = False) -> bool:
        """Lay ``c`` out as code within ``room`` and its share of the budget. With ``leftover``
        (what the map left), a share too small for any excerpt (a small budget's tail) still buys
        the smallest one: the code is worth more than budget left unused."""
        assert c.start_line is not None
        start, end = c.start_line, c.end_line or c.start_line
        if self.layout.covered(c.file, start, end):
            return False
        lines = self.reader.lines(c.file)
        if not lines:
            return False
        if not c.is_container and self._mostly_shown(c.file, lines, start, end):
            return False
        place = len(self.layout.code)
        matched = ", ".join(f"'{w}'" for w in c.matched[:4])
        why = f"{self.label(place)}: " + (f"has {matched}; " if matched else "") + c.reason
        probe = ContextItem(
            f"source:{c.key}", "source", "", 0, Priority.HIGH, why, c.file, c.name, start, end
        )
        overhead = self.header_tokens(probe)
        share = int(share_for(place) * self.budget.limit)
        cap = min(room, max(share, overhead + MIN_EXCERPT_TOKENS) if leftover else share)
        hidden = self.layout.inside(c.file, start, end)
        weights = self.ranker.line_weights(c)
        if c.is_container and (hidden or not self._fits_whole(lines, start, end, cap)):
            hidden = sorted(set(hidden) | set(self.ranker.members(c, lines)))
            # A skeleton's room goes to the lines that declare (members, fields), not to the
            # task's words in its docstring or comments.
            docs = doc_lines(lines, start, end)
            weights = {n: w for n, w in weights.items() if n not in docs}
        found = excerpt(lines, start, end, weights, cap - overhead, hidden=hidden)
        if found is None:
            return False
        if c.key in self.layout.map_ids:  # shown as code now: its brief is redundant
            self.budget.remove(self.layout.map_ids.pop(c.key))
        item = self.make_item(
            f"source:{c.key}",
            "source",
            found.text,
            self.priority(place),
            why + (f"; {EXCERPT_REASON}" if found.elided else ""),
            c,
            start_line=found.first,
            end_line=found.last,
            elided=found.elided,
        )
        if not self.budget.add(item).admitted:
            return False
        self.layout.code.append(c.key)
        self.layout.sections[item.id] = SECTION_CODE
        self.layout.lines_shown.setdefault(c.file, set()).update(found.shown)
        if not found.elided and not hidden:
            self.layout.shown.setdefault(c.file, []).append((start, end))
        return True

    def _mostly_shown(self, file: str, lines: list[str], start: int, end: int) -> bool:
        """Whether items already laid out show most of this definition's body (a nested function
        inside the excerpt of the function that holds it)."""
        seen = self.layout.lines_shown.get(file)
        if not seen:
            return False
        body = range(signature_end(lines, start, min(end, len(lines))) + 1, min(end, len(lines)) + 1)
        return len(body) > 0 and sum(n in seen for n in body) >= SHOWN_ENOUGH * len(body)

    @staticmethod
    def _fits_whole(lines: list[str], start: int, end: int, cap: int) -> bool:
        return (
            tokens_for_chars(sum(len(lines[n - 1]) + 1 for n in range(start, min(end, len(lines)) + 1)))
            <= cap
        )

    # -- the map ----------------------------------------------------------------------------

    def add_map(self, ranked: list[Candidate], pool: list[Candidate], *, limit: int) -> None:
        """Briefs of the code's callers and callees, then of relevant candidates not shown."""
        code = set(self.layout.code)
        neighbours = [c for c in ranked if c.neighbour_of in code and c.key not in code]
        rest = [c for c in pool if c.key not in code]
        used = 0
        order = {c.key: c for c in [*neighbours, *rest]}
        for scanned, c in enumerate(order.values()):
            if len(self.layout.map_ids) >= MAX_MAP_ITEMS or limit - used < MIN_BRIEF_TOKENS:
                break
            if scanned >= MAX_MAP_SCAN:
                break
            if c.start_line is not None and self.layout.covered(
                c.file, c.start_line, c.end_line or c.start_line
            ):
                continue
            kind = "summary" if c.symbol is not None else "search"
            near = c.neighbour_of in code
            # The code's direct callers and callees get a summary (what they do and call); the
            # rest a brief: its name and signature are what a NEED needs.
            text = self.digests.summary(c) if near else self.digests.brief(c)
            if (
                used + (len(text) + len(c.file) + len(c.name)) // CHARS_PER_TOKEN > limit
            ):  # a floor: a quick pre-check
                continue  # cannot fit: not worth building the item
            priority = Priority.MEDIUM if near else Priority.LOW
            item = self.make_item(f"{kind}:{c.key}", kind, text, priority, c.reason, c)
            if used + item.tokens > limit:
                continue
            if self.budget.add(item).admitted:
                used += item.tokens
                self.layout.map_ids[c.key] = item.id
                self.layout.sections[item.id] = SECTION_MAP

    # -- files named with @ -----------------------------------------------------------------

    def add_file(self, rel: str) -> None:
        text = self.reader.text(rel)
        if text is None:
            self.notes.append(f"@{rel}: not found, secret or outside the repository")
            return
        last = text.count("\n") + (0 if text.endswith("\n") else 1)
        item = self.make_item(
            f"file:{rel}",
            "file",
            text,
            Priority.CRITICAL,
            f"named in the task `@{rel}`",
            None,
            file=rel,
            symbol=None,
            start_line=1,
            end_line=last,
        )
        if item.tokens <= MENTIONED_FILE_SHARE * self.budget.limit and self.budget.add(item).admitted:
            self.layout.shown.setdefault(rel, []).append((1, last))
            self.layout.sections[item.id] = SECTION_FILES
        else:
            self.notes.append(f"@{rel}: too large to send whole; its definitions compete as usual")
