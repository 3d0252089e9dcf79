"""The NEED round: fetch what the model asked for by name, within the round's own budget.

Owns ``answer_need``: symbols by name (exact, qualified, then ranked search; two at most per
name) as their full source, or as much of it as the round's budget allows (head, tail and
marked gaps); files whole, or their outline when too large. Code the pack already showed
whole is not sent again; code it showed as an excerpt is sent whole now (that is what a NEED
for it means). Secret files and paths outside the repository are refused by name. It never
evicts what was sent: what the model has read stays read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.orchestrator.budget import ContextBudget, ContextItem, Priority
from engine.orchestrator.context.candidates import of_symbol
from engine.orchestrator.context.excerpt import excerpt
from engine.orchestrator.context.rank import is_declaration

if TYPE_CHECKING:
    from engine.orchestrator.context.reads import RepoReader
    from engine.query import SymbolIndex

# Symbols served per requested name: a name shared by many definitions (``save``) is
# ambiguous, and the first two by the index's order are the likely ones.
MATCHES_PER_NAME = 2
# Definitions of one name looked up before the implementations are put first.
NAME_LOOKUP = 6


@dataclass(frozen=True)
class NeedAnswer:
    """The items one NEED round admitted and the names it could not serve (with why)."""

    items: tuple[ContextItem, ...]
    missing: tuple[str, ...]


def answer_need(
    *,
    store: SymbolIndex,
    reader: RepoReader,
    make_item: Callable[..., ContextItem],
    header_tokens: Callable[[ContextItem], int],
    shown: dict[str, list[tuple[int, int]]],
    symbols: Sequence[str],
    files: Sequence[str],
    budget: ContextBudget,
    round_no: int,
) -> NeedAnswer:
    """Serve one NEED round into ``budget`` (see the module docstring).

    ``shown`` maps files to the line ranges the model already has in full.
    """
    items: list[ContextItem] = []
    missing: list[str] = []
    reason = f"requested by the model (NEED round {round_no})"

    def covered(file: str, a: int, b: int) -> bool:
        return any(x <= a and b <= y for x, y in shown.get(file, ()))

    def admit(item: ContextItem) -> bool:
        if item.id in budget or item.tokens > budget.remaining:
            return False
        if budget.add(item).admitted:
            items.append(item)
            if not item.elided and item.file and item.start_line:
                shown.setdefault(item.file, []).append((item.start_line, item.end_line or item.start_line))
            return True
        return False

    for name in symbols:
        found = store.symbols_by_name(name, limit=NAME_LOOKUP) or store.search_symbols(name, limit=1)
        # A package's declarations restate its classes and functions by the same names (axios's
        # AxiosError is in index.d.ts, index.d.cts and lib/core/AxiosError.js): the implementation
        # is what a NEED for the name means, then the declarations, each kind in the index's order.
        found = sorted(
            (s for s in found if not reader.is_secret(s.file)), key=lambda s: is_declaration(s.file)
        )
        if not found:
            missing.append(name)
            continue
        for sym in found[:MATCHES_PER_NAME]:
            if covered(sym.file, sym.start_line, sym.end_line):
                continue  # already in front of the model, whole
            cand = of_symbol(sym)
            cand.reasons.append(reason)
            probe = ContextItem(
                f"need:source:{sym.id}", "source", "", 0, Priority.HIGH, reason,
                sym.file, sym.qualified_name, sym.start_line, sym.end_line,
            )  # fmt: skip
            room = budget.remaining - header_tokens(probe)
            lines = reader.lines(sym.file)
            part = excerpt(lines, sym.start_line, sym.end_line, {}, room, read_on=True) if lines else None
            if part is None or not admit(
                make_item(
                    f"need:source:{sym.id}",
                    "source",
                    part.text,
                    Priority.HIGH,
                    reason + ("; excerpt: over the round's budget" if part.elided else ""),
                    cand,
                    start_line=part.first,
                    end_line=part.last,
                    elided=part.elided,
                )
            ):
                missing.append(f"{name} (over budget)")
    for path in files:
        rel = reader.safe_rel(path)
        text = reader.text(rel) if rel is not None else None
        if rel is None or text is None:
            missing.append(f"{path} (not found, secret or outside the repository)")
            continue
        last = text.count("\n") + (0 if text.endswith("\n") else 1)
        whole = make_item(
            f"need:file:{rel}", "file", text, Priority.HIGH, reason, None,
            file=rel, symbol=None, start_line=1, end_line=last,
        )  # fmt: skip
        if covered(rel, 1, last) or admit(whole):
            continue
        outline = "\n".join(
            f"{s.kind} {s.qualified_name} (lines {s.start_line}-{s.end_line})"
            for s in store.symbols_in_file(rel)
        )
        brief = make_item(
            f"need:outline:{rel}", "file", outline or "(no symbols)", Priority.HIGH,
            reason + " (outline: file over budget)", None,
            file=rel, symbol=None, start_line=None, end_line=None,
        )  # fmt: skip
        if not admit(brief):
            missing.append(f"{path} (over budget)")
    return NeedAnswer(tuple(items), tuple(missing))
