"""The typed values the front door (``engine.api``) hands to every face.

Each value is a frozen dataclass built from the engine's own types (``Symbol``, the store's
``GraphNode``, the indexer's ``IndexReport``...), so the app, the command line and the MCP
server read fields instead of dictionary keys. ``to_json()`` is the one place each value's JSON
shape is written: it is exactly the ``--json`` / MCP ``structuredContent`` contract of BRIEF.md
(key names and order included), so changing a field here changes the public contract.

This module owns shapes only: no store reads, no I/O, no heavy imports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from engine.index.hybrid import SearchHit
    from engine.index.indexer import IndexReport
    from engine.semantic.model import Symbol
    from engine.store.db import GraphNode

# Lists a tool reply carries at most this many paths of (an index run can touch 100,000 files).
MAX_REPORT_PATHS = 50
# Paths named in an index health reply (the counts say how many there are in all).
MAX_STALE_PATHS = 20


class JsonValue(Protocol):
    """Anything the door returns: it knows its own JSON shape."""

    def to_json(self) -> dict[str, Any]: ...


# --- symbols -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SymbolRow:
    """The light entry of lists and searches; ``signature``/``calls`` only where a tool adds them."""

    id: str
    name: str  # the qualified name
    kind: str
    file: str
    start_line: int
    end_line: int
    risk: str
    signature: str | None = None
    calls: int | None = None  # analyze_file: how many calls the symbol makes
    complexity: int | None = None  # analyze_file: its control-flow count

    @classmethod
    def of(cls, sym: Symbol, *, signature: bool = False, calls: bool = False) -> SymbolRow:
        return cls(
            id=sym.id,
            name=sym.qualified_name,
            kind=sym.kind,
            file=sym.file,
            start_line=sym.start_line,
            end_line=sym.end_line,
            risk=sym.risk.level,
            signature=sym.signature if (signature or calls) else None,
            calls=len(sym.calls) if calls else None,
            complexity=sym.control_flow if calls else None,
        )

    def to_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "kind": self.kind,
            "file": self.file,
            "lines": f"{self.start_line}-{self.end_line}",
            "risk": self.risk,
        }
        if self.calls is not None:
            row["calls"] = self.calls
            row["complexity"] = self.complexity
        if self.signature is not None:
            row["signature"] = self.signature
        return row


@dataclass(frozen=True)
class SymbolView:
    """One symbol in full: the shape of `semfora symbol --json` (BRIEF contract)."""

    id: str
    name: str
    qualified_name: str
    kind: str
    file: str
    start_line: int
    end_line: int
    signature: str
    risk: str
    risk_reasons: tuple[str, ...]
    language: str
    doc: str
    parent: str | None
    exported: bool
    decorators: tuple[str, ...]
    is_async: bool
    arity: int
    control_flow: int
    max_nesting: int

    @classmethod
    def of(cls, sym: Symbol) -> SymbolView:
        return cls(
            id=sym.id,
            name=sym.name,
            qualified_name=sym.qualified_name,
            kind=sym.kind,
            file=sym.file,
            start_line=sym.start_line,
            end_line=sym.end_line,
            signature=sym.signature,
            risk=sym.risk.level,
            risk_reasons=tuple(sym.risk.reasons),
            language=sym.language,
            doc=sym.doc,
            parent=sym.parent,
            exported=sym.exported,
            decorators=tuple(sym.decorators),
            is_async=sym.is_async,
            arity=sym.arity,
            control_flow=sym.control_flow,
            max_nesting=sym.max_nesting,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "qualified_name": self.qualified_name,
            "kind": self.kind,
            "file": self.file,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "signature": self.signature,
            "risk": self.risk,
            "risk_reasons": list(self.risk_reasons),
            "language": self.language,
            "doc": self.doc,
            "parent": self.parent,
            "exported": self.exported,
            "decorators": list(self.decorators),
            "is_async": self.is_async,
            "arity": self.arity,
            "control_flow": self.control_flow,
            "max_nesting": self.max_nesting,
        }


@dataclass(frozen=True)
class CallView:
    """One call a symbol makes."""

    name: str
    receiver: str
    line: int
    awaited: bool
    in_try: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "receiver": self.receiver,
            "line": self.line,
            "awaited": self.awaited,
            "in_try": self.in_try,
        }


@dataclass(frozen=True)
class CallerRef:
    """One direct caller of a symbol."""

    name: str
    file: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "file": self.file, "line": self.line}


@dataclass(frozen=True)
class SymbolDetail:
    """A symbol with its calls and direct callers (``get_symbol``)."""

    symbol: SymbolView
    calls: tuple[CallView, ...]
    calls_total: int
    callers: tuple[CallerRef, ...]
    callers_total: int

    def to_json(self) -> dict[str, Any]:
        return {
            **self.symbol.to_json(),
            "calls": [c.to_json() for c in self.calls],
            "calls_total": self.calls_total,
            "callers_total": self.callers_total,
            "callers": [c.to_json() for c in self.callers],
        }


# What to do about an id the index does not hold.
STALE_ID_HINT = (
    "not in the index: an id changes when its symbol is renamed, moved or its parameters change; "
    "search_symbols finds it by name"
)


@dataclass(frozen=True)
class SymbolDetails:
    """Several symbols in detail (``get_symbols``)."""

    symbols: tuple[SymbolDetail, ...]
    missing: tuple[str, ...] = ()  # asked for, not in the index (an id changes with its signature)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"symbols": [s.to_json() for s in self.symbols]}
        if self.missing:
            data["missing"] = list(self.missing)
            data["missing_note"] = STALE_ID_HINT
        return data


@dataclass(frozen=True)
class SymbolList:
    """Symbols of a listing, or of a name search when ``query`` is set."""

    symbols: tuple[SymbolRow, ...]
    query: str | None = None
    total: int | None = None  # a listing: how many match its filters (more than shown when cut)

    def rows(self) -> list[dict[str, Any]]:
        return [s.to_json() for s in self.symbols]

    def to_json(self) -> dict[str, Any]:
        if self.query is not None:
            return {"query": self.query, "symbols": self.rows()}
        data: dict[str, Any] = {"symbols": self.rows()}
        if self.total is not None:
            data["total"] = self.total
            data["truncated"] = self.total > len(self.symbols)
            if data["truncated"]:
                data["more"] = (
                    f"{len(self.symbols)} of {self.total:,} shown: narrow with module, kind or risk"
                )
        return data


@dataclass(frozen=True)
class SymbolMatches:
    """Symbols found for a name or id (`semfora symbol`), each with its source when asked."""

    symbols: tuple[SymbolView, ...]
    sources: tuple[str, ...] | None = None  # one per symbol, in order, when asked for
    exact: bool = True  # False: nothing has this name or id; these are the nearest names
    total: int = 0  # how many have the name (counted up to a cap); more than shown when cut
    source_notes: tuple[str, ...] = ()  # one per source: "" or why it is not the file's UTF-8

    def to_json(self) -> dict[str, Any]:
        rows = []
        for i, sym in enumerate(self.symbols):
            row = sym.to_json()
            if self.sources is not None:
                row["source"] = self.sources[i]
                if self.source_notes and self.source_notes[i]:
                    row["source_note"] = self.source_notes[i]
            rows.append(row)
        return {"symbols": rows, "exact": self.exact, "total": max(self.total, len(rows))}


@dataclass(frozen=True)
class SourceView:
    """A symbol's source lines (``get_symbol_source``), cut at the tool's line cap.

    ``start_line``-``end_line`` are the symbol's own lines, as every other reply gives them;
    ``source`` holds ``source_start_line``-``source_end_line``: the context asked for around
    them, or fewer lines when the cap cut it."""

    id: str
    symbol: str
    file: str
    start_line: int
    end_line: int
    truncated: bool
    source: str
    source_start_line: int = 0  # 0: the symbol's own start_line
    source_end_line: int = 0
    note: str = ""  # the file is not UTF-8: what the text shows instead of its bytes

    def __post_init__(self) -> None:
        if not self.source_start_line:
            object.__setattr__(self, "source_start_line", self.start_line)
        if not self.source_end_line:
            object.__setattr__(self, "source_end_line", self.end_line)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "symbol": self.symbol,
            "file": self.file,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "source_start_line": self.source_start_line,
            "source_end_line": self.source_end_line,
            "truncated": self.truncated,
            "source": self.source,
            **({"note": self.note} if self.note else {}),
        }


# --- modules, files, directories ---------------------------------------------------------------


@dataclass(frozen=True)
class ModuleSummary:
    name: str
    files: int
    symbols: int
    high: int
    medium: int
    low: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "files": self.files,
            "symbols": self.symbols,
            "high": self.high,
            "medium": self.medium,
            "low": self.low,
        }


@dataclass(frozen=True)
class ModuleList:
    modules: tuple[ModuleSummary, ...]

    def to_json(self) -> dict[str, Any]:
        return {"modules": [m.to_json() for m in self.modules]}


@dataclass(frozen=True)
class ModuleSymbols:
    """Every symbol of one module with its signature (``get_module``)."""

    module: str
    symbols: tuple[SymbolRow, ...]
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.module,
            "symbols": [s.to_json() for s in self.symbols],
            "truncated": self.truncated,
        }


@dataclass(frozen=True)
class FileAnalysis:
    """One file parsed now, from disk (``analyze_file``)."""

    file: str
    language: str
    lines: int
    syntax_errors: int
    imports: tuple[str, ...]
    symbols: tuple[SymbolRow, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "language": self.language,
            "lines": self.lines,
            "syntax_errors": self.syntax_errors,
            "imports": list(self.imports),
            # Each row's file is this one: repeated on every row it was a fifth of the reply.
            "symbols": [{k: v for k, v in s.to_json().items() if k != "file"} for s in self.symbols],
        }


@dataclass(frozen=True)
class DirectoryFile:
    path: str
    language: str
    lines: int
    symbols: int
    high_risk: int

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "language": self.language,
            "lines": self.lines,
            "symbols": self.symbols,
            "high_risk": self.high_risk,
        }


@dataclass(frozen=True)
class DirectorySummary:
    """A directory aggregated from the index; ``file_list`` only when rows were asked for."""

    directory: str
    files: int
    lines: int
    symbols: int
    risk: Mapping[str, int]
    languages: Mapping[str, int]
    file_list: tuple[DirectoryFile, ...] | None = None
    truncated: bool = False

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "directory": self.directory,
            "files": self.files,
            "lines": self.lines,
            "symbols": self.symbols,
            "risk": dict(self.risk),
            "languages": dict(self.languages),
        }
        if self.file_list is not None:
            data["truncated"] = self.truncated
            data["file_list"] = [f.to_json() for f in self.file_list]
        return data


@dataclass(frozen=True)
class RepoOverview:
    """The bounded repository overview: its JSON and the TOON text a model reads."""

    data: Mapping[str, Any]
    toon: str

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class LanguageInfo:
    name: str
    extensions: tuple[str, ...]
    level: str  # full | definitions

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "extensions": list(self.extensions), "level": self.level}


@dataclass(frozen=True)
class LanguageList:
    languages: tuple[LanguageInfo, ...]

    def to_json(self) -> dict[str, Any]:
        return {"languages": [lang.to_json() for lang in self.languages]}


# --- graph -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphEdge:
    """One symbol reached by a call-graph walk and how its edge was resolved."""

    depth: int
    symbol_id: str | None  # None: an external or unresolved callee
    name: str
    file: str
    line: int
    via: str  # same_file | import | unique | ranked | external
    package: str | None = None
    parent_id: str | None = None  # the node one hop nearer the start (None at depth 1)

    @classmethod
    def of(cls, node: GraphNode) -> GraphEdge:
        return cls(
            depth=node.depth,
            symbol_id=node.symbol_id,
            name=node.name,
            file=node.file,
            line=node.line,
            via=node.via,
            package=node.package,
            parent_id=node.parent_id,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "id": self.symbol_id or "",
            "name": self.name,
            "file": self.file,
            "line": self.line,
            "via": self.via,
            "package": self.package or "",
            "parent_id": self.parent_id or "",
        }


# Edge columns left out of a direction's rows when no row has a value: a depth-1 walk has no
# parent, and only external callees have a package. Empty on every row, they were a sixth of a
# reply's JSON (what Claude Code gives the model) and of its TOON table.
OPTIONAL_EDGE_COLUMNS = ("package", "parent_id")


def _edge_rows(edges: tuple[GraphEdge, ...]) -> list[dict[str, Any]]:
    rows = [e.to_json() for e in edges]
    empty = [c for c in OPTIONAL_EDGE_COLUMNS if not any(row[c] for row in rows)]
    return [{k: v for k, v in row.items() if k not in empty} for row in rows]


@dataclass(frozen=True)
class GraphView:
    """Who a symbol calls and/or who calls it; a direction not asked for is None. A direction
    walked to its ``cap`` of nodes with more left is named in ``cut``, and ``truncated`` says so."""

    symbol: SymbolView
    callers: tuple[GraphEdge, ...] | None = None
    callees: tuple[GraphEdge, ...] | None = None
    cut: tuple[str, ...] = ()  # "callers" and/or "callees": more than ``cap`` nodes were reached
    cap: int = 0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "symbol": self.symbol.qualified_name,
            "id": self.symbol.id,
            "file": self.symbol.file,
        }
        for direction, edges in (("callers", self.callers), ("callees", self.callees)):
            if edges is not None:
                data[direction] = _edge_rows(edges)
        data["truncated"] = bool(self.cut)
        if self.cut:
            data["more"] = (
                f"{' and '.join(self.cut)} cut at {self.cap}: there are more; walk fewer levels (depth) "
                "or start from one of them"
            )
        return data


# --- index -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IndexSummary:
    """An index run as a tool reply: the report, its path lists cut to ``MAX_REPORT_PATHS``."""

    report: IndexReport

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = dict(self.report.to_json())
        data["changed_paths"] = data["changed_paths"][:MAX_REPORT_PATHS]
        data["skipped_files"] = data["skipped_files"][:MAX_REPORT_PATHS]
        return data


@dataclass(frozen=True)
class IndexHealth:
    """Is the index fresh (``check_index``)? ``integrity`` only when the check was asked for."""

    indexed: bool
    fresh: bool
    files: int
    symbols: int
    edges: int
    stale: int
    added: int
    deleted: int
    schema_version: int
    stale_paths: tuple[str, ...]
    integrity: str | None = None  # "ok" or SQLite's first complaint

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "indexed": self.indexed,
            "fresh": self.fresh,
            "files": self.files,
            "symbols": self.symbols,
            "edges": self.edges,
            "stale": self.stale,
            "added": self.added,
            "deleted": self.deleted,
            "schema_version": self.schema_version,
            "stale_paths": list(self.stale_paths),
        }
        if self.integrity is not None:
            data["integrity"] = self.integrity
        return data


# --- search ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchResults:
    """Hybrid search hits and the warnings heard while searching (e.g. vectors unavailable)."""

    hits: tuple[SearchHit, ...]
    warnings: tuple[str, ...] = ()

    def to_json(self, *, always_warnings: bool = True) -> dict[str, Any]:
        """`semfora search --json` always carries ``warnings``; the MCP reply only when there are some."""
        data: dict[str, Any] = {"results": [h.to_json() for h in self.hits]}
        if always_warnings or self.warnings:
            data["warnings"] = list(self.warnings)
        return data
