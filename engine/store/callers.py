"""Callers of changed symbols from the index's resolved call graph, for the semantic diff.

Owns ``index_callers``: the ``CallerGraph`` that ``engine.semantic.diff.analyze_diff`` takes as a
parameter (the diff is pure and never opens the store; its callers above the store pass this in).
Read-only; when the repository has no index yet it answers nothing and the text search answers.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from engine.errors import NotFoundError
from engine.repo.layout import RepoLayout, cache_home
from engine.semantic.diff import MAX_CALLERS_PER_SYMBOL, CallerGraph, CallerRef, SymbolChange
from engine.store.db import SymbolStore


def index_callers(root: str | os.PathLike[str]) -> CallerGraph:
    """The call-graph lookup for the repository at ``root`` (the index is opened when it is asked)."""
    layout = RepoLayout(Path(root).resolve())

    def lookup(changes: Sequence[SymbolChange]) -> dict[str, tuple[int, tuple[CallerRef, ...]]]:
        """Callers for modified and moved symbols the index knows.

        Removed and renamed symbols are left to the text search: a fresh index no longer has them.
        """
        if not (cache_home() / layout.repo_id / "index.db").is_file():
            return {}
        out: dict[str, tuple[int, tuple[CallerRef, ...]]] = {}
        with SymbolStore(layout) as store:
            for c in changes:
                if c.change not in ("modified", "moved"):
                    continue
                try:
                    nodes = store.callers(c.id, depth=1)
                except NotFoundError:
                    continue  # not indexed yet: the text search answers for it
                refs = tuple(
                    CallerRef(n.file, n.line, None if n.name == "<module>" else n.name, "", "call graph")
                    for n in nodes[:MAX_CALLERS_PER_SYMBOL]
                )
                out[c.id] = (len(nodes), refs)
        return out

    return lookup
