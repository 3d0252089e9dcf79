"""Opening index.db safely, and the read API every other layer uses.

Owns connections (WAL, one writer, any number of readers), detection of a
corrupt or truncated file (rebuilt with a typed warning), and ``SymbolStore``,
the read-only view of symbols, calls and graphs. Writing is the indexer's job.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import struct
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.errors import EngineWarning, IndexError_, LockBusy, NotFoundError, UsageError, WarningSink
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol
from engine.store.lock import writer_lock
from engine.store.rows import SYMBOL_COLUMNS, most_called, row_to_symbol, symbol_filters
from engine.store.schema import REBUILT_AT, SCHEMA_VERSION, current_version, migrate
from engine.store.symbol_search import rank_symbols

SQLITE_MAGIC = b"SQLite format 3\x00"
# Seconds a connection waits on another writer's lock before SQLite gives up.
BUSY_TIMEOUT_S = 30.0
# While a writer holds the lock, a header that looks truncated is looked at again for this long
# (every SETTLE_POLL_S): a checkpoint copies pages into the file and can leave the header ahead
# of its size for a moment, and a reader then failed INDEX_BUSY although nothing was damaged.
SETTLE_S = 5.0
SETTLE_POLL_S = 0.05
# SQLite page cache per connection, in KiB (negative cache_size means KiB).
PAGE_CACHE_KB = 32_000
# The header bytes we read to check the page size and page count.
HEADER_BYTES = 100
# Deepest walk of the call graph a caller may ask for; deeper walks explode.
MAX_GRAPH_DEPTH = 6
# Most nodes one call-graph walk returns, so a hub symbol cannot flood a reply.
MAX_GRAPH_NODES = 500
# Names offered when a symbol is not found (``resolve_one``'s hint).
NEAREST_NAMES = 5


@dataclass(frozen=True)
class FileRecord:
    path: str
    language: str
    module: str
    size: int
    mtime_ns: int
    sha256: str
    line_count: int
    syntax_errors: int
    indexed_at: float
    id: int = 0  # files.id, the key calls, imports and file links use instead of the path


# The columns of ``files`` in FileRecord's order.
FILE_COLUMNS = "path, language, module, size, mtime_ns, sha256, line_count, syntax_errors, indexed_at, id"


@dataclass(frozen=True)
class GraphNode:
    """One symbol reached by a call-graph walk, with how it was reached."""

    symbol_id: str | None
    name: str
    file: str
    line: int
    depth: int
    via: str  # resolution kind of the edge: same_file|import|unique|ranked|external
    package: str | None = None
    # The node one hop nearer the start that this one was reached from (None at depth 1).
    parent_id: str | None = None


@dataclass(frozen=True)
class StoreStats:
    files: int
    symbols: int
    calls: int
    edges: int
    resolved_edges: int
    external_edges: int
    file_imports: int
    skipped: int
    languages: dict[str, int]
    schema_version: int


def header_problem(path: Path) -> str | None:
    """Why the file at ``path`` cannot be a sound SQLite database, or None.

    Cheap (reads 100 bytes): catches garbage and a file cut short, the two
    common ways an index is damaged, without a full integrity scan.
    """
    try:
        size = path.stat().st_size
        if size == 0:
            return None  # SQLite treats an empty file as a new database
        head = _read_header(path)
    except OSError as exc:
        return f"cannot read: {exc.strerror}"
    if len(head) < HEADER_BYTES or not head.startswith(SQLITE_MAGIC):
        return "not an SQLite database"
    page_size = struct.unpack(">H", head[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return "bad page size in header"
    pages = struct.unpack(">I", head[28:32])[0]
    wal = Path(str(path) + "-wal")
    if size % page_size:
        return "truncated (size is not a whole number of pages)"
    if pages and size < pages * page_size and not (wal.exists() and wal.stat().st_size > 0):
        return f"truncated ({size} bytes, header says {pages * page_size})"
    return None


# index.db's descriptors this process reads headers through: opened once per file, never closed
# while the file is in place (see ``_read_header``).
_HEADER_FDS: dict[str, int] = {}
_HEADER_FDS_LOCK = threading.Lock()


def _read_header(path: Path) -> bytes:
    """The first ``HEADER_BYTES`` of ``path``, through a descriptor this process keeps open.

    Closing any descriptor of a file drops every POSIX lock the process holds on it, SQLite's
    included. A ``with open(index.db)`` here, in a process whose connections had index.db open
    (a server, the app), let another process's connection take itself for the last one on
    closing and remove the WAL under them: 'disk I/O error', 'database disk image is malformed',
    then an INDEX_CORRUPT rebuild. The descriptor of a file since deleted is closed (its
    connections are on their way out; keeping it would hold the deleted file's space).
    """
    key = str(path)
    with _HEADER_FDS_LOCK:
        fd = _HEADER_FDS.get(key)
        if fd is not None:
            now, held = os.stat(path), os.fstat(fd)
            if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino):
                if held.st_nlink == 0:
                    os.close(fd)
                fd = None
        if fd is None:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            _HEADER_FDS[key] = fd
        return os.pread(fd, HEADER_BYTES, 0)


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, None when it does not exist: another value means another file
    (`semfora index --rebuild` elsewhere, a cleared cache, a damaged index rebuilt). A connection
    opened before keeps reading the old file, deleted, for as long as it stays open."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _configure(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute(f"PRAGMA cache_size=-{PAGE_CACHE_KB}")


def _discard(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        p = Path(str(path) + suffix)
        try:
            p.unlink()
        except FileNotFoundError:
            continue


def open_index(
    layout: RepoLayout,
    *,
    on_warning: WarningSink | None = None,
    readonly: bool = False,
    holding_lock: bool = False,
    _settled: bool = False,
) -> sqlite3.Connection:
    """A migrated connection to ``layout.index_db``, rebuilding it if damaged.

    A damaged file is deleted (with its WAL) and recreated empty; the caller
    then re-indexes. ``on_warning`` hears about it as ``INDEX_CORRUPT``. Only a
    process holding the writer lock may delete the file: a reader that finds damage
    takes the lock first, and if an indexer holds it, raises ``INDEX_BUSY`` rather
    than deleting a database that is being written.
    """
    path = layout.index_db
    problem = header_problem(path) if path.exists() else None
    if problem is None:
        try:
            conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
            _configure(conn)
            if not readonly:
                found = migrate(conn)
                _warn_if_emptied(found, on_warning)
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return conn
        except sqlite3.DatabaseError as exc:
            problem = str(exc)
            try:
                conn.close()
            except (sqlite3.Error, UnboundLocalError):
                problem += " (and could not be closed)"
    if holding_lock:
        return _rebuild(path, problem, on_warning)
    try:
        with writer_lock(layout, 0):
            return _rebuild(path, problem, on_warning)
    except LockBusy as exc:
        if not _settled and problem.startswith("truncated") and _settles(path):
            return open_index(layout, on_warning=on_warning, readonly=readonly, _settled=True)
        raise IndexError_(
            f"index.db looks damaged ({problem}) while another process is writing it",
            code="INDEX_BUSY",
            hint="try again when `semfora index` finishes",
        ) from exc


def _settles(path: Path) -> bool:
    """Whether the header of ``path`` reads as whole within ``SETTLE_S`` (a writer's checkpoint ended)."""
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline:
        time.sleep(SETTLE_POLL_S)
        if path.exists() and header_problem(path) is None:
            return True
    return False


def _rows_derived_again(found: int) -> bool:
    """Whether an index at schema ``found`` lacks rows this version derives (an upgrade across a
    version in ``REBUILT_AT`` empties its semantic tables)."""
    return 0 < found < SCHEMA_VERSION and any(v in REBUILT_AT for v in range(found + 1, SCHEMA_VERSION + 1))


def _warn_if_emptied(found: int, on_warning: WarningSink | None) -> None:
    """Say so when an upgrade from ``found`` emptied the semantic tables (the next index run refills them)."""
    if on_warning is not None and _rows_derived_again(found):
        on_warning(
            EngineWarning(
                "INDEX_UPGRADED",
                f"index.db was written by an older semfora (schema {found}, now {SCHEMA_VERSION}); "
                "it is rebuilt by the next index run",
            )
        )


def outdated_index_warning(layout: RepoLayout) -> EngineWarning | None:
    """``INDEX_OUTDATED`` when index.db was derived by an older semfora and a reader answers from
    it without upgrading it (`search` after an upgrade missed what this version extracts, and said
    nothing); None when it is current, missing or unreadable (those are said where it is opened)."""
    try:
        conn = sqlite3.connect(f"file:{layout.index_db}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        found = current_version(conn)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    if not _rows_derived_again(found):
        return None
    return EngineWarning(
        "INDEX_OUTDATED",
        f"index.db was written by an older semfora (schema {found}, now {SCHEMA_VERSION}); these results "
        "come from it as it is until `semfora index` rebuilds it",
    )


def indexed_discovery_key(layout: RepoLayout) -> str | None:
    """The discovery settings the last index run used (``changes.discovery_key``), read without
    opening the store (no migration, no repair); None without an index or a recorded key."""
    if not layout.index_db.is_file():
        return None
    try:
        conn = sqlite3.connect(f"file:{layout.index_db}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'discovery'").fetchone()
    except sqlite3.DatabaseError:  # no meta table yet, or a damaged file: the store's own checks say so
        return None
    finally:
        conn.close()
    return None if row is None else str(row[0])


def _rebuild(path: Path, problem: str, on_warning: WarningSink | None) -> sqlite3.Connection:
    if on_warning is not None:
        on_warning(EngineWarning("INDEX_CORRUPT", f"index.db was damaged ({problem}); rebuilding it"))
    _discard(path)
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, check_same_thread=False)
    _configure(conn)
    migrate(conn)
    return conn


def _module_file(file: str, module: str) -> bool:
    """Whether ``file`` is the module ``module`` (``pay/app``) names: ``pay/app.py``,
    ``src/pay/app.py``, ``pay/app/__init__.py`` or ``pay/app/index.js``."""
    stem = file.rsplit(".", 1)[0] if "." in file.rsplit("/", 1)[-1] else file
    for name in (stem, stem.removesuffix("/__init__"), stem.removesuffix("/index")):
        if name == module or name.endswith("/" + module):
            return True
    return False


def integrity_problem(conn: sqlite3.Connection) -> str | None:
    """Run ``PRAGMA quick_check`` (reads every page); None when the file is sound."""
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
    except sqlite3.DatabaseError as exc:
        return str(exc)
    first = rows[0][0] if rows else "ok"
    return None if first == "ok" else "; ".join(str(r[0]) for r in rows[:3])


class SymbolStore:
    """Read-only access to one repository's index.db.

    Each store owns its own connection, so readers never wait on the indexer
    (WAL gives them the last committed snapshot).
    """

    def __init__(self, layout: RepoLayout, *, on_warning: WarningSink | None = None) -> None:
        self.layout = layout
        self._conn = open_index(layout, on_warning=on_warning)
        self.identity = file_identity(layout.index_db)  # the file this connection reads

    def close(self) -> None:
        self._conn.close()

    def replaced(self) -> bool:
        """index.db is another file than the one this store opened: reopen to read the new one."""
        now = file_identity(self.layout.index_db)
        return now is not None and now != self.identity

    def __enter__(self) -> SymbolStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connection(self) -> sqlite3.Connection:
        """This store's connection, for layers that add their own tables (read them only)."""
        return self._conn

    @contextmanager
    def read_connection(self) -> Iterator[sqlite3.Connection]:
        """A fresh connection for a worker thread; closed when the block ends."""
        conn = sqlite3.connect(str(self.layout.index_db), timeout=BUSY_TIMEOUT_S)
        try:
            yield conn
        finally:
            conn.close()

    # files -----------------------------------------------------------------

    def is_empty(self) -> bool:
        return self._conn.execute("SELECT 1 FROM files LIMIT 1").fetchone() is None

    def files(self) -> Iterator[FileRecord]:
        """Every indexed file, streamed in path order."""
        for row in self._conn.execute(f"SELECT {FILE_COLUMNS} FROM files ORDER BY path"):
            yield FileRecord(*row)

    def file(self, path: str) -> FileRecord | None:
        row = self._conn.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE path=?", (path,)).fetchone()
        return FileRecord(*row) if row else None

    def skipped(self, limit: int = 1000) -> list[tuple[str, str]]:
        rows = self._conn.execute("SELECT path, reason FROM skipped_files ORDER BY path LIMIT ?", (limit,))
        return [(r[0], r[1]) for r in rows]

    # symbols ---------------------------------------------------------------

    def symbols_in_file(self, path: str) -> list[Symbol]:
        rows = self._conn.execute(
            f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE file=? ORDER BY start_line", (path,)
        )
        return [self._with_calls(row_to_symbol(r)) for r in rows]

    def symbol(self, symbol_id: str) -> Symbol:
        row = self._conn.execute(f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE id=?", (symbol_id,)).fetchone()
        if row is None:
            raise NotFoundError(f"no symbol with id {symbol_id}", code="SYMBOL_NOT_FOUND")
        return self._with_calls(row_to_symbol(row))

    def module_of(self, symbol_id: str) -> str:
        row = self._conn.execute("SELECT module FROM symbols WHERE id=?", (symbol_id,)).fetchone()
        return str(row[0]) if row else ""

    def _with_calls(self, sym: Symbol) -> Symbol:
        from dataclasses import replace

        from engine.semantic.model import CallSite

        rows = self._conn.execute(
            "SELECT name, receiver, line, awaited, in_try FROM calls "
            "WHERE caller_id=? AND file_id=(SELECT id FROM files WHERE path=?) ORDER BY line",
            (sym.id, sym.file),
        )
        calls = tuple(CallSite(r[0], r[1], r[2], bool(r[3]), bool(r[4])) for r in rows)
        return replace(sym, calls=calls)

    def symbols_by_name(self, name_or_qualified: str, limit: int = 50) -> list[Symbol]:
        """Symbols whose id, qualified name, name or last name segment (``send`` for ``res.send``)
        is exactly this, in that preference."""
        for column in ("id", "qualified_name", "name", "short_name"):
            rows = self._conn.execute(
                f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE {column}=? ORDER BY file, start_line LIMIT ?",
                (name_or_qualified, limit),
            ).fetchall()
            if rows:
                return [row_to_symbol(r) for r in rows]
        return []

    def symbols_at(self, placed: str) -> list[Symbol]:
        """Symbols named with their place, as agents write them: ``pay/app.py:Ledger.record`` (a
        file and a qualified name) or ``pay.app.Ledger.record`` (an import path: the module's
        file, or its package's ``__init__``, then the qualified name; a tail of the path does)."""
        if ":" in placed:
            path, _, qualified = placed.rpartition(":")
            rows = self._conn.execute(
                f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE file=? AND qualified_name=? ORDER BY start_line",
                (path.strip().strip("/"), qualified.strip()),
            ).fetchall()
            return [row_to_symbol(r) for r in rows]
        parts = placed.split(".")
        for cut in range(1, len(parts)):  # the shortest module first: the longest qualified name
            module, qualified = "/".join(parts[:cut]), ".".join(parts[cut:])
            rows = self._conn.execute(
                f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE qualified_name=? ORDER BY file, start_line",
                (qualified,),
            ).fetchall()
            found = [sym for sym in map(row_to_symbol, rows) if _module_file(sym.file, module)]
            if found:
                return found
        return []

    def resolve_one(self, name_or_id: str) -> Symbol:
        """The single symbol meant by an id, qualified name, name or placed name (``symbols_at``);
        the best ranked if several. A fuzzy match must agree with every part given: a qualifier
        that matches nothing is not answered by another symbol of the same last name."""
        found = self.symbols_by_name(name_or_id, limit=1) or self.symbols_at(name_or_id)[:1]
        if not found:
            hits = self.search_symbols(name_or_id, limit=1)
            asked = name_or_id.lower()
            if (
                not hits
                or hits[0].name.lower() != asked.split(".")[-1]
                or ("." in asked and asked != hits[0].qualified_name.lower())
            ):
                # A typo (``Clientt``) names what it was probably meant to be, in every front end.
                near = dict.fromkeys(
                    h.qualified_name for h in self.search_symbols(name_or_id, limit=NEAREST_NAMES)
                )
                raise NotFoundError(
                    f"no symbol named {name_or_id!r}",
                    code="SYMBOL_NOT_FOUND",
                    hint=f"nearest names: {', '.join(near)}" if near else None,
                )
            found = hits
        # The name lookups read the symbols table alone; one symbol is worth its call sites.
        return self._with_calls(found[0])

    def list_symbols(
        self, module: str | None = None, kind: str | None = None, risk: str | None = None, limit: int = 50
    ) -> list[Symbol]:
        where, params = symbol_filters(module, kind, risk)
        rows = self._conn.execute(
            f"SELECT {SYMBOL_COLUMNS} FROM symbols {where} ORDER BY file, start_line LIMIT ?",
            (*params, limit),
        )
        return [row_to_symbol(r) for r in rows]

    def count_symbols(
        self, module: str | None = None, kind: str | None = None, risk: str | None = None
    ) -> int:
        """How many symbols ``list_symbols`` would list without a limit."""
        where, params = symbol_filters(module, kind, risk)
        return int(self._conn.execute(f"SELECT count(*) FROM symbols {where}", params).fetchone()[0])

    def symbol_kinds(self) -> list[str]:
        """The kinds of symbol this index holds (``function``, ``class``, ...), most common first."""
        rows = self._conn.execute("SELECT kind FROM symbols GROUP BY kind ORDER BY count(*) DESC, kind")
        return [r[0] for r in rows]

    def search_symbols(
        self,
        query: str,
        module: str | None = None,
        kind: str | None = None,
        risk: str | None = None,
        limit: int = 20,
    ) -> list[Symbol]:
        """Exact names, then prefixes, then identifier parts, then substrings and fuzzy matches.

        Every tier is an indexed lookup except the last, which only runs when the
        earlier tiers did not fill ``limit``.
        """
        return rank_symbols(self._conn, query, module=module, kind=kind, risk=risk, limit=limit)

    # graphs ----------------------------------------------------------------

    def callers(self, symbol_id: str, depth: int = 1, *, limit: int = MAX_GRAPH_NODES) -> list[GraphNode]:
        """Who calls this symbol, breadth first, up to ``depth`` hops and ``limit`` nodes."""
        return self._walk(symbol_id, depth, incoming=True, limit=limit)

    def unresolved_calls(self, name: str, *, method: bool) -> int:
        """Calls named ``name`` tied to no definition and to no outside package: ``x.name()`` whose
        receiver's type is unknown when ``method``, else a plain ``name()``. Possible callers of a
        definition with that name that ``callers`` cannot list."""
        receiver = "IS NOT NULL" if method else "IS NULL"
        row = self._conn.execute(
            "SELECT count(*) FROM calls WHERE name = ? AND callee_id IS NULL "
            f"AND COALESCE(package, '') = '' AND receiver {receiver}",
            (name,),
        ).fetchone()
        return int(row[0])

    def callees(self, symbol_id: str, depth: int = 1, *, limit: int = MAX_GRAPH_NODES) -> list[GraphNode]:
        """What this symbol calls (resolved and external), up to ``depth`` hops and ``limit`` nodes."""
        return self._walk(symbol_id, depth, incoming=False, limit=limit)

    def _walk(self, symbol_id: str, depth: int, *, incoming: bool, limit: int) -> list[GraphNode]:
        if depth < 1 or depth > MAX_GRAPH_DEPTH:
            raise UsageError(f"depth must be between 1 and {MAX_GRAPH_DEPTH}, not {depth}")
        self.symbol(symbol_id)  # raises NotFound for an unknown id
        seen: set[str] = {symbol_id}
        frontier = [symbol_id]
        out: list[GraphNode] = []
        for level in range(1, depth + 1):
            nxt: list[str] = []
            for sid in frontier:
                if incoming:
                    rows = self._conn.execute(
                        "SELECT c.caller_id, COALESCE(s.qualified_name, '<module>'), f.path, c.line, c.kind, "
                        "c.package FROM calls c JOIN files f ON f.id = c.file_id "
                        "LEFT JOIN symbols s ON s.id = c.caller_id "
                        "WHERE c.callee_id = ? AND c.kind IS NOT NULL ORDER BY f.path, c.line",
                        (sid,),
                    )
                else:
                    rows = self._conn.execute(
                        "SELECT c.callee_id, COALESCE(s.qualified_name, c.name), COALESCE(s.file, ''), "
                        "COALESCE(s.start_line, c.line), c.kind, c.package FROM calls c "
                        "LEFT JOIN symbols s ON s.id = c.callee_id "
                        # The caller's own file narrows the scan through the calls_file index.
                        "WHERE c.file_id IN (SELECT f.id FROM files f JOIN symbols x ON x.file = f.path "
                        "WHERE x.id = ?) AND c.caller_id = ? AND c.kind IS NOT NULL ORDER BY c.line",
                        (sid, sid),
                    )
                for other, name, file, line, via, package in rows:
                    key = other or f"{file}:{name}:{via}"
                    if key in seen:
                        continue
                    seen.add(key)
                    out.append(
                        GraphNode(other, name, file, line, level, via, package, sid if level > 1 else None)
                    )
                    if other:
                        nxt.append(other)
                    if len(out) >= limit:
                        return out
            frontier = nxt
            if not frontier:
                break
        return out

    def fan_in(self, limit: int = 10) -> list[tuple[Symbol, int]]:
        """The symbols called from the most places."""
        out = []
        for sid, n in most_called(self._conn, limit):
            row = self._conn.execute(f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE id=?", (sid,)).fetchone()
            if row:
                out.append((row_to_symbol(row), n))
        return out

    def imports_of(self, path: str) -> list[str]:
        rows = self._conn.execute(
            "SELECT b.path FROM files a JOIN file_links l ON l.src = a.id JOIN files b ON b.id = l.dst "
            "WHERE a.path = ? ORDER BY b.path",
            (path,),
        )
        return [r[0] for r in rows]

    def imported_by(self, path: str) -> list[str]:
        rows = self._conn.execute(
            "SELECT a.path FROM files b JOIN file_links l ON l.dst = b.id JOIN files a ON a.id = l.src "
            "WHERE b.path = ? ORDER BY a.path",
            (path,),
        )
        return [r[0] for r in rows]

    def module_graph(self, limit: int = 200) -> list[tuple[str, str, int]]:
        """Directory -> directory import counts, heaviest first."""
        rows = self._conn.execute(
            "SELECT a.module, b.module, count(*) AS n FROM file_links fl "
            "JOIN files a ON a.id = fl.src JOIN files b ON b.id = fl.dst "
            "WHERE a.module != b.module GROUP BY a.module, b.module ORDER BY n DESC LIMIT ?",
            (limit,),
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def stats(self) -> StoreStats:
        q = self._conn.execute

        def one(sql: str) -> int:
            return int(q(sql).fetchone()[0])

        langs = {r[0]: int(r[1]) for r in q("SELECT language, count(*) FROM files GROUP BY language")}
        return StoreStats(
            files=one("SELECT count(*) FROM files"),
            symbols=one("SELECT count(*) FROM symbols"),
            calls=one("SELECT count(*) FROM calls"),
            edges=one("SELECT count(*) FROM calls WHERE kind IS NOT NULL"),
            resolved_edges=one("SELECT count(*) FROM calls WHERE callee_id IS NOT NULL"),
            external_edges=one("SELECT count(*) FROM calls WHERE kind IS NOT NULL AND callee_id IS NULL"),
            file_imports=one("SELECT count(*) FROM file_links"),
            skipped=one("SELECT count(*) FROM skipped_files"),
            languages=langs,
            schema_version=int(q("PRAGMA user_version").fetchone()[0]),
        )


@dataclass(frozen=True)
class SourceLines:
    """A symbol's text as read now: ``first``-``last`` are the lines ``text`` holds (the symbol's
    own ``start``-``end`` plus the context asked for); ``note`` says when the text is not the
    file's own UTF-8 (bad bytes shown as U+FFFD, or decoded from a declared encoding)."""

    text: str
    first: int
    last: int
    start: int
    end: int
    note: str = ""  # the text is not the file's own UTF-8 (see engine.repo.text)


def symbol_source(
    layout: RepoLayout,
    sym: Symbol,
    context: int = 0,
    *,
    deny: Sequence[str] | None = None,
    indexed_sha256: str | None = None,
) -> SourceLines:
    """The text of a symbol plus ``context`` lines either side.

    The file is read through the policy sandbox (inside the root through every link, not in
    .git, not on ``deny``), and the text is redacted. When the file no longer has the content
    it was indexed with (``indexed_sha256``), the symbol is found again in the file as it is
    now: its old line numbers would show some other code. Gone from the file, it is
    SYMBOL_NOT_FOUND.
    """
    from engine.policy.redaction import redact
    from engine.policy.sandbox import read_bytes, resolve
    from engine.repo.text import decode_source

    resolved = resolve(layout.root, sym.file, deny=deny)
    try:
        data = read_bytes(resolved)
    except NotFoundError as exc:
        raise NotFoundError(f"cannot read {sym.file}: {exc.message}", code="FILE_UNREADABLE") from exc
    start, end = sym.start_line, sym.end_line
    if indexed_sha256 is not None and hashlib.sha256(data).hexdigest() != indexed_sha256:
        start, end = _relocate(sym, data)
    decoded = decode_source(data)
    lines = redact(decoded.text).splitlines()
    first = max(1, start - context)
    last = min(len(lines), end + context)
    text = "\n".join(lines[first - 1 : last])
    return SourceLines(text, first, last, start, min(end, len(lines)), decoded.note(sym.file))


def _relocate(sym: Symbol, data: bytes) -> tuple[int, int]:
    """``sym``'s lines in ``data``, the file's content now (changed since it was indexed)."""
    from engine.semantic.extract import analyze_source

    now = analyze_source(sym.file, data, sym.language).symbols
    same = [s for s in now if s.id == sym.id] or [
        s for s in now if s.qualified_name == sym.qualified_name and s.kind == sym.kind
    ]
    if not same:
        raise NotFoundError(
            f"{sym.qualified_name} is no longer in {sym.file} (the file changed since it was indexed)",
            code="SYMBOL_NOT_FOUND",
            hint="`semfora index` brings the index up to date",
        )
    return same[0].start_line, same[0].end_line


def relative_module(path: str) -> str:
    """The module (directory) a repository-relative file belongs to; ``.`` at the root."""
    head = os.path.dirname(path)
    return head or "."
