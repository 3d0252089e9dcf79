"""Context gathering, told end to end: anchors -> retrieval -> ranking -> fill the budget.

Deterministic Python, no model decisions. The algorithm, in the style of aider's repomap:

1. **Retrieve** (two channels in parallel threads): the *symbol channel* looks up every
   identifier anchor in the symbol index (exact, then ranked search) and every path
   anchor's symbols; the *search channel* runs hybrid search (FTS + vectors + symbol
   names) on a query built from the anchors, which also covers plain words.
2. **Fuse**: each candidate scores ``sum(W_channel / (RRF_K + rank))`` over the channels
   that found it, plus ``EXPLICIT_BONUS`` when the user named it (``@X``, ``X()``, backticks).
3. **Graph proximity**: the top ``GRAPH_SEEDS`` become the personalisation vector of a
   small personalised PageRank over their callers and callees; neighbours inherit
   score through call edges, so ``Session.send`` rises when ``Session.request`` is a hit.
   *Siblings* (symbols in the same file as a top hit whose names echo a task word) join too.
4. **Recency**: symbols whose source the model read earlier in the session get a small boost.
5. **Fill by intent**: edit/refactor targets get full source (CRITICAL), their neighbours
   summaries; explain gets summaries first and source for the top few; locate gets
   signatures and locations. Filling stops when the next candidate scores below a
   fraction of the best one (confidence), not when the budget is full.

Every item carries the human reason it was chosen. Secret files never enter the pack
and every text is redacted. This module fetches and ranks; it never calls a reasoner.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.config import Settings
from engine.errors import SemforaError
from engine.orchestrator.anchors import STOPWORDS, Anchors, extract_anchors
from engine.orchestrator.budget import ContextBudget, ContextItem, Priority
from engine.orchestrator.intent import Classification, Intent, classify_intent
from engine.orchestrator.memory import RecalledTurn, SemforaMemory
from engine.orchestrator.prompts import OVERVIEW_ID, SESSION_MEMORY_ID, render_item
from engine.policy.paths import is_non_source
from engine.policy.redaction import redact
from engine.semantic.model import Symbol
from engine.store.layout import RepoLayout

log = logging.getLogger(__name__)

# --- retrieval ---------------------------------------------------------------------------
# Identifier anchors looked up per task; more are usually words of prose mis-read as names.
MAX_SYMBOL_ANCHORS = 8
# Ranked symbol-search results kept per anchor; the index ranks exact and prefix first.
SYMBOL_RESULTS_PER_ANCHOR = 5
# Hybrid search gets the task text up to this length; longer tasks are mostly prose.
MAX_QUERY_CHARS = 300
# Hybrid hits requested: enough for RRF to have a tail without paying for a long one.
HYBRID_LIMIT = 30

# --- fusion --------------------------------------------------------------------------------
# Reciprocal-rank constant: small, so rank 1 clearly beats rank 5 with only two channels.
RRF_K = 10
# The symbol channel is exact about names; hybrid search is broader. Equal weights let a
# symbol found by both outrank one found by either alone.
W_SYMBOL = 1.0
W_SEARCH = 1.0
# Something the user named explicitly is a target, whatever the channels say.
EXPLICIT_BONUS = 0.5
# An identifier from the task (Cart.total, get_user) that names a symbol exactly is
# almost certainly meant, even without @ or backticks.
EXACT_NAME_BONUS = 0.25

# --- graph proximity -----------------------------------------------------------------------
# Seeds of the personalised PageRank: the best few hits; more just dilutes the walk.
GRAPH_SEEDS = 6
# Callers and callees fetched per seed; hub functions have hundreds, the first few suffice.
NEIGHBOURS_PER_SEED = 8
# Restart probability 1 - DAMPING: 0.5 keeps the mass within one or two hops of the seeds.
DAMPING = 0.5
PPR_ITERATIONS = 12
# How much graph mass counts relative to the best fused score.
W_GRAPH = 0.6
# Siblings: symbols in the same file as the top few hits whose names echo a task word
# (sharing a prefix of at least MIN_ECHO_CHARS, so "parsed" echoes `parse`). They get half
# of their seed's score, scaled by how many words they echo, and at most three per seed.
SIBLING_SEEDS = 5
SIBLINGS_PER_SEED = 3
W_SIBLING = 0.5
MIN_ECHO_CHARS = 4
# A symbol viewed last in this session gains this share of the best fused score.
W_RECENCY = 0.15

# --- filling -----------------------------------------------------------------------------
# Full-source targets for edit/refactor/review; beyond three the model loses focus.
MAX_TARGETS = 3
# A second or third target must score at least this share of the best to get full source.
TARGET_MIN_RATIO = 0.5
# Explain gets full source for this many of its top symbols (after their summaries). One:
# a second source cost ~400 tokens a pack on the benchmark and added no gold symbol.
EXPLAIN_SOURCES = 1
# One source item may use at most this share of the budget, by intent; beyond, its summary
# goes in. An edit needs the whole target; an explanation or a location rarely needs a
# whole large class, whose summary and the NEED round serve better. On the benchmark query
# set, larger shares for explain/general added tokens without adding gold symbols.
MAX_SOURCE_SHARE = 0.45
# A second or third edit target (not named by the user) gets full source only under this share;
# ranking is least sure about them, and a larger one is one NEED away.
SECONDARY_SOURCE_SHARE = 0.05
MAX_SOURCE_SHARE_BY_INTENT = {"explain": 0.08, "general": 0.05, "locate": 0.05}
# Tests, examples and docs match many words of a task; they count less unless it asks for them.
NON_SOURCE_WEIGHT = 0.35
TEST_WORDS = frozenset({"test", "tests", "testing", "pytest", "unittest", "example", "examples", "docs"})
# The overview is CRITICAL but bounded: at most this share of the request budget.
OVERVIEW_SHARE = 0.03
# An @mentioned file is sent whole if it takes at most this share of the budget.
MENTIONED_FILE_SHARE = 0.3
# Confidence stop: later candidates scoring under this share of the best are not added.
STOP_RATIO = 0.2
# When every explicit anchor resolved, the task is well pinned: stop sooner.
STOP_RATIO_PINNED = 0.4
# Callers/callees of the targets added as summaries before the confidence stop applies.
MAX_NEIGHBOURS = 8
# The tail (candidates past the targets and their neighbours) gets one-line summaries: the
# signature and the doc's first sentence, cut at this many characters.
BRIEF_CHARS = 60
# Long parameter lists are cut here: the name and the first parameters identify the symbol.
BRIEF_SIGNATURE_CHARS = 60
# Which tail candidates get the one-line form: those under this share of the best evidence
# (1.0: the whole tail; 0.5: only the LOW-priority part).
BRIEF_BELOW = 1.0
# Neighbours (callers/callees of the targets) get the one-line form too: their names and
# signatures say how they relate; their bodies are one NEED away.
BRIEF_NEIGHBOURS = True
# The ranked tail (one-line summaries past the targets and their neighbours) may use at most
# this share of the budget: past it, more names cost more than the NEED round that can fetch them.
TAIL_SHARE = 0.1
# Upper bound on items, whatever the scores: a pack is read by a model, not searched.
MAX_ITEMS = 32
# Recalled past turns added at most (LOW priority).
MAX_RECALLED = 2


@dataclass
class Candidate:
    """A symbol (or a file range) competing for a place in the pack."""

    key: str  # symbol id, or "file:line" for a chunk without a symbol
    symbol: Symbol | None = None
    file: str = ""
    start_line: int | None = None
    end_line: int | None = None
    snippet: str = ""
    fused: float = 0.0
    graph: float = 0.0
    recency: float = 0.0
    explicit: bool = False
    bonus: float = 0.0
    neighbour_of: str | None = None  # the seed this candidate is a caller or callee of
    ranks: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    @property
    def score(self) -> float:
        return self.fused + self.graph + self.recency

    @property
    def evidence(self) -> float:
        """The score without the naming bonus: how strongly retrieval alone supports it."""
        return self.score - self.bonus

    @property
    def name(self) -> str:
        return self.symbol.qualified_name if self.symbol else (self.file or self.key)

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons)) or "search hit"


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

    @property
    def total_tokens(self) -> int:
        return sum(i.tokens for i in self.items)

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
        from engine.llm.tokens import estimate_tokens

        self.layout = layout
        self.settings = settings
        self.memory = memory
        self.count = count_tokens or estimate_tokens
        self._overview_loader = overview
        self._store: Any = None
        self._summary_cache: Any = None
        self.warnings: list[str] = []

    # -- plumbing --------------------------------------------------------------------------

    def store(self) -> Any:
        if self._store is None:
            from engine.store.db import SymbolStore

            self._store = SymbolStore(self.layout)
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._summary_cache is not None:
            self._summary_cache.close()
            self._summary_cache = None

    def _is_secret(self, rel: str) -> bool:
        from engine.policy.names import is_secret_name

        return is_secret_name(rel, self.settings.edits.deny)

    def _item(
        self,
        item_id: str,
        kind: str,
        text: str,
        priority: Priority,
        reason: str,
        cand: Candidate | None = None,
        **where: Any,
    ) -> ContextItem:
        text = redact(text)
        sym = cand.symbol if cand else None
        item = ContextItem(
            id=item_id,
            kind=kind,
            text=text,
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
        )
        # Count what the model will read: the item's header and reason as well as its text.
        return replace(item, tokens=self.count(render_item(item)))

    # -- step 1: retrieval -----------------------------------------------------------------

    def _symbol_channel(self, anchors: Anchors) -> list[tuple[Symbol, str, float]]:
        """(symbol, reason, bonus) in channel rank order, from names and paths in the task.

        ``bonus`` is EXPLICIT_BONUS for what the user named on purpose, EXACT_NAME_BONUS for
        an exact identifier match, 0 for ranked search results."""
        from engine.store.db import SymbolStore

        out: list[tuple[Symbol, str, float]] = []
        seen: set[str] = set()
        explicit_texts = {a.text for a in anchors.explicit}

        def take(sym: Symbol, reason: str, bonus: float) -> None:
            if sym.id not in seen and not self._is_secret(sym.file):
                seen.add(sym.id)
                out.append((sym, reason, bonus))

        with SymbolStore(self.layout) as store:
            for name in anchors.symbols[:MAX_SYMBOL_ANCHORS]:
                explicit = name in explicit_texts
                exact = store.symbols_by_name(name, limit=SYMBOL_RESULTS_PER_ANCHOR)
                if not exact and "." in name:
                    exact = [
                        s
                        for s in store.symbols_by_name(name.rsplit(".", 1)[1], limit=20)
                        if s.qualified_name.endswith(name) or s.parent == name.rsplit(".", 1)[0]
                    ]
                label = "named in the task" if explicit else "exact name match"
                for sym in exact:
                    take(sym, f"{label} `{name}`", EXPLICIT_BONUS if explicit else EXACT_NAME_BONUS)
                if not exact:
                    for rank, sym in enumerate(
                        store.search_symbols(name, limit=SYMBOL_RESULTS_PER_ANCHOR), 1
                    ):
                        take(sym, f"symbol search rank {rank} for '{name}'", 0.0)
            for path in anchors.paths:
                rel = self._safe_rel(path)
                if rel is None:
                    continue
                for sym in store.symbols_in_file(rel):
                    if sym.parent is None:
                        take(
                            sym,
                            f"defined in `{rel}` named in the task",
                            EXACT_NAME_BONUS if path in explicit_texts else 0.0,
                        )
        return out

    def _search_channel(self, query: str) -> list[Any]:
        """Hybrid search hits (FTS + vectors), cached in session memory for five minutes."""
        key = f"hybrid:{query}"
        cached = self.memory.search(key)
        if cached is not None:
            return list(cached)
        from engine.index.hybrid import search

        try:
            hits = list(
                search(
                    self.layout,
                    self.settings,
                    query,
                    mode="hybrid",
                    limit=HYBRID_LIMIT,
                    on_warning=self.warnings.append,
                )
            )
        except SemforaError as exc:
            log.warning("hybrid search failed (%s); continuing with symbols only", exc)
            return []
        self.memory.remember_search(key, hits)
        return hits

    def _safe_rel(self, path: str) -> str | None:
        """The real repository-relative path of ``path`` if the pack may show it, else None
        (outside the root or .git through any symlink, secret, a loop, missing)."""
        from engine.policy.sandbox import resolve

        try:
            return resolve(self.layout.root, path, deny=self.settings.edits.deny).rel
        except SemforaError:
            return None

    # -- steps 2-4: ranking ----------------------------------------------------------------

    def rank(self, anchors: Anchors, query: str) -> tuple[list[Candidate], dict[str, float]]:
        """Candidates best first, and how long each channel took."""
        timings: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], Any]) -> Any:
            start = time.perf_counter()
            try:
                return fn()
            finally:
                timings[name] = time.perf_counter() - start

        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="semfora-gather") as pool:
            symbols_f = pool.submit(timed, "symbols", lambda: self._symbol_channel(anchors))
            search_f = pool.submit(timed, "search", lambda: self._search_channel(query) if query else [])
            symbol_hits = symbols_f.result()
            search_hits = search_f.result()

        start = time.perf_counter()
        cands: dict[str, Candidate] = {}
        for rank, (sym, reason, bonus) in enumerate(symbol_hits, 1):
            c = cands.setdefault(sym.id, Candidate(sym.id, sym, sym.file, sym.start_line, sym.end_line))
            c.ranks["symbols"] = min(c.ranks.get("symbols", rank), rank)
            c.fused += W_SYMBOL / (RRF_K + rank)
            c.bonus = max(c.bonus, bonus)
            c.explicit = c.explicit or bonus >= EXPLICIT_BONUS
            c.reasons.append(reason)
        store = self.store()
        for rank, hit in enumerate(search_hits, 1):
            file = getattr(hit, "file", "") or ""
            if not file or self._is_secret(file):
                continue
            sid = getattr(hit, "symbol_id", None)
            key = sid or f"{file}:{getattr(hit, 'start_line', 0)}"
            found = cands.get(key)
            if found is not None:
                c = found
            else:
                sym = self._symbol(store, sid) if sid else None
                c = Candidate(
                    key,
                    sym,
                    file,
                    getattr(hit, "start_line", None),
                    getattr(hit, "end_line", None),
                    snippet=getattr(hit, "snippet", "") or "",
                )
                cands[key] = c
            c.ranks["search"] = min(c.ranks.get("search", rank), rank)
            c.fused += W_SEARCH / (RRF_K + rank)
            c.reasons.append(f"{_sources_label(hit)} for '{_short(query)}'")
        wants_tests = any(w.lower() in TEST_WORDS for w in anchors.words) or any(
            "test" in p.lower() for p in anchors.paths
        )
        for c in cands.values():
            if not wants_tests and _is_non_source(c.file):
                c.fused *= NON_SOURCE_WEIGHT
            c.fused += c.bonus
        ordered = sorted(cands.values(), key=lambda c: -c.fused)
        if ordered:
            self._sibling_boost(store, ordered, cands, anchors)
            self._graph_boost(store, ordered, cands, wants_tests)
            best = max(c.fused for c in ordered)
            for c in cands.values():
                c.recency = W_RECENCY * best * self.memory.recency(c.key)
                if c.recency:
                    c.reasons.append("viewed earlier in this session")
        timings["rank"] = time.perf_counter() - start
        return sorted(cands.values(), key=lambda c: (-c.score, c.key)), timings

    @staticmethod
    def _symbol(store: Any, symbol_id: str) -> Symbol | None:
        try:
            return store.symbol(symbol_id)  # type: ignore[no-any-return]
        except SemforaError:
            return None

    def _sibling_boost(
        self, store: Any, ordered: list[Candidate], cands: dict[str, Candidate], anchors: Anchors
    ) -> None:
        """Symbols defined next to a top hit whose names echo the task's words.

        ``check_password`` found by search pulls in ``make_password`` for "how are passwords
        hashed and checked"; ``MultiPartParser`` pulls in ``MultiPartParser.parse`` for
        "where is the upload parsed". Call edges miss these: they are neighbours by place.
        """
        from engine.store.db import identifier_parts

        words = {w.lower() for a in anchors.items for w in re.findall(r"[A-Za-z]+", a.text)}
        words = {w for w in words if len(w) >= MIN_ECHO_CHARS and w not in STOPWORDS}
        if not words:
            return
        seeds = [c for c in ordered if c.symbol is not None][:SIBLING_SEEDS]
        by_file: dict[str, list[Symbol]] = {}
        for seed in seeds:
            siblings = by_file.get(seed.file)
            if siblings is None:
                siblings = by_file[seed.file] = store.symbols_in_file(seed.file)
            taken = 0
            for sym in siblings:
                if sym.id in cands or taken >= SIBLINGS_PER_SEED or self._is_secret(sym.file):
                    continue
                echo = sorted({w for w in words for part in identifier_parts(sym.name) if _echoes(part, w)})
                if not echo:
                    continue
                taken += 1
                c = Candidate(sym.id, sym, sym.file, sym.start_line, sym.end_line)
                c.fused = W_SIBLING * seed.fused * min(1.0, len(echo) / 2)
                c.reasons.append(f"next to `{seed.name}`, named like the task ('{echo[0]}')")
                cands[sym.id] = c

    def _graph_boost(
        self, store: Any, ordered: list[Candidate], cands: dict[str, Candidate], wants_tests: bool
    ) -> None:
        """Personalised PageRank from the top hits over their callers and callees."""
        seeds = [c for c in ordered if c.symbol is not None][:GRAPH_SEEDS]
        if not seeds:
            return
        edges: dict[str, set[str]] = {}
        why: dict[str, tuple[str, str]] = {}
        for seed in seeds:
            relations = [("callee", store.callees(seed.key, 1))]
            if seed.symbol is not None and seed.symbol.kind != "class":
                # A class's callers are only its instantiations: noise, not context.
                relations.append(("caller", store.callers(seed.key, 1)))
            for relation, nodes in relations:
                kept = [n for n in nodes if wants_tests or not _is_non_source(getattr(n, "file", "") or "")]
                for node in kept[:NEIGHBOURS_PER_SEED]:
                    other = getattr(node, "symbol_id", None)
                    if not other or other == seed.key:
                        continue
                    edges.setdefault(seed.key, set()).add(other)
                    edges.setdefault(other, set()).add(seed.key)
                    why.setdefault(other, (f"{relation} of `{seed.name}`", seed.key))
        if not edges:
            return
        total = sum(s.fused for s in seeds)
        personal = {s.key: s.fused / total for s in seeds}
        rank = dict(personal)
        for _ in range(PPR_ITERATIONS):
            nxt = {k: (1 - DAMPING) * v for k, v in personal.items()}
            for node, score in rank.items():
                out = edges.get(node)
                if not out:
                    nxt[node] = nxt.get(node, 0.0) + DAMPING * score  # dangling: mass stays put
                    continue
                share = DAMPING * score / len(out)
                for other in out:
                    nxt[other] = nxt.get(other, 0.0) + share
            rank = nxt
        best = max(c.fused for c in ordered)
        for node, mass in rank.items():
            boost = W_GRAPH * best * (mass - personal.get(node, 0.0) * (1 - DAMPING))
            if boost <= 0:
                continue
            c = cands.get(node)
            if c is None:
                sym = self._symbol(store, node)
                if sym is None or self._is_secret(sym.file):
                    continue
                c = Candidate(node, sym, sym.file, sym.start_line, sym.end_line)
                cands[node] = c
            c.graph += boost
            seed_cand = cands.get(why[node][1]) if node in why else None
            if seed_cand is not None and (node not in personal or c.fused < seed_cand.fused):
                c.neighbour_of = seed_cand.key
                c.reasons.append(why[node][0])

    # -- step 5: filling -------------------------------------------------------------------

    def _source(self, cand: Candidate) -> tuple[str, int, int] | None:
        if cand.symbol is None:
            return None
        key = f"src:{cand.symbol.id}:{cand.symbol.body_hash}"
        cached = self.memory.symbol(key)
        if cached is not None:
            return tuple(cached)  # type: ignore[return-value]
        from engine.store.db import symbol_source

        try:
            result = symbol_source(self.layout, cand.symbol)
        except SemforaError as exc:
            log.warning("cannot read source of %s: %s", cand.name, exc)
            return None
        self.memory.remember_symbol(key, result)
        return result

    def _summary(self, cand: Candidate) -> str:
        sym = cand.symbol
        if sym is None:
            return cand.snippet.strip() or f"{cand.file}:{cand.start_line}"
        key = f"sum:{sym.id}:{sym.body_hash}"
        cached = self.memory.symbol(key)
        if cached is not None:
            return str(cached)
        from engine.llm.summarizer import SummaryFacts, extractive_summary

        facts = SummaryFacts(
            name=sym.qualified_name,
            kind=sym.kind,
            signature=sym.signature,
            doc=sym.doc,
            calls=tuple(c.name if not c.receiver else f"{c.receiver}.{c.name}" for c in sym.calls),
            risk_level=sym.risk.level,
            risk_reasons=tuple(sym.risk.reasons),
        )  # no file/lines: the item header already says where it is
        # Packs never wait on a model: a summary Ollama wrote earlier (cache.db) or the
        # extractive one (which leads with the signature). Missing model summaries are
        # filled in the background (presummarize).
        model = self._cached_model_summary(sym.body_hash or sym.id)
        if model:
            signature = sym.signature.strip().splitlines()[0] if sym.signature.strip() else sym.qualified_name
            out = f"{signature}\n{model}"
        else:
            out = extractive_summary(facts)
        self.memory.remember_symbol(key, out)
        return out

    def _brief(self, cand: Candidate) -> str:
        """A one-line summary for the pack's tail: the signature and the first sentence of the doc.

        Tail candidates are there so the model knows they exist and what they are for; the
        calls list and risk of the full extractive summary cost more than they tell, and the
        model can ask for the rest with a NEED block.
        """
        sym = cand.symbol
        if sym is None:
            first = next((line.strip() for line in cand.snippet.splitlines() if line.strip()), "")
            return first[:BRIEF_CHARS] or f"{cand.file}:{cand.start_line}"
        head = " ".join(sym.signature.split()).rstrip(":{ ") if sym.signature.strip() else ""
        text = _clip(head, BRIEF_SIGNATURE_CHARS) or f"{sym.kind} {sym.qualified_name}"
        doc = next((line.strip() for line in sym.doc.splitlines() if line.strip()), "")
        if doc:
            sentence = doc.split(". ", 1)[0].rstrip(".")
            text += " — " + _clip(sentence, BRIEF_CHARS)
        return text

    def _cached_model_summary(self, content_hash: str) -> str | None:
        from engine.llm.summarizer import NAMESPACE

        if self._summary_cache is None:
            from engine.index.cache import ResultCache

            self._summary_cache = ResultCache(
                self.layout.cache_db, ttl_days=self.settings.cache.ttl_days, max_mb=self.settings.cache.max_mb
            )
        raw = self._summary_cache.get(NAMESPACE, summary_cache_key(self.settings, content_hash))
        if raw is None:
            return None
        try:
            return str(json.loads(raw)["text"])
        except (ValueError, KeyError, TypeError):
            return None

    def missing_summaries(self, items: list[ContextItem], hubs: int = 0) -> list[Any]:
        """Summary requests for symbols without a model summary yet (for presummarize).

        The pack's summary items first, then (``hubs`` > 0) the symbols with the highest
        fan-in, which later packs are most likely to need.
        """
        from engine.llm.summarizer import SummaryFacts, SummaryRequest

        store = self.store()
        symbols: list[Symbol] = []
        for item in items:
            if item.kind == "summary" and item.symbol_id:
                found = self._symbol(store, item.symbol_id)
                if found is not None:
                    symbols.append(found)
        if hubs > 0:
            symbols.extend(sym for sym, _n in store.fan_in(hubs))
        requests = []
        seen: set[str] = set()
        for sym in symbols:
            content_hash = sym.body_hash or sym.id
            if content_hash in seen or self._is_secret(sym.file):
                continue
            seen.add(content_hash)
            if self._cached_model_summary(content_hash) is not None:
                continue
            src = self._source(Candidate(sym.id, sym, sym.file, sym.start_line, sym.end_line))
            facts = SummaryFacts(
                name=sym.qualified_name,
                kind=sym.kind,
                signature=sym.signature,
                doc=sym.doc,
                file=sym.file,
                start_line=sym.start_line,
                end_line=sym.end_line,
            )
            requests.append(SummaryRequest(src[0] if src else sym.signature, content_hash, "symbol", facts))
        return requests

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
        item = self._item(OVERVIEW_ID, "overview", text, Priority.CRITICAL, reason)
        if item.tokens > cap:
            from engine.orchestrator.budget import truncate_to_tokens

            item = self._item(
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
    ) -> ContextPack:
        """The context pack for ``task`` within ``budget`` (which it fills)."""
        t0 = time.perf_counter()
        self.warnings = []
        # A key typed into the task is masked before it becomes anchors, queries, reasons or output.
        task = redact(task)
        classification = classify_intent(task)
        anchors = extract_anchors(task)
        notes: list[str] = []
        overview = self._overview_item(budget)
        if overview is not None:
            budget.add(overview)
        if session_lines:
            text = "\n".join(session_lines)
            budget.add(
                self._item(
                    SESSION_MEMORY_ID,
                    "memory",
                    text,
                    Priority.MEDIUM,
                    f"last {len(session_lines)} turns of this session",
                )
            )
        # Hybrid search is built for plain-language queries: give it the task itself.
        query = " ".join(task.split())[:MAX_QUERY_CHARS]
        ranked, timings = self.rank(anchors, query)
        t_fill = time.perf_counter()
        self._fill(classification, anchors, ranked, budget, notes)
        for turn in (recalled or [])[:MAX_RECALLED]:
            ep = turn.episode
            text = (
                f"Earlier request: {ep.request}\nOutcome: {ep.outcome}; edits: {', '.join(ep.edits) or 'none'}\n"
                f"Reply gist: {ep.reply[:400]}"
            )
            budget.add(
                self._item(
                    f"memory:{ep.run_id}",
                    "memory",
                    text,
                    Priority.LOW,
                    f"similar past turn ({turn.source} score {turn.score:.2f})",
                )
            )
        # "Viewed" means the model read the code, not a one-line summary of it.
        self.memory.mark_viewed([i.symbol_id for i in budget.items() if i.symbol_id and i.kind == "source"])
        timings["fill"] = time.perf_counter() - t_fill
        timings["total"] = time.perf_counter() - t0
        notes.extend(self.warnings)
        for refused in budget.refused:
            notes.append(f"left out {refused.kind} {refused.symbol or refused.file}: over budget")
        return ContextPack(
            task=task,
            intent=classification.intent.value,
            intent_rule=classification.rule,
            budget=budget.limit,
            items=tuple(budget.items()),
            anchors=tuple(a.text for a in anchors.items),
            timings=timings,
            notes=tuple(notes),
        )

    def _fill(
        self,
        cls: Classification,
        anchors: Anchors,
        ranked: list[Candidate],
        budget: ContextBudget,
        notes: list[str],
    ) -> None:
        if not ranked:
            notes.append("no symbol or search hit for this task")
            return
        intent = cls.intent
        best = ranked[0].score
        explicit = [c for c in ranked if c.explicit]
        pinned = bool(anchors.explicit) and len(explicit) >= len(
            [a for a in anchors.explicit if a.is_symbolish]
        )
        stop = STOP_RATIO_PINNED if pinned else STOP_RATIO
        added = 0

        shown: list[tuple[str, int, int]] = []  # (file, first, last) of admitted source

        def covered(c: Candidate) -> bool:
            """Already inside an admitted source item: sending it again adds nothing."""
            if not c.file or c.start_line is None:
                return False
            end = c.end_line or c.start_line
            return any(f == c.file and a <= c.start_line and end <= b for f, a, b in shown)

        def contains_shown(c: Candidate) -> bool:
            if not c.file or c.start_line is None:
                return False
            end = c.end_line or c.start_line
            return any(f == c.file and c.start_line <= a and b <= end for f, a, b in shown)

        def add_source(c: Candidate, priority: Priority, why: str, share: float | None = None) -> bool:
            if covered(c):
                return True
            if contains_shown(c):
                return False  # e.g. the class of a method already shown: its summary is enough
            src = self._source(c)
            if src is None:
                return False
            text, first, last = src
            tokens = self.count(text)
            if share is None:
                share = MAX_SOURCE_SHARE_BY_INTENT.get(intent.value, MAX_SOURCE_SHARE)
            if tokens > share * budget.limit:
                notes.append(f"{c.name}: source is {tokens} tokens, summary sent instead")
                return False
            item = self._item(
                f"source:{c.key}",
                "source",
                text,
                priority,
                f"{why}: {c.reason}",
                c,
                start_line=first,
                end_line=last,
            )
            if not budget.add(item).admitted:
                return False
            shown.append((c.file, first, last))
            return True

        def add_summary(c: Candidate, priority: Priority, why: str = "", brief: bool = False) -> bool:
            if covered(c):
                return False
            kind = "summary" if c.symbol is not None else "search"
            text = self._brief(c) if brief else self._summary(c)
            reason = f"{why}: {c.reason}" if why else c.reason
            return budget.add(self._item(f"{kind}:{c.key}", kind, text, priority, reason, c)).admitted

        def add_locator(c: Candidate, priority: Priority, brief: bool = False) -> bool:
            sym = c.symbol
            if sym is None:
                return add_summary(c, priority, brief=brief)
            if covered(c):
                return False
            # The item header already carries the file and lines.
            text = self._brief(c) if brief else f"{sym.kind} {sym.qualified_name}\n{self._summary(c)}"
            return budget.add(self._item(f"symbol:{c.key}", "symbol", text, priority, c.reason, c)).admitted

        # A file the user @mentioned is shown whole when it is small enough: they pointed at it.
        for path in anchors.of("file_mention"):
            rel = self._safe_rel(path)
            if rel is None:
                notes.append(f"@{path}: not found, secret or outside the repository")
                continue
            text = _read_text(self.layout.root / rel)
            last = text.count("\n") + (0 if text.endswith("\n") else 1)
            item = self._item(
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
            if item.tokens <= MENTIONED_FILE_SHARE * budget.limit and budget.add(item).admitted:
                shown.append((rel, 1, last))
                added += 1
            else:
                notes.append(f"@{rel}: too large to send whole; its symbols compete as usual")

        targets: list[Candidate] = []
        for c in ranked:
            if c.symbol is None:
                continue
            if len(targets) < MAX_TARGETS and (
                c.explicit or c.score >= TARGET_MIN_RATIO * best or not targets
            ):
                targets.append(c)
        target_keys = {c.key for c in targets}

        if intent in (Intent.EDIT, Intent.REFACTOR, Intent.REVIEW):
            label = "under review" if intent == Intent.REVIEW else "edit target"
            for n, c in enumerate(targets):
                # The best target may be large; the runners-up get source only when it is short.
                share = None if n == 0 or c.explicit else SECONDARY_SOURCE_SHARE
                if add_source(c, Priority.CRITICAL, label, share) or add_summary(
                    c, Priority.CRITICAL, "target (summary)"
                ):
                    added += 1
        elif intent == Intent.LOCATE:
            for c in targets:
                added += add_locator(c, Priority.HIGH)
            if targets:
                added += add_source(targets[0], Priority.MEDIUM, "best match")
        else:  # explain, general: summaries first, then source of the top few
            for c in targets:
                added += add_summary(c, Priority.HIGH)
            for c in targets[:EXPLAIN_SOURCES]:
                if add_source(c, Priority.HIGH, "top match"):
                    # The source carries the signature and docstring: its summary is now redundant.
                    budget.remove(f"summary:{c.key}")

        neighbour_priority = Priority.MEDIUM if intent in (Intent.EXPLAIN, Intent.GENERAL) else Priority.HIGH
        neighbours = [c for c in ranked if c.neighbour_of in target_keys and c.key not in target_keys]
        done = set(target_keys)
        for c in neighbours[:MAX_NEIGHBOURS]:
            done.add(c.key)
            added += (
                add_locator(c, neighbour_priority, brief=BRIEF_NEIGHBOURS)
                if intent == Intent.LOCATE
                else add_summary(c, neighbour_priority, brief=BRIEF_NEIGHBOURS)
            )

        best_evidence = max((c.evidence for c in ranked), default=0.0)
        tail_start = budget.used
        for c in ranked:
            if added >= MAX_ITEMS:
                notes.append(f"stopped at {MAX_ITEMS} items")
                break
            if budget.used - tail_start >= TAIL_SHARE * budget.limit:
                notes.append(f"stopped when the ranked tail reached {int(TAIL_SHARE * 100)}% of the budget")
                break
            if c.key in done:
                continue
            if c.evidence < stop * best_evidence:
                notes.append(f"stopped when scores fell below {int(stop * 100)}% of the best (confident)")
                break
            priority = Priority.MEDIUM if c.evidence >= 0.5 * best_evidence else Priority.LOW
            brief = c.evidence < BRIEF_BELOW * best_evidence
            if intent == Intent.LOCATE:
                added += add_locator(c, priority, brief=brief)
            else:
                added += add_summary(c, priority, brief=brief)

    # -- NEED follow-ups -------------------------------------------------------------------

    def resolve_need(
        self, symbols: tuple[str, ...], files: tuple[str, ...], budget: ContextBudget, round_no: int
    ) -> tuple[list[ContextItem], list[str]]:
        """Fetch what the model asked for, within what is left of the budget (nothing is evicted).

        Returns the admitted items and the names that could not be served (unknown, secret,
        outside the repository or over budget).
        """
        store = self.store()
        items: list[ContextItem] = []
        missing: list[str] = []
        reason = f"requested by the model (NEED round {round_no})"

        def admit(item: ContextItem) -> bool:
            if item.id in budget or item.tokens > budget.remaining:
                return False
            return budget.add(item).admitted

        for name in symbols:
            found = store.symbols_by_name(name, limit=3) or store.search_symbols(name, limit=1)
            found = [s for s in found if not self._is_secret(s.file)]
            if not found:
                missing.append(name)
                continue
            for sym in found[:2]:
                cand = Candidate(sym.id, sym, sym.file, sym.start_line, sym.end_line, reasons=[reason])
                src = self._source(cand)
                ok = False
                if src is not None:
                    item = self._item(
                        f"need:source:{sym.id}",
                        "source",
                        src[0],
                        Priority.HIGH,
                        reason,
                        cand,
                        start_line=src[1],
                        end_line=src[2],
                    )
                    ok = admit(item)
                if not ok:
                    item = self._item(
                        f"need:summary:{sym.id}",
                        "summary",
                        self._summary(cand),
                        Priority.HIGH,
                        reason + " (summary: source over budget)",
                        cand,
                    )
                    ok = admit(item)
                if ok:
                    items.append(item)
                else:
                    missing.append(f"{name} (over budget)")
        for path in files:
            rel = self._safe_rel(path)
            if rel is None:
                missing.append(f"{path} (not found, secret or outside the repository)")
                continue
            text = _read_text(self.layout.root / rel)
            item = self._item(
                f"need:file:{rel}",
                "file",
                text,
                Priority.HIGH,
                reason,
                None,
                file=rel,
                symbol=None,
                start_line=1,
                end_line=text.count("\n") + 1,
            )
            if admit(item):
                items.append(item)
                continue
            outline = "\n".join(
                f"{s.kind} {s.qualified_name} (lines {s.start_line}-{s.end_line})"
                for s in store.symbols_in_file(rel)
            )
            item = self._item(
                f"need:outline:{rel}",
                "file",
                outline or "(no symbols)",
                Priority.HIGH,
                reason + " (outline: file over budget)",
                None,
                file=rel,
                symbol=None,
                start_line=None,
                end_line=None,
            )
            if admit(item):
                items.append(item)
            else:
                missing.append(f"{path} (over budget)")
        return items, missing


def _echoes(part: str, word: str) -> bool:
    """An identifier part and a task word share a stem: ``perm``/``permission``, ``parse``/``parsed``."""
    if len(part) < MIN_ECHO_CHARS or len(word) < MIN_ECHO_CHARS:
        return False
    common = len(os.path.commonprefix([part, word]))
    return common >= MIN_ECHO_CHARS and common >= min(len(part), len(word)) - 1


_is_non_source = is_non_source  # tests, examples and docs: the one policy classifier


def summary_cache_key(settings: Settings, content_hash: str) -> str:
    """The key ``Summarizer.cache_key`` writes symbol summaries under (a test keeps them equal)."""
    return f"{settings.ollama.summary_model}|symbol|{content_hash}"


def _read_text(path: Path) -> str:
    """A file ``_safe_rel`` resolved (a real path): opened without following a link."""
    from engine.policy.sandbox import open_checked

    try:
        return open_checked(path).decode("utf-8", errors="replace")
    except SemforaError as exc:
        return f"(unreadable: {exc.message})"


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _short(text: str, limit: int = 28) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sources_label(hit: Any) -> str:
    """'fts rank 2', 'fts rank 1, vector rank 4'... from a hit's per-source ranks."""
    sources = getattr(hit, "sources", None)
    if not isinstance(sources, dict):
        return "search"
    parts = [f"{name} rank {rank}" for name, rank in sorted(sources.items()) if rank]
    return ", ".join(parts) or "search"
