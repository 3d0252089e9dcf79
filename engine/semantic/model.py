"""The semantic data model every layer speaks: symbols, call sites, imports, risk.

Plain frozen dataclasses only; no I/O, no tree-sitter. Extraction produces these,
the store persists them, tools and the orchestrator read them.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, NamedTuple

RiskLevel = Literal["low", "medium", "high"]
SymbolKind = Literal[
    "function",
    "method",
    "class",
    "struct",
    "interface",
    "trait",
    "enum",
    "module",
    "constant",
    "variable",
    "type",
    "macro",
    "namespace",
    "property",
]
Level = Literal["full", "definitions"]
# The name of a JavaScript module's anonymous default export (``export default function () {}``),
# as ``import * as m`` sees it: ``m.default``.
DEFAULT_EXPORT = "default"


class CallSite(NamedTuple):
    """One call expression inside a symbol (or at module level).

    A named tuple rather than a dataclass: extraction makes one per call (170k for
    Django) and a tuple is built several times faster; it is just as immutable.
    """

    name: str
    receiver: str | None = None
    line: int = 0
    awaited: bool = False
    in_try: bool = False


@dataclass(frozen=True)
class ImportRef:
    """One import statement: the module named and the names it binds."""

    module: str
    names: tuple[str, ...] = ()
    alias: str | None = None
    line: int = 0


@dataclass(frozen=True)
class Risk:
    level: RiskLevel = "low"
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True)
class Symbol:
    """A definition. ``id`` is stable across edits that do not touch it."""

    id: str
    name: str
    qualified_name: str
    kind: str
    file: str
    language: str
    start_line: int
    end_line: int
    signature: str = ""
    doc: str = ""
    parent: str | None = None
    exported: bool = True
    decorators: tuple[str, ...] = ()
    is_async: bool = False
    arity: int = 0
    calls: tuple[CallSite, ...] = ()
    control_flow: int = 0
    max_nesting: int = 0
    risk: Risk = field(default_factory=Risk)
    body_hash: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["risk"] = self.risk.level
        data["risk_reasons"] = list(self.risk.reasons)
        data["decorators"] = list(self.decorators)
        data["calls"] = [c._asdict() for c in self.calls]
        return data


@dataclass(frozen=True)
class FileAnalysis:
    """Everything extracted from one file."""

    path: str
    language: str
    symbols: tuple[Symbol, ...] = ()
    imports: tuple[ImportRef, ...] = ()
    module_calls: tuple[CallSite, ...] = ()
    line_count: int = 0
    syntax_errors: int = 0
    sha256: str = ""


def symbol_id(path: str, qualified_name: str, kind: str, arity: int) -> str:
    """Stable id: path, qualified name, kind and arity; never line numbers."""
    raw = f"{path}\x00{qualified_name}\x00{kind}\x00{arity}".encode()
    return hashlib.sha256(raw).hexdigest()[:16]
