"""The context budget: which items a prompt may carry, and which go when space runs out.

Owns ``Priority``, ``ContextItem`` and ``ContextBudget``. It counts and evicts; it never
fetches anything and never decides relevance (that is ``gather``'s job).

Admission rule, end to end:
1. An item already present is only marked as used (LRU) and never counted twice.
2. A non-CRITICAL item that does not fit may evict items of *strictly lower* priority,
   lowest priority first and least recently used first within a priority. If even
   evicting all of them would not make room, nothing is evicted and the item is refused.
3. A CRITICAL item may evict every non-CRITICAL item in the same order. If it still does
   not fit, its text is truncated at a line boundary to the space left (marked
   ``[... truncated]``); if fewer than ``MIN_CRITICAL_TOKENS`` are left it is refused.
4. CRITICAL items are never evicted; only ``remove`` takes them out.
So the total never exceeds ``limit``, whatever is added. (Only lowering the budget
later with ``set_request_budget`` can leave CRITICAL items alone above it.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Literal

ItemKind = Literal["overview", "symbol", "source", "summary", "search", "memory", "file", "staged"]

# Below this many tokens a truncated CRITICAL item says too little to be worth sending.
MIN_CRITICAL_TOKENS = 64
TRUNCATION_MARK = "[... truncated to fit the context budget]"

# Seed defaults (004: ContextBudget); settings.budget overrides them.
DEFAULT_MAX_CONTEXT_TOKENS = 100_000
DEFAULT_RESERVED_FOR_RESPONSE = 4_000
DEFAULT_RESERVED_FOR_SYSTEM = 2_000
DEFAULT_REQUEST_BUDGET = 8_000


class Priority(IntEnum):
    """Lower value = more important. Trimming starts from the highest value."""

    CRITICAL = 1  # the overview and the task's own targets
    HIGH = 2  # direct neighbours in the call graph, strong search hits
    MEDIUM = 3  # further search hits, summaries
    LOW = 4  # memory of past turns, broad hits

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class ContextItem:
    """One piece of context with its cost and the human reason it was chosen."""

    id: str
    kind: str
    text: str
    tokens: int
    priority: Priority
    reason: str
    file: str | None = None
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    symbol_id: str | None = None
    elided: bool = False  # a source excerpt: some lines of start..end are replaced by a gap mark

    @property
    def rendered(self) -> str:
        """Exactly what the model receives for this item: its header (kind, symbol, file and
        lines, how it relates to the task) and its text, as ``prompts`` sends it."""
        from engine.orchestrator.prompts import item_text

        return item_text(self)

    def to_json(self) -> dict[str, Any]:
        """The item as `semfora context --json` prints it; ``text`` is what the model receives."""
        return {
            "id": self.id,
            "kind": self.kind,
            "file": self.file,
            "symbol": self.symbol,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "tokens": self.tokens,
            "priority": self.priority.label,
            "reason": self.reason,
            "elided": self.elided,
            "text": self.rendered,
        }


@dataclass(frozen=True)
class Admission:
    """What ``ContextBudget.add`` did: admitted (maybe truncated), evicted, or refused."""

    admitted: bool
    item: ContextItem | None
    evicted: tuple[ContextItem, ...] = ()
    truncated: bool = False
    note: str = ""


def truncate_to_tokens(text: str, allowed: int, count: Callable[[str], int]) -> str:
    """Cut ``text`` at a line boundary so that it plus the mark costs at most ``allowed``."""
    kept: list[str] = []
    for line in text.splitlines(keepends=True):
        candidate = "".join(kept) + line + TRUNCATION_MARK
        if count(candidate) > allowed:
            break
        kept.append(line)
    if not kept:
        # A single huge line: cut by characters, shrinking until it fits.
        size = max(0, allowed * 4 - len(TRUNCATION_MARK))
        while size > 0 and count(text[:size] + TRUNCATION_MARK) > allowed:
            size = int(size * 0.9)
        return text[:size] + TRUNCATION_MARK if size > 0 else ""
    return "".join(kept) + TRUNCATION_MARK


@dataclass
class _Slot:
    item: ContextItem
    last_used: int = field(default=0)


class ContextBudget:
    """A bounded, priority-ordered set of context items (thread-safe)."""

    def __init__(
        self,
        request_budget: int = DEFAULT_REQUEST_BUDGET,
        *,
        max_context_tokens: int = DEFAULT_MAX_CONTEXT_TOKENS,
        reserved_for_response: int = DEFAULT_RESERVED_FOR_RESPONSE,
        reserved_for_system: int = DEFAULT_RESERVED_FOR_SYSTEM,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        if count_tokens is None:
            from engine.tokens import estimate_tokens

            count_tokens = estimate_tokens
        self.count_tokens = count_tokens
        self.request_budget = request_budget
        self.max_context_tokens = max_context_tokens
        self.reserved_for_response = reserved_for_response
        self.reserved_for_system = reserved_for_system
        self._slots: dict[str, _Slot] = {}
        self._clock = 0
        self._lock = threading.RLock()
        self.evicted: list[ContextItem] = []
        self.refused: list[ContextItem] = []

    @classmethod
    def from_settings(cls, settings: Any, request_budget: int | None = None) -> ContextBudget:
        """Build from ``Settings.budget``; ``request_budget`` (``--budget``) wins when given."""
        b = settings.budget
        return cls(
            request_budget if request_budget is not None else b.context_tokens,
            max_context_tokens=b.max_context_tokens,
            reserved_for_response=b.reserved_for_response,
            reserved_for_system=b.reserved_for_system,
        )

    # -- accounting ---------------------------------------------------------------

    @property
    def limit(self) -> int:
        """Tokens curated context may use: the request budget, capped by the window."""
        window = self.max_context_tokens - self.reserved_for_response - self.reserved_for_system
        return max(0, min(self.request_budget, window))

    @property
    def used(self) -> int:
        with self._lock:
            return sum(s.item.tokens for s in self._slots.values())

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def items(self) -> list[ContextItem]:
        """Admitted items in admission order (the order they are sent)."""
        with self._lock:
            return [s.item for s in self._slots.values()]

    def __contains__(self, item_id: object) -> bool:
        with self._lock:
            return item_id in self._slots

    def __len__(self) -> int:
        with self._lock:
            return len(self._slots)

    def get(self, item_id: str) -> ContextItem | None:
        with self._lock:
            slot = self._slots.get(item_id)
            return slot.item if slot else None

    # -- mutation -----------------------------------------------------------------

    def _tick(self) -> int:
        self._clock += 1
        return self._clock

    def touch(self, item_id: str) -> None:
        """Mark an item as just used, so it is the last of its priority to go."""
        with self._lock:
            slot = self._slots.get(item_id)
            if slot is not None:
                slot.last_used = self._tick()

    def remove(self, item_id: str) -> ContextItem | None:
        with self._lock:
            slot = self._slots.pop(item_id, None)
            return slot.item if slot else None

    def _victims(self, below: Priority) -> list[_Slot]:
        """Evictable slots for an item of priority ``below``: lowest priority, then LRU."""
        candidates = [s for s in self._slots.values() if s.item.priority > below]
        if below == Priority.CRITICAL:
            candidates = [s for s in self._slots.values() if s.item.priority != Priority.CRITICAL]
        return sorted(candidates, key=lambda s: (-int(s.item.priority), s.last_used))

    def _evict(self, slots: Iterable[_Slot]) -> tuple[ContextItem, ...]:
        gone = []
        for slot in slots:
            self._slots.pop(slot.item.id, None)
            self.evicted.append(slot.item)
            gone.append(slot.item)
        return tuple(gone)

    def add(self, item: ContextItem) -> Admission:
        """Admit ``item`` following the module's admission rule."""
        with self._lock:
            if item.id in self._slots:
                self._slots[item.id].last_used = self._tick()
                return Admission(True, self._slots[item.id].item, note="already in the pack")
            free = self.limit - self.used
            if item.tokens <= free:
                self._slots[item.id] = _Slot(item, self._tick())
                return Admission(True, item)
            victims = self._victims(item.priority)
            need = item.tokens - free
            chosen: list[_Slot] = []
            for slot in victims:
                if need <= 0:
                    break
                chosen.append(slot)
                need -= slot.item.tokens
            if need <= 0:
                evicted = self._evict(chosen)
                self._slots[item.id] = _Slot(item, self._tick())
                return Admission(True, item, evicted)
            if item.priority != Priority.CRITICAL:
                self.refused.append(item)
                return Admission(False, None, note=f"needs {item.tokens} tokens, {free} free")
            # CRITICAL that cannot fit whole: clear everything evictable, then truncate.
            space = free + sum(s.item.tokens for s in victims)
            if space < MIN_CRITICAL_TOKENS:
                self.refused.append(item)
                return Admission(False, None, note=f"critical item refused: only {space} tokens left")
            evicted = self._evict(victims)
            # item.tokens may include a rendered header around the text; keep that overhead.
            overhead = max(0, item.tokens - self.count_tokens(item.text))
            text = truncate_to_tokens(item.text, max(1, space - overhead), self.count_tokens)
            tokens = min(self.count_tokens(text) + overhead, space)
            cut = replace(item, text=text, tokens=tokens, reason=item.reason + " (truncated to fit)")
            self._slots[cut.id] = _Slot(cut, self._tick())
            return Admission(True, cut, evicted, truncated=True)

    def trim(self, limit: int | None = None) -> tuple[ContextItem, ...]:
        """Evict (lowest priority, LRU first; never CRITICAL) until within ``limit``."""
        with self._lock:
            target = self.limit if limit is None else limit
            excess = self.used - target
            chosen = []
            for slot in self._victims(Priority.CRITICAL):
                if excess <= 0:
                    break
                chosen.append(slot)
                excess -= slot.item.tokens
            return self._evict(chosen)

    def set_request_budget(self, tokens: int) -> tuple[ContextItem, ...]:
        """Change the per-request budget and trim to it."""
        with self._lock:
            self.request_budget = tokens
            return self.trim()
