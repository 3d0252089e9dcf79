"""``ContextGatherer``: one repository's pack builder, calling the steps in order.

Owns the step order and the pack's plumbing (the store, the reader, session memory, the item
factory that redacts and counts each item as the model will read it). The steps themselves
live in their modules: ``terms`` -> ``candidates`` -> ``rank`` (with ``graph``) -> ``fill``;
``need`` answers NEED rounds. It never calls a reasoner.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any

from engine.config import Settings
from engine.errors import SemforaError
from engine.orchestrator.anchors import (
    extract_anchors,
    quoted_messages,
    report_title,
    search_text,
    split_pasted,
)
from engine.orchestrator.budget import ContextBudget, ContextItem, Priority
from engine.orchestrator.context import candidates as channels
from engine.orchestrator.context.digest import Digests
from engine.orchestrator.context.fill import Filler
from engine.orchestrator.context.need import NeedAnswer, answer_need
from engine.orchestrator.context.rank import Ranker, asks_for_tests, asks_for_types, is_report
from engine.orchestrator.context.reads import RepoReader
from engine.orchestrator.intent import classify_intent
from engine.orchestrator.memory import RecalledTurn, SemforaMemory
from engine.orchestrator.prompts import OVERVIEW_ID, SESSION_MEMORY_ID, item_text
from engine.policy.redaction import redact
from engine.query import SymbolIndex, TaskTerms, name_frequencies, task_terms, term_statistics
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol

log = logging.getLogger(__name__)

# The overview is CRITICAL but bounded: at most this share of the request budget.
OVERVIEW_SHARE = 0.03
# Recalled past turns added at most (LOW priority).
MAX_RECALLED = 2
# Send order of the pack's sections: the cached prefix, edits staged earlier in the session (before
# the code they change), files named with @, code, the map (fill.py's 2-4), recalled turns.
SECTION_PREFIX, SECTION_STAGED, SECTION_MEMORY = 0, 1, 5
STAGED_REASON = (
    "staged earlier in this session, not on disk yet: the diff of its hunks (too long to send whole)"
)
STAGED_WHOLE_REASON = "staged earlier in this session, not on disk yet: the whole file as it will read"
# Where a staged file is sent whole, it stands for every line of the file: its definitions on
# disk are not sent as well (they are the old lines).
WHOLE_FILE = (1, 10**9)


@dataclass(frozen=True)
class StagedView:
    """What the model is shown of a file with staged edits: their diff, or (``whole``) the
    file as it will read with them, when it is small."""

    path: str
    text: str
    whole: bool = False


# How the note on a budget cut to the model's window begins (a turn says it before the reply).
BUDGET_CAPPED = "budget capped at"


@dataclass(frozen=True)
class ContextPack:
    """What one task is given: the items in send order and how they were chosen."""

    task: str
    intent: str
    intent_rule: str
    budget: int
    items: tuple[ContextItem, ...]
    anchors: tuple[str, ...] = ()
    timings: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # What was off while gathering (e.g. vectors unavailable): also among ``notes``; a face
    # shows these to the user, since the pack is poorer for them.
    warnings: tuple[str, ...] = ()
    # file -> line ranges the model has in full (a NEED for them is not answered twice)
    shown: dict[str, list[tuple[int, int]]] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(i.tokens for i in self.items)

    @property
    def budget_note(self) -> str | None:
        """Why the budget is below the one asked for (the model's window), or None."""
        return next((n for n in self.notes if n.startswith(BUDGET_CAPPED)), None)

    def to_json(self) -> dict[str, Any]:
        """The BRIEF's `semfora context --json` shape (plus a few extra fields)."""
        return {
            "task": self.task,
            "intent": self.intent,
            "budget": self.budget,
            "total_tokens": self.total_tokens,
            "items": [i.to_json() for i in self.items],
            "intent_rule": self.intent_rule,
            "anchors": list(self.anchors),
            "timings_ms": {k: round(v * 1000, 1) for k, v in self.timings.items()},
            "notes": list(self.notes),
            "warnings": list(self.warnings),
        }


OverviewLoader = Callable[[int], str]  # max_tokens -> overview text


class ContextGatherer:
    """Builds context packs for one repository. Safe to call from one worker thread at a time."""

    def __init__(
        self,
        layout: RepoLayout,
        settings: Settings,
        memory: SemforaMemory,
        *,
        overview: OverviewLoader | None = None,
        count_tokens: Callable[[str], int] | None = None,
    ) -> None:
        from engine.tokens import estimate_tokens

        self.layout = layout
        self.settings = settings
        self.memory = memory
        self.count = count_tokens or estimate_tokens
        self.reader = RepoReader(layout.root, settings.edits.deny)
        self.digests = Digests(layout, settings, memory)
        self._overview_loader = overview
        self._store: SymbolIndex | None = None
        self.warnings: list[str] = []

    # -- plumbing ---------------------------------------------------------------------------

    def store(self) -> SymbolIndex:
        # The app keeps one orchestrator for hours: an index rebuilt meanwhile (its own `--rebuild`,
        # `semfora index --rebuild` in a terminal) is a new file, and the old connection would
        # answer from the deleted one until the app restarts.
        if self._store is not None and self._store.replaced():
            self._store.close()
            self._store = None
        if self._store is None:
            self._store = SymbolIndex(self.layout)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        self.digests.close()

    def item(
        self,
        item_id: str,
        kind: str,
        text: str,
        priority: Priority,
        reason: str,
        cand: channels.Candidate | None = None,
        **where: Any,
    ) -> ContextItem:
        """A redacted item whose ``tokens`` count exactly what the model will read for it."""
        sym = cand.symbol if cand else None
        item = ContextItem(
            id=item_id,
            kind=kind,
            text=redact(text),
            tokens=0,
            priority=priority,
            reason=reason,
            file=where.get("file", sym.file if sym else (cand.file if cand else None)),
            symbol=where.get("symbol", sym.qualified_name if sym else None),
            start_line=where.get(
                "start_line", sym.start_line if sym else (cand.start_line if cand else None)
            ),
            end_line=where.get("end_line", sym.end_line if sym else (cand.end_line if cand else None)),
            symbol_id=sym.id if sym else None,
            elided=bool(where.get("elided", False)),
        )
        return replace(item, tokens=self.count(item_text(item)))

    def header_tokens(self, probe: ContextItem) -> int:
        """What an item's header (label, lines, reason) costs on top of its text."""
        return self.count(item_text(replace(probe, text="")))

    def terms(self, task: str) -> TaskTerms:
        """The task's informative terms, weighed by their rarity in this repository's index."""

        def frequencies(words: Sequence[str]) -> tuple[int, dict[str, int]]:
            return term_statistics(self.layout, self.settings, list(words))

        def names(words: Sequence[str]) -> dict[str, int]:
            return name_frequencies(self.layout, self.settings, list(words))

        prose, pasted = split_pasted(search_text(task))
        title = report_title(prose)
        report = names if is_report(prose, len(pasted)) else None
        try:
            return task_terms(prose, frequencies, "\n".join(pasted), title, report)
        except SemforaError as exc:
            log.warning("no term statistics (%s); weighing the task's words equally", exc)
            return task_terms(prose, None, "\n".join(pasted), title)

    # -- the pack ---------------------------------------------------------------------------

    def rank(
        self, task: str, anchors: Any, terms: TaskTerms
    ) -> tuple[list[channels.Candidate], Ranker, dict[str, float]]:
        """Steps 1-4: candidates from the channels, scored and ordered best first."""
        timings: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            try:
                return fn()
            finally:
                timings[name] = time.perf_counter() - start

        messages: list[tuple[Symbol, str, float]] = []

        def named() -> list[tuple[Symbol, str, float]]:
            with SymbolIndex(self.layout) as own:  # its own connection: this runs in a thread
                found = channels.anchor_channel(own, anchors, self.reader.is_secret, self.reader.safe_rel)
                messages.extend(
                    channels.message_channel(
                        self.layout, self.settings, own, quoted_messages(task), self.reader.is_secret
                    )
                )
                return found

        # Search reads the prose and the names of the traceback's frames; what was pasted (code,
        # logs) reaches the pack through the anchor channel and the task's terms instead.
        prose, pasted = split_pasted(search_text(task))
        frames = " ".join(dict.fromkeys(a.text for a in anchors.frames if a.text.isidentifier()))
        query = " ".join(f"{prose} {frames}".split())[: channels.MAX_QUERY_CHARS]
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="semfora-gather") as pool:
            symbols_f = pool.submit(timed, "symbols", named)
            search_f = pool.submit(
                timed,
                "search",
                lambda: (
                    channels.search_channel(
                        self.layout, self.settings, self.memory, query, self.warnings.append
                    )
                    if query
                    else []
                ),
            )
            symbol_hits, search_hits = symbols_f.result(), search_f.result()

        start = time.perf_counter()
        store = self.store()
        label = query if len(query) <= 28 else query[:27] + "…"
        cands = channels.collect(store, symbol_hits, search_hits, label, self.reader.is_secret, messages)
        report = is_report(prose, len(pasted))
        wants_tests = asks_for_tests(prose, anchors.paths, report=report)
        wants_types = asks_for_types(prose, anchors.paths)
        ranker = Ranker(store, self.reader, terms, wants_tests=wants_tests, wants_types=wants_types)
        ordered = ranker.order(cands, self.reader.is_secret, self.memory.recency)
        timings["rank"] = time.perf_counter() - start
        return ordered, ranker, timings

    def _overview_item(self, budget: ContextBudget) -> ContextItem | None:
        if self._overview_loader is None:
            return None
        cap = max(1, int(budget.limit * OVERVIEW_SHARE))
        loader = self._overview_loader
        try:
            text = self.memory.overview(lambda: loader(cap), variant=cap)
        except SemforaError as exc:
            log.warning("no overview: %s", exc)
            return None
        if not text.strip():
            return None
        reason = f"repository overview (once per session, at most {int(OVERVIEW_SHARE * 100)}% of the budget)"
        item = self.item(OVERVIEW_ID, "overview", text, Priority.CRITICAL, reason)
        if item.tokens > cap:
            from engine.orchestrator.budget import truncate_to_tokens

            item = self.item(
                OVERVIEW_ID,
                "overview",
                truncate_to_tokens(text, cap - 40, self.count),
                Priority.CRITICAL,
                reason + ", cut",
            )
        return item

    def build(
        self,
        task: str,
        budget: ContextBudget,
        *,
        session_lines: list[str] | None = None,
        recalled: list[RecalledTurn] | None = None,
        staged: list[StagedView] | None = None,
    ) -> ContextPack:
        """The context pack for ``task`` within ``budget`` (which it fills while code is relevant).

        ``staged`` is what to show of the files the session has staged edits in: the model is
        shown the files on disk, so it is told what is staged on top of them, before the code.
        A small staged file is shown whole, and its lines on disk are then not sent.
        """
        t0 = time.perf_counter()
        self.warnings = []
        self.reader.refresh()
        # A key typed into the task is masked before it becomes anchors, terms, queries or output.
        task = redact(task)
        classification = classify_intent(task)
        anchors = extract_anchors(task)
        notes: list[str] = []
        if budget.request_budget > budget.limit:  # --budget 150000 showed /94,000 with no word why
            notes.append(
                f"{BUDGET_CAPPED} {budget.limit:,} tokens (asked {budget.request_budget:,}): the model's "
                f"window, budget.max_context_tokens {budget.max_context_tokens:,}, less the reply's "
                f"{budget.reserved_for_response:,} and the system prompt's {budget.reserved_for_system:,}"
            )
        sections: dict[str, int] = {}
        overview = self._overview_item(budget)
        if overview is not None and budget.add(overview).admitted:
            sections[overview.id] = SECTION_PREFIX
        if session_lines:
            memory_item = self.item(
                SESSION_MEMORY_ID,
                "memory",
                "\n".join(session_lines),
                Priority.MEDIUM,
                f"last {len(session_lines)} turns of this session",
            )
            if budget.add(memory_item).admitted:
                sections[memory_item.id] = SECTION_PREFIX
        whole: list[str] = []
        for view in staged or []:
            reason = STAGED_WHOLE_REASON if view.whole else STAGED_REASON
            staged_item = self.item(
                f"staged:{view.path}", "staged", view.text, Priority.HIGH, reason, file=view.path
            )
            if budget.add(staged_item).admitted:
                sections[staged_item.id] = SECTION_STAGED
                if view.whole:
                    whole.append(view.path)
        t_terms = time.perf_counter()
        terms = self.terms(task)
        t_terms = time.perf_counter() - t_terms
        ranked, ranker, timings = self.rank(task, anchors, terms)
        timings["terms"] = t_terms
        t_fill = time.perf_counter()
        mentioned = []
        for path in anchors.of("file_mention"):
            rel = self.reader.safe_rel(path)
            if rel is None:
                notes.append(f"@{path}: not found, secret or outside the repository")
            else:
                mentioned.append(rel)
        filler = Filler(
            budget=budget,
            intent=classification.intent,
            make_item=self.item,
            ranker=ranker,
            digests=self.digests,
            reader=self.reader,
            header_tokens=self.header_tokens,
            notes=notes,
        )
        for path in whole:
            filler.layout.shown[path] = [WHOLE_FILE]
        laid = filler.fill(ranked, mentioned)
        sections.update(laid.sections)
        for turn in (recalled or [])[:MAX_RECALLED]:
            ep = turn.episode
            text = (
                f"Earlier request: {ep.request}\nOutcome: {ep.outcome}; edits: {', '.join(ep.edits) or 'none'}\n"
                f"Reply gist: {ep.reply[:400]}"
            )
            past = self.item(
                f"memory:{ep.run_id}",
                "memory",
                text,
                Priority.LOW,
                f"similar past turn ({turn.source} score {turn.score:.2f})",
            )
            if budget.add(past).admitted:
                sections[past.id] = SECTION_MEMORY
        items = sorted(budget.items(), key=lambda i: sections.get(i.id, SECTION_MEMORY))
        # "Viewed" means the model read the code, not a one-line summary of it.
        self.memory.mark_viewed([i.symbol_id for i in items if i.symbol_id and i.kind == "source"])
        timings["fill"] = time.perf_counter() - t_fill
        timings["total"] = time.perf_counter() - t0
        notes.extend(self.warnings)
        for refused in budget.refused:
            # A memory item has no symbol or file: its reason says which (an earlier turn, this session).
            what = refused.symbol or refused.file or refused.reason
            notes.append(f"left out {refused.kind} {what}: over budget")
        return ContextPack(
            task=task,
            intent=classification.intent.value,
            intent_rule=classification.rule,
            budget=budget.limit,
            items=tuple(items),
            anchors=tuple(a.text for a in anchors.items),
            timings=timings,
            # A note may name a service's URL with its password (Ollama unreachable at http://u:PW@h).
            notes=tuple(redact(n) for n in notes),
            warnings=tuple(redact(w) for w in self.warnings),
            shown={f: list(r) for f, r in laid.shown.items()},
        )

    # -- NEED -------------------------------------------------------------------------------

    def resolve_need(
        self,
        pack: ContextPack | None,
        symbols: Sequence[str],
        files: Sequence[str],
        budget: ContextBudget,
        round_no: int = 1,
        *,
        sent: Sequence[ContextItem] = (),
    ) -> NeedAnswer:
        """Answer one NEED round for ``pack`` within ``budget`` (the round's own allowance).

        ``symbols`` are names as a model writes them (``Session.send``, ``send``), ``files``
        repository paths; ``sent`` the items earlier rounds added. Code the model already has
        whole is not sent again; an excerpt's symbol is sent whole. Returns the admitted items
        and the names not served, with why.
        """
        shown = {f: list(r) for f, r in (pack.shown if pack is not None else {}).items()}
        for item in sent:
            if not item.elided and item.kind in ("source", "file") and item.file and item.start_line:
                shown.setdefault(item.file, []).append((item.start_line, item.end_line or item.start_line))
        return answer_need(
            store=self.store(),
            reader=self.reader,
            make_item=self.item,
            header_tokens=self.header_tokens,
            shown=shown,
            symbols=symbols,
            files=files,
            budget=budget,
            round_no=round_no,
        )

    # -- background summaries ---------------------------------------------------------------

    def missing_summaries(self, items: list[ContextItem], hubs: int = 0) -> list[Any]:
        """Summary requests for symbols without a model summary yet (for presummarize).

        The pack's summary items first, then (``hubs`` > 0) the symbols with the highest
        fan-in, which later packs are most likely to need.
        """
        store = self.store()
        symbols: list[Symbol] = []
        for item in items:
            if item.kind == "summary" and item.symbol_id:
                try:
                    symbols.append(store.symbol(item.symbol_id))
                except SemforaError:
                    continue
        if hubs > 0:
            symbols.extend(sym for sym, _n in store.fan_in(hubs))

        def source_of(sym: Symbol) -> str | None:
            lines = self.reader.lines(sym.file)
            return "\n".join(lines[sym.start_line - 1 : sym.end_line]) if lines else None

        return self.digests.requests_for(symbols, source_of, self.reader.is_secret)
