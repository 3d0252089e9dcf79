"""The semantic tables of index.db and their versioned migrations.

Owns the DDL for files, symbols, calls, imports, edges, the symbol-name search
table and the file-import graph, versioned with ``PRAGMA user_version``. It must
never drop tables it does not own (the text index adds its own to the same file).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection

from engine.errors import IndexError_

# Bump when the semantic tables change shape; every step below upgrades by one.
# v2: calls carry their resolution and ``edges`` became a view; short_name column.
# v3: no index on calls(caller_id): callees are found through the caller's file.
# v4: the calls(callee_id) index covers resolved calls only (about half of them).
# v5: compact: files get an integer id; calls and imports carry it instead of the path, file
#     imports are id pairs (``file_links``), and ``edges``/``file_imports`` are views over them.
# v6: same shape, rows derived again: the risk tables class importlib.import_module and
#     __import__ as ``dynamic-import`` (they were ``subprocess``), and an index keeps a
#     symbol's risk reasons until its file changes.
# v7: same shape, rows derived again: TypeScript declarations without a body (a .d.ts file's
#     functions and class methods, overload signatures, ``declare module "x"``) are symbols, and
#     a JavaScript method a constructor sets on ``this`` is named after its class, and a name a
#     module exports by list (``export { A }``) is public.
# v8: same shape, rows derived again: a function in a namespace or module (TypeScript
#     ``namespace``, Rust ``mod``, Elixir ``defmodule``, ...) is a ``function``, not a ``method``
#     (a Ruby module's ``def`` stays a method), so calls to it without a receiver resolve.
# v9: same shape, rows derived again: a JavaScript/TypeScript module's anonymous default export
#     (``export default function (config) {...}``, ``export default ok && function () {...}``)
#     is a symbol named ``default``, where v8 extracted none.
SCHEMA_VERSION = 9

# Names of the tables this module owns: a migration may rebuild only these.
OWNED_TABLES = (
    "meta",
    "files",
    "skipped_files",
    "symbols",
    "symbol_terms",
    "calls",
    "imports",
    "edges",  # a view over calls
    "file_imports",  # a view over file_links (a table before v5)
    "file_links",
    "overview",
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS files (
    path          TEXT NOT NULL UNIQUE,
    language      TEXT NOT NULL,
    module        TEXT NOT NULL,
    size          INTEGER NOT NULL,
    mtime_ns      INTEGER NOT NULL,
    sha256        TEXT NOT NULL,
    line_count    INTEGER NOT NULL,
    syntax_errors INTEGER NOT NULL,
    indexed_at    REAL NOT NULL,
    -- Last, so ``SELECT *`` still starts with the columns FileRecord has always had.
    id            INTEGER PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS skipped_files (
    path     TEXT PRIMARY KEY,
    size     INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    reason   TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS symbols (
    sid            INTEGER PRIMARY KEY,
    id             TEXT NOT NULL,
    name           TEXT NOT NULL,
    short_name     TEXT NOT NULL,
    name_lower     TEXT NOT NULL,
    qualified_name TEXT NOT NULL,
    kind           TEXT NOT NULL,
    file           TEXT NOT NULL,
    module         TEXT NOT NULL,
    language       TEXT NOT NULL,
    start_line     INTEGER NOT NULL,
    end_line       INTEGER NOT NULL,
    signature      TEXT NOT NULL,
    doc            TEXT NOT NULL,
    parent         TEXT,
    exported       INTEGER NOT NULL,
    decorators     TEXT NOT NULL,
    is_async       INTEGER NOT NULL,
    arity          INTEGER NOT NULL,
    control_flow   INTEGER NOT NULL,
    max_nesting    INTEGER NOT NULL,
    risk           TEXT NOT NULL,
    risk_reasons   TEXT NOT NULL,
    body_hash      TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS symbol_terms (
    term TEXT NOT NULL,
    sid  INTEGER NOT NULL,
    PRIMARY KEY (term, sid)
) WITHOUT ROWID;
-- One row per call site; ``file_id`` is files.id (the path is not repeated per call).
CREATE TABLE IF NOT EXISTS calls (
    file_id       INTEGER NOT NULL,
    caller_id     TEXT,
    caller_parent TEXT,
    name          TEXT NOT NULL,
    receiver      TEXT,
    line          INTEGER NOT NULL,
    awaited       INTEGER NOT NULL,
    in_try        INTEGER NOT NULL,
    callee_id     TEXT,
    kind          TEXT,
    package       TEXT
);
CREATE TABLE IF NOT EXISTS imports (
    file_id INTEGER NOT NULL,
    module  TEXT NOT NULL,
    names   TEXT NOT NULL,
    alias   TEXT,
    line    INTEGER NOT NULL
);
-- File -> file import graph as id pairs.
CREATE TABLE IF NOT EXISTS file_links (
    src INTEGER NOT NULL,
    dst INTEGER NOT NULL,
    PRIMARY KEY (src, dst)
) WITHOUT ROWID;
-- Each call site carries its resolution (callee_id, kind, package); ``edges`` is the
-- resolved view of it that graph readers query, with the caller's file as a path.
CREATE VIEW IF NOT EXISTS edges AS
    SELECT f.path AS file, c.caller_id, c.callee_id, c.name AS callee_name, c.kind, c.package, c.line
    FROM calls c JOIN files f ON f.id = c.file_id
    WHERE c.kind IS NOT NULL;
-- The repository overview, built once per index state (meta 'generation') by its first reader;
-- ``probes`` are the files outside index.db it was built from, with their stat then.
CREATE TABLE IF NOT EXISTS overview (
    max_tokens INTEGER PRIMARY KEY,
    generation TEXT NOT NULL,
    probes     TEXT NOT NULL,
    data       TEXT NOT NULL,
    toon       TEXT NOT NULL
);
CREATE VIEW IF NOT EXISTS file_imports AS
    SELECT a.path AS src, b.path AS dst
    FROM file_links l JOIN files a ON a.id = l.src JOIN files b ON b.id = l.dst;
"""

# Secondary indexes: dropped during a bulk load and rebuilt after (far faster than
# maintaining them row by row), so keep every one of them listed here.
SECONDARY_INDEXES = (
    "CREATE INDEX IF NOT EXISTS files_module ON files(module)",
    "CREATE INDEX IF NOT EXISTS symbols_id ON symbols(id)",
    "CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file)",
    "CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name)",
    "CREATE INDEX IF NOT EXISTS symbols_short ON symbols(short_name)",
    "CREATE INDEX IF NOT EXISTS symbols_name_lower ON symbols(name_lower)",
    "CREATE INDEX IF NOT EXISTS symbols_qualified ON symbols(qualified_name)",
    "CREATE INDEX IF NOT EXISTS symbols_module ON symbols(module, kind, risk)",
    "CREATE INDEX IF NOT EXISTS symbol_terms_sid ON symbol_terms(sid)",
    "CREATE INDEX IF NOT EXISTS calls_file ON calls(file_id)",
    # Which files call a name whose definitions changed (incremental re-resolution).
    "CREATE INDEX IF NOT EXISTS calls_name ON calls(name)",
    "CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id)",
    # Partial: only resolved calls are looked up by callee (unresolved ones have none).
    "CREATE INDEX IF NOT EXISTS calls_callee ON calls(callee_id) WHERE callee_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS file_links_dst ON file_links(dst)",
)


def drop_secondary_indexes(conn: sqlite3.Connection) -> None:
    for ddl in SECONDARY_INDEXES:
        name = ddl.split("EXISTS ", 1)[1].split(" ", 1)[0]
        conn.execute(f"DROP INDEX IF EXISTS {name}")


def create_secondary_indexes(conn: sqlite3.Connection, *, skip_tables: Collection[str] = ()) -> None:
    """Create the secondary indexes (idempotent), except those on ``skip_tables``."""
    for ddl in SECONDARY_INDEXES:
        table = ddl.split(" ON ", 1)[1].split("(", 1)[0]
        if table not in skip_tables:
            conn.execute(ddl)


def _create_current(conn: sqlite3.Connection) -> None:
    conn.executescript(_SCHEMA)
    create_secondary_indexes(conn)


def _drop_owned(conn: sqlite3.Connection) -> None:
    """Drop the semantic tables (derived data: the next index run rebuilds them)."""
    kinds = dict(
        conn.execute("SELECT name, type FROM sqlite_master WHERE type IN ('table', 'view')").fetchall()
    )
    for name in OWNED_TABLES:
        if kinds.get(name) == "view":
            conn.execute(f"DROP VIEW {name}")
        elif kinds.get(name) == "table":
            conn.execute(f"DROP TABLE {name}")


def _rebuild_owned(conn: sqlite3.Connection) -> None:
    _drop_owned(conn)
    _create_current(conn)


# Step n upgrades a database at user_version n-1 to n. The semantic tables hold derived
# data, so a shape change rebuilds them (the next `semfora index` refills them) instead
# of converting rows; tables other layers own are never touched.
def _drop_caller_index(conn: sqlite3.Connection) -> None:
    conn.execute("DROP INDEX IF EXISTS calls_caller")


def _partial_callee_index(conn: sqlite3.Connection) -> None:
    conn.execute("DROP INDEX IF EXISTS calls_callee")
    # The v4 definition itself (a later step may rebuild the table in another shape).
    conn.execute("CREATE INDEX IF NOT EXISTS calls_callee ON calls(callee_id) WHERE callee_id IS NOT NULL")


MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {
    1: _create_current,
    2: _rebuild_owned,
    3: _drop_caller_index,
    4: _partial_callee_index,
    5: _rebuild_owned,
    6: _rebuild_owned,
    7: _rebuild_owned,
    8: _rebuild_owned,
    9: _rebuild_owned,
}
# The first version whose tables a step before it rebuilds from scratch: upgrading across it
# empties the semantic tables, and the caller says so (the next index run refills them).
REBUILT_AT = frozenset({2, 5, 6, 7, 8, 9})


def current_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the semantic tables to ``SCHEMA_VERSION``; returns the version found before.

    A database from a newer semfora is refused rather than silently downgraded.
    Unknown tables (the text index's) are left untouched.
    """
    found = current_version(conn)
    if found > SCHEMA_VERSION:
        raise IndexError_(
            f"index.db has schema version {found}, newer than this semfora ({SCHEMA_VERSION})",
            code="INDEX_TOO_NEW",
            hint="run `semfora index --rebuild` or upgrade semfora",
        )
    if found == 0:  # a new database starts at the current shape
        _create_current(conn)
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.commit()
        return found
    for version in range(found + 1, SCHEMA_VERSION + 1):
        MIGRATIONS[version](conn)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    return found
