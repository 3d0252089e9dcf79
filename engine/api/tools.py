"""The engine's read tools: the part of the front door (``engine.api``) the MCP server serves.

Each tool takes an ``Engine`` (one repository, its settings and its store) and returns a
``ToolResult``: a frozen, typed value (``engine.api.values``) whose ``to_json()`` is the
``--json``/MCP contract, and compact TOON text for models. Limits are enforced here
(``UsageError`` above a maximum), and each docstring states the tool's rough token cost;
``TOOLS`` enumerates them all. Faces call these functions, never the store behind them.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from engine.api.values import (
    MAX_STALE_PATHS,
    STALE_ID_HINT,
    CallerRef,
    CallView,
    DirectoryFile,
    DirectorySummary,
    FileAnalysis,
    GraphEdge,
    GraphView,
    IndexHealth,
    IndexSummary,
    JsonValue,
    LanguageInfo,
    LanguageList,
    ModuleList,
    ModuleSummary,
    ModuleSymbols,
    RepoOverview,
    SourceView,
    SymbolDetail,
    SymbolDetails,
    SymbolList,
    SymbolMatches,
    SymbolRow,
    SymbolView,
)
from engine.config import Settings, load_settings
from engine.errors import EngineWarning, NotFoundError, PathDenied, SemforaError, UsageError, WarningSink
from engine.policy.sandbox import ResolvedPath
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol
from engine.store.db import (
    MAX_GRAPH_DEPTH,
    MAX_GRAPH_NODES,
    SymbolStore,
    file_identity,
    indexed_discovery_key,
    symbol_source,
)
from engine.words import noun_for

if TYPE_CHECKING:
    from engine.index.indexer import IndexReport
    from engine.llm.base import Reasoner
    from engine.orchestrator.context import ContextPack
    from engine.orchestrator.core import Orchestrator

# Hard caps from the tool contract (seed 004): a reply can never flood a context window.
MAX_LIST_SYMBOLS = 200
MAX_SEARCH_SYMBOLS = 100
MAX_GET_SYMBOLS = 20
MAX_SOURCE_CONTEXT = 50
# A symbol's source is cut after this many lines (a 3,000-line class is not one answer).
MAX_SOURCE_LINES = 400
# get_module lists at most this many symbols; it is the expensive tool already.
MAX_MODULE_SYMBOLS = 500
# analyze_directory lists at most this many files when not summarising.
MAX_DIRECTORY_FILES = 300
# `semfora symbol NAME` with no exact match lists at most this many name matches.
FIND_FALLBACK_LIMIT = 10
# `semfora symbol NAME` lists at most this many symbols of that name, and counts them up to the cap.
FIND_LIMIT = 50
FIND_COUNT_CAP = 10_000
# Calls shown inside one get_symbol reply.
MAX_SYMBOL_CALLS = 40
# get_context budgets: the app's default; at most what one MCP reply carries (its cap is
# 100,000 characters, ~25,000 tokens at chars/4); below the minimum a pack holds no code.
DEFAULT_CONTEXT_BUDGET = 8_000
MAX_CONTEXT_BUDGET = 24_000
MIN_CONTEXT_BUDGET = 500


T = TypeVar("T", bound=JsonValue, covariant=True)


@dataclass(frozen=True)
class ToolResult(Generic[T]):
    """One tool answer: the typed ``data`` (its ``to_json()`` for JSON consumers), ``toon`` for a
    model's context."""

    data: T
    toon: str

    def to_json(self) -> dict[str, Any]:
        return self.data.to_json()

    @property
    def tokens(self) -> int:
        return (len(self.toon) + 3) // 4


def _toon(payload: Any) -> str:
    import toon_format

    return toon_format.dumps(payload)


class Engine:
    """One repository's engine state: layout, settings and a lazily opened, auto-built store."""

    def __init__(
        self, layout: RepoLayout, settings: Settings | None = None, *, on_warning: WarningSink | None = None
    ) -> None:
        self.layout = layout
        self.settings = settings if settings is not None else load_settings(layout.root).settings
        self.on_warning = on_warning
        self._store: SymbolStore | None = None
        self._orchestrator: Orchestrator | None = None
        self.last_report: IndexReport | None = None
        self._read_file: tuple[int, int] | None = None  # index.db as the open readers see it

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, on_warning: WarningSink | None = None
    ) -> Engine:
        """The engine for the repository containing ``path`` (PathError, exit 2, if it does not exist)."""
        return cls(RepoLayout.for_path(path), on_warning=on_warning)

    def store(self, *, ensure_index: bool = True) -> SymbolStore:
        """The read store; builds the index first (incrementally) if it has never been built, or
        brings it in line with settings that choose other files (see ``follow_settings``)."""
        if self._store is None:
            self._store = SymbolStore(self.layout, on_warning=self.on_warning)
            self._read_file = self._read_file or file_identity(self.layout.index_db)
        if ensure_index and self.last_report is None:
            if self._store.is_empty():
                self.index()
            else:
                self.follow_settings()
        return self._store

    def follow_settings(self) -> None:
        """Index again (incrementally) when the index was built under other discovery settings:
        a file added to the deny-list since (`edits.deny`) is still in it, and `semfora search`,
        `symbol` and `overview` served its code, signatures and docstrings until `semfora index`
        ran. The run drops it; another process writing the index meanwhile applies them itself."""
        from engine.errors import LockBusy
        from engine.store.changes import discovery_key

        if self.last_report is not None:
            return
        if indexed_discovery_key(self.layout) in (None, discovery_key(self.settings)):
            return
        try:
            self.index()
        except LockBusy as exc:
            if self.on_warning is not None:
                why = f"the index was not brought in line with the settings (edits.deny): {exc.message}"
                self.on_warning(EngineWarning("INDEX_LOCKED", why))

    def index(
        self,
        *,
        rebuild: bool = False,
        progress: Callable[[str, int, int], None] | None = None,
        lock_timeout: float | None = None,
    ) -> IndexReport:
        """Bring the index up to date; ``lock_timeout`` (default ``index.lock_timeout``) bounds the
        wait for another process's writer lock, then LockBusy."""
        from engine.index.child import index_anywhere

        if self._store is not None and rebuild:
            self._store.close()
            self._store = None
        settings = self.settings
        if lock_timeout is not None:
            index = settings.index.model_copy(update={"lock_timeout": lock_timeout})
            settings = settings.model_copy(update={"index": index})
        self.last_report = index_anywhere(
            self.layout, settings, rebuild=rebuild, progress=progress, on_warning=self.on_warning
        )
        if self._read_file is not None and file_identity(self.layout.index_db) != self._read_file:
            # index.db is another file now (`semfora index --rebuild` elsewhere, a cleared cache,
            # a damaged index rebuilt): readers still on the old one would answer from it forever.
            self._close_readers()
        return self.last_report

    def orchestrator(self, *, reasoner: Reasoner | None = None, resume: bool = False) -> Orchestrator:
        """The Model-B orchestrator of this repository; without a reasoner it builds packs only.
        ``resume`` reopens the last conversation (its memory feeds the next pack)."""
        if self._orchestrator is None or resume:
            from engine.api.turns import open_orchestrator

            self.store()  # the first pack needs an index (and its file is the one readers see)
            if self._orchestrator is not None:
                self._orchestrator.close()
            self._orchestrator = open_orchestrator(self.layout, self.settings, reasoner, resume=resume)
        elif reasoner is not None:
            self._orchestrator.reasoner = reasoner
        return self._orchestrator

    def close(self) -> None:
        self._close_readers()

    def _close_readers(self) -> None:
        if self._orchestrator is not None:
            self._orchestrator.close()
            self._orchestrator = None
        if self._store is not None:
            self._store.close()
            self._store = None
        self._read_file = None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def find_symbols(engine: Engine, name_or_id: str, *, with_source: bool = False) -> SymbolMatches:
    """Symbols named ``name_or_id`` (or with that id); failing that, the best name matches (at
    most ``FIND_FALLBACK_LIMIT``). ``with_source`` adds each one's source (deny-list applies)."""
    _named(name_or_id)
    store = engine.store()
    # Counted up to a cap, shown up to FIND_LIMIT: "50 of 66", never 50 as if that were all.
    found = store.symbols_by_name(name_or_id, limit=FIND_COUNT_CAP)
    total = len(found)
    found = found[:FIND_LIMIT]
    exact = bool(found)
    if not exact:
        found = store.search_symbols(name_or_id, limit=FIND_FALLBACK_LIMIT)
        total = len(found)
    if not found:
        raise NotFoundError(f"no symbol named {name_or_id!r}", code="SYMBOL_NOT_FOUND")
    views = tuple(SymbolView.of(sym) for sym in found)
    if not with_source:
        return SymbolMatches(views, None, exact, total)
    shown = [_source(engine, sym, 0).data for sym in found]
    # The source is read now, from a file that may have changed since indexing (it is found
    # again there): its place is where the source was read, not the indexed lines.
    moved = tuple(
        replace(view, start_line=src.start_line, end_line=src.end_line)
        for view, src in zip(views, shown, strict=True)
    )
    return SymbolMatches(
        moved, tuple(src.source for src in shown), exact, total, tuple(src.note for src in shown)
    )


# A tool that takes one symbol by name answers for the first of several that share it, and
# names (at most this many of) the others, so the caller knows to pass an id.
MAX_ALSO_NAMED = 10


def also_named(engine: Engine, name: str, chosen_id: str) -> tuple[list[dict[str, Any]], int]:
    """The other symbols ``name`` designates besides ``chosen_id`` (at most ``MAX_ALSO_NAMED``),
    and how many there are in all."""
    try:
        matches = find_symbols(engine, name)
    except NotFoundError:
        return [], 0
    others = [s for s in matches.symbols if s.id != chosen_id] if matches.exact else []
    rows = [
        {"id": s.id, "qualified_name": s.qualified_name, "file": s.file, "start_line": s.start_line}
        for s in others[:MAX_ALSO_NAMED]
    ]
    return rows, len(others)


def name_note(name: str, chosen: str, others: list[dict[str, Any]], total: int) -> str:
    """``note: 3 symbols are named 'send'; this is Client.send. Others: ...`` (one line)."""
    listed = ", ".join(f"{o['qualified_name']} ({o['file']}:{o['start_line']}, id {o['id']})" for o in others)
    more = f" and {total - len(others)} more" if total > len(others) else ""
    return (
        f"note: {total + 1} symbols are named {name!r}; this is {chosen}. "
        f"Others: {listed}{more}. Pass an id or a qualified name to choose.\n"
    )


def _named(symbol: str) -> str:
    """``symbol`` when it names something; a blank name is a usage error (exit 2), as a blank
    search query is, not "no symbol named ''" (exit 1) as if the index lacked it."""
    if not symbol.strip():
        raise UsageError("the symbol name is empty: give a name, a qualified name or an id")
    return symbol


def _check_limit(name: str, value: int, maximum: int) -> int:
    if value < 1 or value > maximum:
        raise UsageError(f"{name} must be between 1 and {maximum}, not {value}")
    return value


def _symbol_detail(store: SymbolStore, sym: Symbol) -> SymbolDetail:
    callers = store.callers(sym.id, 1)
    return SymbolDetail(
        symbol=SymbolView.of(sym),
        calls=tuple(
            CallView(c.name, c.receiver or "", c.line, c.awaited, c.in_try)
            for c in sym.calls[:MAX_SYMBOL_CALLS]
        ),
        calls_total=len(sym.calls),
        callers=tuple(CallerRef(n.name, n.file, n.line) for n in callers[:10]),
        callers_total=len(callers),
    )


# --- the tools ---------------------------------------------------------------------------------


def get_context(engine: Engine, task: str, budget: int = DEFAULT_CONTEXT_BUDGET) -> ToolResult[ContextPack]:
    """semfora's Model-B context pack for a task (a bug report, a change to make, a question): the
    code most likely to be read or changed, as whole definitions or excerpts with marked gaps, then
    a map of what it calls and is called by, chosen and budgeted by the engine (no model call).
    Use it instead of exploring; ask get_symbol_source for a definition shown as an excerpt.

    Token cost: at most ``budget`` (default 8,000; 500 to 24,000), counted on the pack as JSON
    (what clients such as Claude Code give the model); its text alone is about two thirds of it.
    Below ~1,500 the smallest pack is still ~1,200 as JSON.
    """
    if not task.strip():
        raise UsageError("get_context: the task is empty")
    if not MIN_CONTEXT_BUDGET <= budget <= MAX_CONTEXT_BUDGET:
        raise UsageError(
            f"get_context: budget must be between {MIN_CONTEXT_BUDGET} and {MAX_CONTEXT_BUDGET}, not {budget}"
        )
    pack = _for_an_agent(_pack_within(engine.orchestrator(), task, budget))
    text = "\n".join(item.rendered for item in pack.items)
    footer = f"\n-- {len(pack.items)} items, {pack.total_tokens}/{pack.budget} tokens, intent {pack.intent}\n"
    if pack.notes and pack.notes[-1].startswith(JSON_FIT_NOTE):
        footer += f"-- {pack.notes[-1]}\n"
    return ToolResult(pack, text + footer)


# An excerpt's reason, as an MCP agent reads it: it cannot answer with NEED as semfora's own model
# does; it calls get_symbol_source.
AGENT_EXCERPT_REASON = "excerpt: gaps marked, get_symbol_source gives the whole definition"


def _for_an_agent(pack: ContextPack) -> ContextPack:
    """``pack`` with each excerpt telling the agent the tool that fills its gaps."""
    from engine.orchestrator.context.fill import EXCERPT_REASON

    items = tuple(
        replace(item, reason=item.reason.replace(EXCERPT_REASON, AGENT_EXCERPT_REASON)) for item in pack.items
    )
    return replace(pack, items=items)


# A pack whose JSON is over its budget is built again with less code: at most this many times,
# aiming this far under the budget (the JSON's share of keys and escapes varies with the items).
JSON_FIT_MARGIN = 0.97
JSON_FIT_ROUNDS = 4
JSON_FIT_NOTE = "as JSON the pack"


def json_tokens(data: Any) -> int:
    """Tokens of ``data`` as a client receives it: compact JSON, non-ASCII kept (chars/4)."""
    import json

    from engine.tokens import estimate_tokens

    return estimate_tokens(json.dumps(data, ensure_ascii=False, separators=(",", ":")))


def _pack_within(orchestrator: Orchestrator, task: str, budget: int) -> ContextPack:
    """The pack for ``task`` whose JSON costs at most ``budget`` tokens.

    Claude Code and VS Code give the model a tool's structured content (JSON) rather than its
    text when both are sent: the pack's keys, reasons and escaped code cost 1.4-1.8 times its
    text, so an 8,000-token pack reached the model as ~12,600 tokens and a 24,000-token one was
    over a reply's cap and cut. The code is budgeted down until the JSON fits the budget asked.
    """
    viewed = orchestrator.memory.viewed()
    pack = orchestrator.build_context(task, budget)
    inner, sent = budget, json_tokens(pack.to_json())
    tried: list[tuple[int, int]] = []  # (code tokens, JSON tokens) of the packs built
    for _ in range(JSON_FIT_ROUNDS):
        if sent <= budget or inner == MIN_CONTEXT_BUDGET:
            break
        tried.append((pack.total_tokens, sent))
        # JSON tokens grow with the code's tokens plus a part per item (keys, reasons): the
        # slope between the last two packs, or from the origin after the first. A pack that did
        # not fill its budget shrinks only once the budget is below what it used.
        (c0, s0), (c1, s1) = (
            tried[-2] if len(tried) > 1 and tried[-2][0] != tried[-1][0] else (0, 0),
            tried[-1],
        )
        slope = max((s1 - s0) / max(c1 - c0, 1), 1.0)
        inner = max(MIN_CONTEXT_BUDGET, min(c1 - 1, int(c1 - (s1 - budget * JSON_FIT_MARGIN) / slope)))
        orchestrator.memory.restore_viewed(viewed)  # the pack set aside was never read
        pack = orchestrator.build_context(task, inner)
        sent = json_tokens(pack.to_json())
    if sent <= budget and inner == budget:
        return pack
    if sent <= budget:
        note = f"{JSON_FIT_NOTE} fits the {budget:,} tokens asked: its code is budgeted to {inner:,}"
    else:  # each item's keys and reason cost ~100 tokens: a small budget cannot hold them
        note = (
            f"{JSON_FIT_NOTE} is ~{sent:,} tokens, over the {budget:,} asked: this is the smallest "
            f"pack ({inner:,} tokens of code)"
        )
    return replace(pack, budget=budget, notes=(*pack.notes, note))


def get_repo_overview(engine: Engine) -> ToolResult[RepoOverview]:
    """High-level architecture: languages, ~50 modules, frameworks, entry points, hubs.

    Token cost: ~2,500 at most, fixed whatever the repository size. Call it first.
    """
    from engine.store.overview import stored_overview

    ov = stored_overview(engine.layout, engine.store().connection())
    return ToolResult(RepoOverview(ov.data, ov.toon), ov.toon)


def list_modules(engine: Engine) -> ToolResult[ModuleList]:
    """The modules (directories folded to at most 50) with files, symbols and risk counts.

    Token cost: ~25 per module as JSON (~12 as text), at most 50 modules: ~1,050 on Django (~450 as text).
    """
    from engine.store.overview import _directory_tree, choose_modules

    modules = choose_modules(_directory_tree(engine.store().connection()))
    value = ModuleList(
        tuple(ModuleSummary(m.name, m.files, m.symbols, m.high, m.medium, m.low) for m in modules)
    )
    return ToolResult(value, _toon(value.to_json()))


def get_module(engine: Engine, module: str) -> ToolResult[ModuleSymbols]:
    """EXPENSIVE: every symbol of one module with its signature (capped at 500). Prefer
    list_symbols + get_symbol.

    Token cost: 8,000-12,000 for a typical module, up to ~25,000 (an MCP reply's cap) at 500 symbols.
    """
    if not module.strip():  # '' matched every symbol: the whole repository, cut at 500
        raise UsageError("get_module: name a module", hint="list_modules lists them")
    store = engine.store()
    syms = store.list_symbols(module=module, limit=MAX_MODULE_SYMBOLS + 1)
    if not syms:
        raise _no_module(store, module)
    truncated = len(syms) > MAX_MODULE_SYMBOLS
    value = ModuleSymbols(
        module, tuple(SymbolRow.of(s, signature=True) for s in syms[:MAX_MODULE_SYMBOLS]), truncated
    )
    return ToolResult(value, _toon(value.to_json()))


def list_symbols(
    engine: Engine,
    module: str | None = None,
    kind: str | None = None,
    risk: str | None = None,
    limit: int = 50,
) -> ToolResult[SymbolList]:
    """Browse symbols of a module, optionally by kind and risk. limit <= 200.

    Token cost: ~35 per symbol as JSON (~20 as text): ~1,750 for 50 results, ~7,000 for 200.
    """
    _check_limit("limit", limit, MAX_LIST_SYMBOLS)
    store = engine.store()
    rows = store.list_symbols(module, kind, risk, limit)
    if not rows:
        _check_filters(store, module, kind)
    total = len(rows) if len(rows) < limit else store.count_symbols(module, kind, risk)
    value = SymbolList(tuple(SymbolRow.of(s) for s in rows), total=total)
    return ToolResult(value, _toon(value.to_json()))


def _no_module(store: SymbolStore, module: str) -> NotFoundError:
    """MODULE_NOT_FOUND, saying what to call instead: a file is what many call a module."""
    is_file = store.file(module.strip("/")) is not None
    return NotFoundError(
        f"no symbols in module {module!r}",
        code="MODULE_NOT_FOUND",
        hint=f"{module} is a file: analyze_file lists its symbols; modules are directories"
        if is_file
        else "list_modules lists them",
    )


def _check_filters(store: SymbolStore, module: str | None, kind: str | None) -> None:
    """Nothing matched: a module or a kind that the index does not have is a mistake to name
    (an empty list read as 'the repository has none'); a real one that matched nothing is not."""
    if module and store.count_symbols(module) == 0:
        raise _no_module(store, module)
    kinds = store.symbol_kinds()
    if kind and kind not in kinds:
        raise UsageError(f"no symbol of kind {kind!r} in this index", hint=f"kinds here: {', '.join(kinds)}")


def search_symbols(
    engine: Engine,
    query: str,
    module: str | None = None,
    kind: str | None = None,
    risk: str | None = None,
    limit: int = 20,
) -> ToolResult[SymbolList]:
    """Find symbols by name: exact, then prefix, then identifier parts (camelCase/snake_case),
    substring and fuzzy matches. limit <= 100. Use get_symbol(id) for details.

    Token cost: ~800 for 20 results, ~4,000 for 100, as JSON (about half as text).
    """
    _check_limit("limit", limit, MAX_SEARCH_SYMBOLS)
    if not query.strip():
        raise UsageError("query must not be empty")
    store = engine.store()
    found = store.search_symbols(query, module, kind, risk, limit)
    if not found:
        _check_filters(store, module, kind)
    value = SymbolList(tuple(SymbolRow.of(s) for s in found), query=query)
    return ToolResult(value, _toon({"symbols": value.rows()}))


def get_symbol(engine: Engine, symbol: str) -> ToolResult[SymbolDetail]:
    """Full semantics of ONE symbol (by id, qualified name or name): signature, doc, risk,
    complexity, calls and callers.

    Token cost: ~400; up to ~1,100 as JSON for a symbol with many calls (40 listed at most).
    """
    store = engine.store()
    detail = _symbol_detail(store, store.resolve_one(_named(symbol)))
    return ToolResult(detail, _toon(detail.to_json()))


def get_symbols(engine: Engine, ids: list[str]) -> ToolResult[SymbolDetails]:
    """Several symbols at once (ids <= 20; a qualified name or a name also does), each once; the
    ones the index does not hold are listed as ``missing``.

    Token cost: ~400 per symbol.
    """
    if not ids:
        raise UsageError("ids must not be empty")
    _check_limit("number of ids", len(ids), MAX_GET_SYMBOLS)
    store = engine.store()
    found: list[SymbolDetail] = []
    missing: list[str] = []
    seen: set[str] = set()
    for name_or_id in ids:
        try:
            sym = store.resolve_one(_named(name_or_id))
        except NotFoundError:
            if name_or_id not in missing:
                missing.append(name_or_id)
            continue
        # Once each: a symbol named twice (by id and by name) was listed twice, ~400 tokens each.
        if sym.id not in seen:
            seen.add(sym.id)
            found.append(_symbol_detail(store, sym))
    if not found:
        listed = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise NotFoundError(f"no symbol with id {listed}", code="SYMBOL_NOT_FOUND", hint=STALE_ID_HINT)
    value = SymbolDetails(tuple(found), tuple(missing))
    return ToolResult(value, _toon(value.to_json()))


def get_symbol_source(engine: Engine, symbol: str, context: int = 0) -> ToolResult[SourceView]:
    """The source text of a symbol, with ``context`` lines either side (<= 50), capped at 400 lines.
    ``start_line``-``end_line`` are the symbol's own lines, ``source_start_line``-``source_end_line``
    the lines the text holds. Files on the secret deny-list (``edits.deny``) are refused with
    SECRET_PATH_DENIED.

    Token cost: ~650 per 50 lines as JSON (~600 as text), ~5,000 at its 400 lines.
    """
    if context < 0 or context > MAX_SOURCE_CONTEXT:
        raise UsageError(f"context must be between 0 and {MAX_SOURCE_CONTEXT}, not {context}")
    return _source(engine, engine.store().resolve_one(_named(symbol)), context)


def _source(engine: Engine, sym: Symbol, context: int) -> ToolResult[SourceView]:
    # Through the sandbox: a secret, a .git file or a link out of the root is refused, typed.
    record = engine.store().file(sym.file)
    read = symbol_source(
        engine.layout,
        sym,
        context,
        deny=engine.settings.edits.deny,
        indexed_sha256=record.sha256 if record is not None else None,
    )
    text, last = read.text, read.last
    lines = text.splitlines()
    truncated = len(lines) > MAX_SOURCE_LINES
    if truncated:
        text = "\n".join(lines[:MAX_SOURCE_LINES])
        last = read.first + MAX_SOURCE_LINES - 1
    value = SourceView(
        sym.id,
        sym.qualified_name,
        sym.file,
        read.start,
        read.end,
        truncated,
        text,
        read.first,
        last,
        read.note,
    )
    return ToolResult(value, _toon(value.to_json()))


def get_call_graph(
    engine: Engine, symbol: str, depth: int = 1, direction: str = "callees"
) -> ToolResult[GraphView]:
    """Who a symbol calls (``callees``), who calls it (``callers``) or ``both``, up to depth <= 6.
    Each edge says how it was resolved: same_file, import, unique, ranked or external.

    Token cost: varies; ~45 tokens per edge as JSON (~25 as text), at most 500 edges per
    direction (a cut direction says so).
    """
    if direction not in ("callers", "callees", "both"):
        raise UsageError(f"direction must be callers, callees or both, not {direction!r}")
    _check_limit("depth", depth, MAX_GRAPH_DEPTH)
    store = engine.store()
    sym = store.resolve_one(_named(symbol))
    # One node past the cap is walked, to know whether the cap cut anything.
    walks = {
        asked: [GraphEdge.of(n) for n in walk(sym.id, depth, limit=MAX_GRAPH_NODES + 1)]
        for asked, walk in (("callers", store.callers), ("callees", store.callees))
        if direction in ("both", asked)
    }
    value = GraphView(
        SymbolView.of(sym),
        callers=tuple(walks["callers"][:MAX_GRAPH_NODES]) if "callers" in walks else None,
        callees=tuple(walks["callees"][:MAX_GRAPH_NODES]) if "callees" in walks else None,
        cut=tuple(d for d, edges in walks.items() if len(edges) > MAX_GRAPH_NODES),
        cap=MAX_GRAPH_NODES,
    )
    return ToolResult(value, _toon(value.to_json()))


def get_callers(engine: Engine, symbol: str, depth: int = 1) -> ToolResult[GraphView]:
    """Callers of a symbol, walking up to ``depth`` (<= 6) levels.

    Token cost: ~45 tokens per caller as JSON (~25 as text).
    """
    return get_call_graph(engine, symbol, depth, "callers")


def unresolved_calls(engine: Engine, symbol: SymbolView) -> int:
    """Calls named like ``symbol`` that the index tied to no definition: possible callers that
    ``get_callers`` does not list (``x.filter()`` with ``x`` of unknown type, for a method)."""
    return engine.store().unresolved_calls(symbol.name, method=symbol.kind == "method")


def _inside(engine: Engine, path: str, *, directory: bool = False) -> ResolvedPath:
    """``path`` through the policy sandbox: inside the root through every link, not in ``.git``,
    not on the secret deny-list (``edits.deny``); loops, NUL bytes and over-long names are
    typed errors (exit 2), never a traceback."""
    from engine.policy.sandbox import resolve

    return resolve(engine.layout.root, path, deny=engine.settings.edits.deny, allow_dir=directory)


def analyze_file(engine: Engine, path: str) -> ToolResult[FileAnalysis]:
    """Parse one file now (from disk, not the index): its symbols, imports and risks.

    Token cost: ~55 per symbol as JSON (~30 as text): ~1,850 for a file of 40 symbols.
    """
    from engine.edits.errors import FileRefused
    from engine.policy.sandbox import read_bytes
    from engine.semantic.extract import analyze_source
    from engine.semantic.languages import language_for_path
    from engine.store.discovery import content_problem

    target = _inside(engine, path, directory=True)
    if target.is_dir:  # an agent's common slip: say which tool takes a directory
        raise PathDenied(
            f"{target.asked} is a directory", code="PATH_INVALID", hint="analyze_directory takes a directory"
        )
    rel = target.rel
    limit = engine.settings.index.max_file_bytes
    data_bytes = read_bytes(target, max_bytes=limit + 1)
    # Typed as the edit layer types them (an agent told only USAGE took the call for its mistake),
    # with what the agent can do instead.
    if len(data_bytes) > limit:
        raise FileRefused(
            f"{rel} is larger than index.max_file_bytes ({limit:,} bytes): not parsed, and not indexed",
            code="FILE_TOO_LARGE",
            hint="search finds nothing in it either; read the part you need with your own file tools",
        )
    # As the indexer skips it: random bytes parsed as Python gave '532 syntax errors'.
    problem = content_problem(rel, data_bytes)
    if problem is not None:
        raise FileRefused(
            f"{rel} is {problem} content, not parsed (the index skips it too)",
            code="BINARY_FILE" if problem == "binary" else "FILE_REFUSED",
            hint="only source files are analysed",
        )
    language = language_for_path(rel, data_bytes[:128].split(b"\n", 1)[0])
    if language is None:
        raise UsageError(f"{rel}: no supported language for this file")
    fa = analyze_source(rel, data_bytes, language)
    value = FileAnalysis(
        file=rel,
        language=fa.language,
        lines=fa.line_count,
        syntax_errors=fa.syntax_errors,
        imports=tuple(sorted({i.module for i in fa.imports})),
        symbols=tuple(SymbolRow.of(s, calls=True) for s in fa.symbols),
    )
    return ToolResult(value, _toon(value.to_json()))


def analyze_directory(
    engine: Engine, path: str = ".", summary_only: bool = True
) -> ToolResult[DirectorySummary]:
    """Aggregate a directory from the index: files, symbols, languages, risk; with
    ``summary_only: false`` also one row per file (capped at 300).

    Token cost: ~200 summarised; otherwise ~30 per file as JSON (~17 as text), ~9,000 at its 300 files.
    """
    try:
        target = _inside(engine, path, directory=True)
    except NotFoundError as exc:
        raise NotFoundError(f"no such directory: {path}", code="DIR_NOT_FOUND") from exc
    if not target.is_dir:
        if target.path.is_file():  # the slip analyze_file answers the other way round
            raise PathDenied(
                f"{target.asked} is a file", code="PATH_INVALID", hint="analyze_file takes a file"
            )
        raise NotFoundError(f"no such directory: {path}", code="DIR_NOT_FOUND")
    rel = target.rel
    conn = engine.store().connection()
    where, params = (
        ("1=1", [])
        if rel in ("", ".")
        else ("(module = ? OR (module > ? AND module < ?))", [rel, rel + "/", rel + "0"])
    )
    totals = conn.execute(
        f"SELECT count(*), COALESCE(sum(line_count), 0) FROM files WHERE {where}", params
    ).fetchone()
    langs = conn.execute(
        f"SELECT language, count(*) FROM files WHERE {where} GROUP BY language", params
    ).fetchall()
    risks = dict(
        conn.execute(f"SELECT risk, count(*) FROM symbols WHERE {where} GROUP BY risk", params).fetchall()
    )
    file_list: tuple[DirectoryFile, ...] | None = None
    truncated = False
    if not summary_only:
        rows = conn.execute(
            f"SELECT f.path, f.language, f.line_count, (SELECT count(*) FROM symbols s WHERE s.file = f.path), "
            f"(SELECT count(*) FROM symbols s WHERE s.file = f.path AND s.risk = 'high') FROM files f "
            f"WHERE {where} ORDER BY f.path LIMIT ?",
            [*params, MAX_DIRECTORY_FILES + 1],
        ).fetchall()
        truncated = len(rows) > MAX_DIRECTORY_FILES
        file_list = tuple(DirectoryFile(r[0], r[1], r[2], r[3], r[4]) for r in rows[:MAX_DIRECTORY_FILES])
    value = DirectorySummary(
        directory=rel or ".",
        files=int(totals[0]),
        lines=int(totals[1]),
        symbols=int(sum(risks.values())),
        risk={k: int(risks.get(k, 0)) for k in ("high", "medium", "low")},
        languages={str(lang): int(n) for lang, n in langs},
        file_list=file_list,
        truncated=truncated,
    )
    return ToolResult(value, _toon(value.to_json()))


def generate_index(
    engine: Engine, force: bool = False, progress: Callable[[str, int, int], None] | None = None
) -> ToolResult[IndexSummary]:
    """Build or refresh the index (incremental; ``force`` rebuilds from scratch).

    Token cost: ~60 (a one-line report); takes seconds on a large repository.
    """
    value = IndexSummary(engine.index(rebuild=force, progress=progress))
    data = value.to_json()
    return ToolResult(
        value, _toon({k: v for k, v in data.items() if k not in ("changed_paths", "skipped_files")})
    )


def check_index(engine: Engine, integrity: bool = False) -> ToolResult[IndexHealth]:
    """Is the index fresh? Counts files changed, added and deleted since it was built,
    without writing; ``integrity`` also runs SQLite's quick_check.

    Token cost: ~80.
    """
    from engine.store.db import integrity_problem
    from engine.store.discovery import discover

    store = engine.store(ensure_index=False)
    conn = store.connection()
    known = {r[0]: (r[1], r[2]) for r in conn.execute("SELECT path, size, mtime_ns FROM files")}
    indexed_sha = dict(conn.execute("SELECT path, sha256 FROM files").fetchall())
    found = discover(engine.layout.root, engine.settings.index, deny=engine.settings.edits.deny)
    present = {c.path: c for c in found.candidates if c.language}
    skipped = {r[0] for r in conn.execute("SELECT path FROM skipped_files")}
    stale = [
        p
        for p, c in present.items()
        if p in known
        and known[p] != (c.size, c.mtime_ns)
        and _content_changed(engine.layout.root / p, c.size, known[p][0], indexed_sha[p])
    ]
    added = [p for p in present if p not in known and p not in skipped]
    deleted = [p for p in known if p not in present]
    stats = store.stats()
    health: str | None = None
    if integrity:
        problem = integrity_problem(conn)
        health = "ok" if problem is None else problem
    value = IndexHealth(
        indexed=stats.files > 0,
        fresh=stats.files > 0 and not (stale or added or deleted),
        files=stats.files,
        symbols=stats.symbols,
        edges=stats.edges,
        stale=len(stale),
        added=len(added),
        deleted=len(deleted),
        schema_version=stats.schema_version,
        stale_paths=tuple(sorted(stale + added + deleted)[:MAX_STALE_PATHS]),
        integrity=health,
    )
    return ToolResult(value, _toon(value.to_json()))


def _content_changed(path: Path, size: int, indexed_size: int, indexed_sha256: str) -> bool:
    """Whether a file whose size or time differs from the index's also differs in content: a
    `git checkout`, a `touch` or an editor's save without a change is not a change (check_index
    said 'fresh: false, stale: 1' after a `git checkout -- .`, and the next run changed nothing)."""
    import hashlib

    from engine.policy.sandbox import open_checked

    if size != indexed_size:
        return True
    try:
        return hashlib.sha256(open_checked(path)).hexdigest() != indexed_sha256
    except (OSError, SemforaError):  # unreadable now: the next index run decides
        return True


def list_languages(engine: Engine | None = None) -> ToolResult[LanguageList]:
    """Supported languages and their level: ``full`` (definitions, calls, imports) or ``definitions``.

    Token cost: ~1,000 as JSON (~450 as text) for the ~60 languages.
    """
    from engine.semantic.languages import list_languages as languages

    value = LanguageList(tuple(LanguageInfo(i.name, tuple(i.extensions), i.level) for i in languages()))
    compact = [
        {"name": lang.name, "level": lang.level, "extensions": " ".join(lang.extensions)}
        for lang in value.languages
    ]
    return ToolResult(value, _toon({"languages": compact}))


# --- the registry ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # JSON Schema type: string, integer, boolean, array
    description: str
    required: bool = False
    default: Any = None
    maximum: int | None = None
    minimum: int | None = None  # default: 0 for ``context``, 1 for other bounded integers
    enum: tuple[str, ...] = ()


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the MCP server and the orchestrator see it."""

    name: str
    func: Callable[..., ToolResult[JsonValue]]
    description: str
    token_cost: str
    params: tuple[Param, ...] = field(default_factory=tuple)
    needs_engine: bool = True
    takes_progress: bool = False  # hears the indexer's progress(phase, done, total) when given one

    def input_schema(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for p in self.params:
            prop: dict[str, Any] = {"type": p.type, "description": p.description}
            if p.type == "array":
                prop["items"] = {"type": "string"}
                if p.maximum is not None:
                    prop["maxItems"] = p.maximum
            elif p.maximum is not None:
                prop["maximum"] = p.maximum
                prop["minimum"] = p.minimum if p.minimum is not None else 0 if p.name == "context" else 1
            if p.enum:
                prop["enum"] = list(p.enum)
            if p.default is not None:
                prop["default"] = p.default
            props[p.name] = prop
        return {
            "type": "object",
            "properties": props,
            "required": [p.name for p in self.params if p.required],
        }

    def __call__(self, engine: Engine | None, **kwargs: Any) -> ToolResult[JsonValue]:
        known = {p.name for p in self.params} | ({"progress"} if self.takes_progress else set())
        unknown = set(kwargs) - known
        if unknown:
            raise UsageError(
                f"{self.name}: unknown {noun_for(len(unknown), 'parameter')}: {', '.join(sorted(unknown))}"
            )
        return self.func(engine, **kwargs)


def _spec(func: Callable[..., ToolResult[JsonValue]], *params: Param, needs_engine: bool = True) -> ToolSpec:
    doc = (func.__doc__ or "").strip()
    # The cost is the whole paragraph after "Token cost:" (its first line alone cut get_call_graph's
    # at "(a cut direction"); the paragraph of the same docstring ends at a blank line.
    after = doc.split("Token cost:", 1)[1] if "Token cost:" in doc else ""
    cost = " ".join(after.strip().split("\n\n", 1)[0].split())
    summary = " ".join(doc.split("Token cost")[0].split())
    takes_progress = "progress" in inspect.signature(func).parameters
    return ToolSpec(func.__name__, func, summary, cost, tuple(params), needs_engine, takes_progress)


_MODULE = Param("module", "string", "module (directory) path prefix, e.g. src/api")
_KIND = Param("kind", "string", "symbol kind: function, method, class, struct, interface, ...")
_RISK = Param("risk", "string", "risk level: low, medium or high", enum=("low", "medium", "high"))
_SYMBOL = Param("symbol", "string", "symbol id, qualified name (Class.method) or name", required=True)

TOOLS: dict[str, ToolSpec] = {
    spec.name: spec
    for spec in (
        _spec(
            get_context,
            Param(
                "task",
                "string",
                "the task in the user's words: a bug report, a change, a question",
                required=True,
            ),
            Param(
                "budget",
                "integer",
                f"tokens the pack may use ({MIN_CONTEXT_BUDGET}-{MAX_CONTEXT_BUDGET})",
                default=DEFAULT_CONTEXT_BUDGET,
                maximum=MAX_CONTEXT_BUDGET,
                minimum=MIN_CONTEXT_BUDGET,
            ),
        ),
        _spec(get_repo_overview),
        _spec(list_modules),
        _spec(get_module, Param("module", "string", "module (directory) path", required=True)),
        _spec(
            list_symbols,
            _MODULE,
            _KIND,
            _RISK,
            Param("limit", "integer", "max results", default=50, maximum=200),
        ),
        _spec(
            search_symbols,
            Param("query", "string", "name, prefix or words of a symbol", required=True),
            _MODULE,
            _KIND,
            _RISK,
            Param("limit", "integer", "max results", default=20, maximum=100),
        ),
        _spec(get_symbol, _SYMBOL),
        _spec(
            get_symbols,
            Param("ids", "array", "symbol ids (qualified names or names also do)", required=True, maximum=20),
        ),
        _spec(
            get_symbol_source,
            _SYMBOL,
            Param("context", "integer", "lines either side", default=0, maximum=50),
        ),
        _spec(
            get_call_graph,
            _SYMBOL,
            Param("depth", "integer", "levels to walk", default=1, maximum=MAX_GRAPH_DEPTH),
            Param(
                "direction",
                "string",
                "callers, callees or both",
                default="callees",
                enum=("callers", "callees", "both"),
            ),
        ),
        _spec(
            get_callers,
            _SYMBOL,
            Param("depth", "integer", "levels to walk", default=1, maximum=MAX_GRAPH_DEPTH),
        ),
        _spec(analyze_file, Param("path", "string", "repository-relative file path", required=True)),
        _spec(
            analyze_directory,
            Param("path", "string", "repository-relative directory", default="."),
            Param("summary_only", "boolean", "only totals, no per-file rows", default=True),
        ),
        _spec(generate_index, Param("force", "boolean", "rebuild from scratch", default=False)),
        _spec(check_index, Param("integrity", "boolean", "also run SQLite quick_check", default=False)),
        _spec(list_languages, needs_engine=False),
    )
}

__all__ = ["MAX_GRAPH_DEPTH", "TOOLS", "Engine", "Param", "EngineWarning", "ToolResult", "ToolSpec"]
