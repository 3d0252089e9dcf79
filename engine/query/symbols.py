"""``SymbolIndex``: the symbol index, read-only, as the orchestrator reads it.

Owns the questions a context pack and a NEED round ask of ``index.db``: symbols by name, id and
file (a file's definitions in line order are cached process-wide by index state), the indexed
file a reporter's path means, callers and callees, fan-in and the bounded overview. It answers
with the engine's values (``Symbol``, ``GraphNode``), never rows. Must not write the index.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

from engine.semantic.model import Symbol
from engine.store.db import GraphNode, SymbolStore
from engine.store.rows import SYMBOL_COLUMNS, row_to_symbol

if TYPE_CHECKING:
    from engine.repo.layout import RepoLayout

# Files whose definitions are kept between packs (process-wide), keyed by the index's state:
# the neighbourhood reads whole files' definitions, and consecutive tasks share files.
MAX_CACHED_FILE_SYMBOLS = 512
_FILE_SYMBOLS: OrderedDict[tuple[str, int, str], list[Symbol]] = OrderedDict()
_FILE_SYMBOLS_LOCK = threading.Lock()


class SymbolIndex:
    """One read-only connection to a repository's ``index.db`` (one per thread that reads)."""

    def __init__(self, layout: RepoLayout) -> None:
        self.layout = layout
        self._store = SymbolStore(layout)

    def close(self) -> None:
        self._store.close()

    def replaced(self) -> bool:
        """index.db was replaced since this index opened it (see ``SymbolStore.replaced``)."""
        return self._store.replaced()

    def __enter__(self) -> SymbolIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # symbols -----------------------------------------------------------------

    def symbol(self, symbol_id: str) -> Symbol:
        """The symbol with this id, with its calls; NotFoundError (SYMBOL_NOT_FOUND) if none."""
        return self._store.symbol(symbol_id)

    def symbols_by_name(self, name: str, limit: int = 50) -> list[Symbol]:
        """Symbols whose id, qualified name, name or last name segment is exactly ``name``."""
        return self._store.symbols_by_name(name, limit=limit)

    def search_symbols(self, query: str, limit: int = 50) -> list[Symbol]:
        """Symbols whose names match ``query``, exact names and prefixes first."""
        return self._store.search_symbols(query, limit=limit)

    def symbols_in_file(self, path: str) -> list[Symbol]:
        """Definitions of ``path`` in line order, with their calls."""
        return self._store.symbols_in_file(path)

    def file_symbols(self, rel: str) -> list[Symbol]:
        """Definitions of ``rel`` in line order, without their call lists (one query, not one per symbol)."""
        db = self.layout.index_db
        try:
            key: tuple[str, int, str] | None = (str(db), db.stat().st_mtime_ns, rel)
        except OSError:
            key = None
        if key is not None:
            with _FILE_SYMBOLS_LOCK:
                found = _FILE_SYMBOLS.get(key)
                if found is not None:
                    _FILE_SYMBOLS.move_to_end(key)
                    return found
        rows = self._store.connection().execute(
            f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE file=? ORDER BY start_line", (rel,)
        )
        symbols = [row_to_symbol(r) for r in rows]
        if key is not None:
            with _FILE_SYMBOLS_LOCK:
                _FILE_SYMBOLS[key] = symbols
                while len(_FILE_SYMBOLS) > MAX_CACHED_FILE_SYMBOLS:
                    _FILE_SYMBOLS.popitem(last=False)
        return symbols

    def fan_in(self, limit: int = 10) -> list[tuple[Symbol, int]]:
        """The symbols with the most callers, and how many each has."""
        return self._store.fan_in(limit)

    # files -------------------------------------------------------------------

    def repository_file(self, path: str) -> str | None:
        """The indexed file a path from outside the repository means, or None.

        A traceback's or a link's paths are the reporter's (``/usr/lib/python3/site-packages/pkg/
        mod.py``, ``src/pkg/mod.py`` at another commit): the file is the repository path sharing its
        last two components (or its file name, when only one file has it)."""
        parts = [p for p in path.replace("\\", "/").split("/") if p]
        conn = self._store.connection()
        for depth in (2, 1):
            if len(parts) < depth:
                continue
            tail = "/".join(parts[-depth:])
            rows = conn.execute(
                "SELECT path FROM files WHERE path = ? OR path LIKE ? ESCAPE '\\' LIMIT 3",
                (tail, "%/" + tail.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")),
            ).fetchall()
            if len(rows) == 1 or (rows and depth == 2):
                return str(rows[0][0])
        return None

    # the call graph ----------------------------------------------------------

    def callers(self, symbol_id: str, depth: int = 1) -> list[GraphNode]:
        return self._store.callers(symbol_id, depth)

    def callees(self, symbol_id: str, depth: int = 1) -> list[GraphNode]:
        return self._store.callees(symbol_id, depth)

    # the overview ------------------------------------------------------------

    def overview(self, max_tokens: int) -> str:
        """The bounded repository overview (TOON), stored in index.db once per index state."""
        from engine.store.overview import stored_overview

        return stored_overview(self.layout, self._store.connection(), max_tokens=max_tokens).toon
