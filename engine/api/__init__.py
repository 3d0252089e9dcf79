"""The engine's front door: the one API every face uses (the app's bridge, the command line,
the MCP server) for what it asks of the engine: search, symbols, sources, call graphs, context
packs, the index and turns.

It returns frozen, typed values (``engine.api.values``, the store's ``SearchHit``, the
orchestrator's ``ContextPack`` and ``TurnResult``), each with a ``to_json()`` that is the public
JSON contract, instead of dictionaries. Faces import from here (plus ``engine.errors``,
``engine.config`` and ``engine.policy``), never ``engine.store``/``engine.index`` directly.

This package is the door's turns floor (it calls the orchestrator, so it sits above it); the
door's read floor, ``engine.query``, sits below the orchestrator, which reads the index only
through it. Faces never import ``engine.query``: what they need of it is offered here.

Importing this package is cheap: everything heavy (tree-sitter, chromadb, model clients, the
orchestrator) is imported inside the function that needs it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from engine.api.repository import branch_name, listed_paths
from engine.api.review import ci_review, semantic_diff, without_secret_content
from engine.api.search import (
    CacheReport,
    SearchMetrics,
    cache_stats,
    clear_cache,
    ensure_text_index,
    prefer_query_service,
    search,
    search_metrics,
    text_index_missing,
    validate_search,
)
from engine.api.tools import (
    DEFAULT_CONTEXT_BUDGET,
    MAX_CONTEXT_BUDGET,
    MAX_GRAPH_DEPTH,
    MIN_CONTEXT_BUDGET,
    TOOLS,
    Engine,
    EngineWarning,
    Param,
    ToolResult,
    ToolSpec,
    also_named,
    analyze_directory,
    analyze_file,
    check_index,
    find_symbols,
    generate_index,
    get_call_graph,
    get_callers,
    get_context,
    get_module,
    get_repo_overview,
    get_symbol,
    get_symbol_source,
    get_symbols,
    list_languages,
    list_modules,
    list_symbols,
    name_note,
    search_symbols,
    unresolved_calls,
)
from engine.api.turns import (
    build_vectors,
    describe_model,
    index_busy_note,
    index_is_empty,
    index_repository,
    load_run,
    make_reasoner,
    open_orchestrator,
    refresh_index,
    skipped_vectors,
)
from engine.api.values import (
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
    SearchResults,
    SourceView,
    SymbolDetail,
    SymbolDetails,
    SymbolList,
    SymbolMatches,
    SymbolRow,
    SymbolView,
)

if TYPE_CHECKING:
    from engine.index.hybrid import SearchHit
    from engine.index.indexer import IndexReport
    from engine.index.vectors import VectorReport
    from engine.llm.base import CONFIGURE_HINT, ModelUnavailable, Reasoner
    from engine.orchestrator.context import ContextPack
    from engine.orchestrator.core import Orchestrator, TurnResult
    from engine.review.ci import ReviewReport
    from engine.semantic.diff import SemanticDiff

# The engine's own frozen values and types a face names, re-exported here so faces import only
# the door. Each is loaded on first use (PEP 562): `import engine.api` stays cheap, and a command
# that never touches the orchestrator never imports it.
_LAZY_EXPORTS: dict[str, str] = {
    "SearchHit": "engine.index.hybrid",
    "VectorReport": "engine.index.vectors",
    "ModelUnavailable": "engine.llm.base",
    "CONFIGURE_HINT": "engine.llm.base",
    "Reasoner": "engine.llm.base",
    "ContextPack": "engine.orchestrator.context",
    "Orchestrator": "engine.orchestrator.core",
    "TurnResult": "engine.orchestrator.core",
    "IndexReport": "engine.index.indexer",
    "ReviewReport": "engine.review.ci",
    "SemanticDiff": "engine.semantic.diff",
}


def __getattr__(name: str) -> Any:
    module = _LAZY_EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'engine.api' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "CONFIGURE_HINT",
    "DEFAULT_CONTEXT_BUDGET",
    "MAX_CONTEXT_BUDGET",
    "MAX_GRAPH_DEPTH",
    "MIN_CONTEXT_BUDGET",
    "TOOLS",
    "CacheReport",
    "ContextPack",
    "IndexReport",
    "ModelUnavailable",
    "Orchestrator",
    "Reasoner",
    "ReviewReport",
    "SearchHit",
    "SemanticDiff",
    "TurnResult",
    "VectorReport",
    "CallView",
    "CallerRef",
    "DirectoryFile",
    "DirectorySummary",
    "Engine",
    "FileAnalysis",
    "GraphEdge",
    "GraphView",
    "IndexHealth",
    "IndexSummary",
    "JsonValue",
    "LanguageInfo",
    "LanguageList",
    "ModuleList",
    "ModuleSummary",
    "ModuleSymbols",
    "Param",
    "RepoOverview",
    "SearchMetrics",
    "SearchResults",
    "SourceView",
    "EngineWarning",
    "SymbolDetail",
    "SymbolDetails",
    "SymbolList",
    "SymbolMatches",
    "SymbolRow",
    "SymbolView",
    "ToolResult",
    "ToolSpec",
    "analyze_directory",
    "analyze_file",
    "branch_name",
    "build_vectors",
    "skipped_vectors",
    "cache_stats",
    "check_index",
    "ci_review",
    "clear_cache",
    "describe_model",
    "ensure_text_index",
    "also_named",
    "find_symbols",
    "generate_index",
    "get_call_graph",
    "get_callers",
    "get_context",
    "get_module",
    "get_repo_overview",
    "get_symbol",
    "get_symbol_source",
    "get_symbols",
    "index_busy_note",
    "index_is_empty",
    "index_repository",
    "list_languages",
    "list_modules",
    "list_symbols",
    "listed_paths",
    "load_run",
    "make_reasoner",
    "open_orchestrator",
    "prefer_query_service",
    "refresh_index",
    "search",
    "search_metrics",
    "name_note",
    "search_symbols",
    "semantic_diff",
    "without_secret_content",
    "text_index_missing",
    "unresolved_calls",
    "validate_search",
]
