"""The full-text index: chunk rows and a contentless FTS5 table in index.db.

Owns the ``text_*`` tables (its own schema version in ``text_meta``), safe query
building (user text never reaches FTS5 syntax raw) and weighted BM25 ranking.
A chunk row holds where the chunk is and what it is called, never its text: the text
is in the file (``chunk_source.chunk_text`` reads it back, checked against ``text_hash``).
FTS5 cannot forget a contentless document without its old text, so a replaced chunk's
row is deleted and its postings stay behind as a "dead" document that queries skip
(its rowid is never reused) until ``compact`` rebuilds the FTS table.
It never touches the store's tables and never embeds anything.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import IndexError_
from engine.index.chunking import Chunk, split_identifier, text_hash

# v3: no chunk text in the database (contentless FTS5, text read back from the files).
SCHEMA_VERSION = "3"

# bm25() column weights, in the order of the FTS columns. The issue fixes the order:
# a hit in the symbol name says most, then the path, then signature+doc, then the body.
W_NAME = 10.0
W_PATH = 4.0
W_SIGDOC = 3.0
W_BODY = 1.0
# Parts of compound identifiers used in the body: a weak signal, below the body itself
# in precision but needed so "user by id" reaches code that only calls getUserById.
W_PARTS = 0.8
# A term found in more than this share of chunks carries little information (its IDF is low) but
# costs a bm25() evaluation per matching chunk: "self" (71% of Django's chunks), "def". At 12%
# it also dropped words that carry a request's meaning ("return" 25%, "object" 19%, "not" 18%)
# and cost recall; 30% keeps them for ~5 ms more on Django's slowest queries.
COMMON_TERM_FRACTION = 0.3
# Query words that are English glue in a plain-language request, never the point of it.
_STOPWORD_TEXT = (
    "a an and are as at be by do does for from how i in is it its me my of on or our should that the "
    "this to we what when where which who why will with you your can could would please there their "
    "them they into out up so if then than also just explain"
)
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Cap on query terms: beyond this, OR-ing more words only adds noise and latency.
MAX_QUERY_TERMS = 16
# FTS5's in-memory posting buffer (bytes; its default is 1 MB): a bulk load flushes far fewer
# segments to disk, so there is less to merge afterwards and fewer pages freed by merging.
FTS_HASH_BYTES = 32 * 1024 * 1024
# Dead documents (replaced chunks whose postings remain) tolerated before ``compact`` is due:
# this share of the live chunks, and at least this many.
COMPACT_DEAD_SHARE = 0.2
COMPACT_DEAD_MIN = 2000

# The chunk table's secondary indexes: a cold build drops them and builds them after its inserts.
CHUNK_INDEXES = (
    "CREATE INDEX IF NOT EXISTS text_chunks_file ON text_chunks(file)",
    "CREATE INDEX IF NOT EXISTS text_chunks_symbol ON text_chunks(symbol_id) WHERE symbol_id IS NOT NULL",
)
_CHUNK_INDEX_DDL = ";\n".join(CHUNK_INDEXES)

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS text_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS text_files (
    path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    language TEXT NOT NULL
);
-- AUTOINCREMENT: a rowid is never reused, so a dead FTS document can never match a new chunk.
CREATE TABLE IF NOT EXISTS text_chunks (
    rowid INTEGER PRIMARY KEY AUTOINCREMENT,
    chunk_id TEXT NOT NULL UNIQUE,
    file TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    language TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    text_hash INTEGER NOT NULL,
    symbol_id TEXT,
    qualified_name TEXT,
    part INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL
);
{_CHUNK_INDEX_DDL};
CREATE VIRTUAL TABLE IF NOT EXISTS text_fts USING fts5(
    name, path, sigdoc, body, parts, content='', tokenize='porter unicode61'
);
CREATE TABLE IF NOT EXISTS vector_state (
    chunk_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL
);
INSERT OR IGNORE INTO text_meta VALUES ('schema_version', '{SCHEMA_VERSION}');
INSERT OR IGNORE INTO text_fts(text_fts, rank) VALUES ('hashsize', {FTS_HASH_BYTES});
"""

_WORD = re.compile(r"\w+", re.UNICODE)
# Per-query rank function (not stored config, so concurrent readers never see it change).
RANK_FUNCTION = f"bm25({W_NAME}, {W_PATH}, {W_SIGDOC}, {W_BODY}, {W_PARTS})"
# text_meta key: FTS documents inserted and not yet compacted away (live plus dead).
META_FTS_DOCS = "fts_docs"


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as stored: where it is and what it is called. Its text is read from the file
    (``engine.index.chunk_source.chunk_text``); ``sigdoc`` is its symbol's signature and doc."""

    rowid: int
    chunk_id: str
    file: str
    start_line: int
    end_line: int
    kind: str
    language: str
    content_hash: str
    text_hash: int
    symbol_id: str | None
    qualified_name: str | None
    name: str
    sigdoc: str = ""


_CHUNK_COLUMNS = (
    "rowid",
    "chunk_id",
    "file",
    "start_line",
    "end_line",
    "kind",
    "language",
    "content_hash",
    "text_hash",
    "symbol_id",
    "qualified_name",
    "name",
)
ROW_COLUMNS = ", ".join(_CHUNK_COLUMNS)
# The same columns read through the alias ``c``, with the symbol's signature and doc when the
# store's symbols table is there (a text index on its own has none).
_ROW_SELECT = ", ".join(f"c.{col}" for col in _CHUNK_COLUMNS)


def connect(path: Path) -> sqlite3.Connection:
    """Open index.db and make sure the text tables exist at this schema version."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        row = None
        try:
            row = conn.execute("SELECT value FROM text_meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:
            row = None
        if row is not None and row[0] != SCHEMA_VERSION:
            drop_text_tables(conn)
        if row is None or row[0] != SCHEMA_VERSION:
            conn.executescript(SCHEMA)
            conn.commit()
    except sqlite3.DatabaseError as exc:
        raise IndexError_(f"cannot open the text index in {path}: {exc}") from exc
    return conn


def drop_text_tables(conn: sqlite3.Connection) -> None:
    conn.executescript(
        """
        DROP TRIGGER IF EXISTS text_chunks_ai;
        DROP TRIGGER IF EXISTS text_chunks_ad;
        DROP TABLE IF EXISTS text_fts;
        DROP TABLE IF EXISTS text_chunks;
        DROP TABLE IF EXISTS text_files;
        DROP TABLE IF EXISTS vector_state;
        DROP TABLE IF EXISTS text_meta;
        """
    )


def reset_tables(conn: sqlite3.Connection) -> None:
    """Drop and recreate every text table (a cold build refills them; commits)."""
    drop_text_tables(conn)
    conn.executescript(SCHEMA)
    conn.commit()


def drop_chunk_indexes(conn: sqlite3.Connection) -> None:
    """Drop ``CHUNK_INDEXES`` (before a bulk load: building them after it costs a sixth as much)."""
    for ddl in CHUNK_INDEXES:
        conn.execute(f"DROP INDEX IF EXISTS {ddl.split()[5]}")


def create_chunk_indexes(conn: sqlite3.Connection) -> None:
    for ddl in CHUNK_INDEXES:
        conn.execute(ddl)


def clear_chunks(conn: sqlite3.Connection) -> None:
    """Empty the chunk rows, the FTS table and the file records, keeping ``vector_state`` and the
    meta keys (chunk ids are stable, so the vectors of unchanged chunks stay valid)."""
    conn.execute("INSERT INTO text_fts(text_fts) VALUES ('delete-all')")
    conn.execute("DELETE FROM text_chunks")
    conn.execute("DELETE FROM text_files")
    conn.execute("INSERT OR REPLACE INTO text_meta VALUES (?, '0')", (META_FTS_DOCS,))


def _row(values: Sequence[object]) -> ChunkRow:
    return ChunkRow(*values)  # type: ignore[arg-type]


def index_columns(chunk: Chunk) -> tuple[str, str, str, str, str]:
    """The five FTS columns of a chunk: name, path, signature+doc, body, identifier parts."""
    names = [chunk.name]
    if chunk.qualified_name and chunk.qualified_name != chunk.name:
        names.append(chunk.qualified_name.replace(".", " "))
    names.extend(split_identifier(chunk.name))
    path_text = chunk.file.replace("/", " ").replace(".", " ")
    return " ".join(names), path_text, chunk.signature_doc, chunk.text, chunk.parts


_FTS_COLUMNS = "name, path, sigdoc, body, parts"

# A chunk ready to store: its row (without rowid) and its five FTS columns.
ChunkRecord = tuple[tuple[object, ...], tuple[str, str, str, str, str]]


def chunk_record(c: Chunk) -> ChunkRecord:
    """What ``insert_records`` stores for one chunk (plain tuples: cheap to send between processes)."""
    row = (
        c.id,
        c.file,
        c.start_line,
        c.end_line,
        c.kind,
        c.language,
        c.content_hash,
        text_hash(c.text),
        c.symbol_id,
        c.qualified_name,
        c.part,
        c.name,
    )
    return row, index_columns(c)


def insert_chunks(conn: sqlite3.Connection, chunks: Iterable[Chunk]) -> int:
    """Add chunk rows and index them in FTS."""
    return insert_records(conn, [chunk_record(c) for c in chunks])


def insert_records(conn: sqlite3.Connection, records: Sequence[ChunkRecord]) -> int:
    """Add chunk rows and their FTS documents under the same, new rowids."""
    if not records:
        return 0
    # Past every rowid the table ever had (AUTOINCREMENT's own rule), so no dead document is reused.
    base = int(
        conn.execute(
            "SELECT max(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'text_chunks'), 0), "
            "COALESCE((SELECT max(rowid) FROM text_chunks), 0))"
        ).fetchone()[0]
    )
    conn.executemany(
        "INSERT INTO text_chunks(rowid, chunk_id, file, start_line, end_line, kind, language, "
        "content_hash, text_hash, symbol_id, qualified_name, part, name) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        [(base + i, *row) for i, (row, _cols) in enumerate(records, 1)],
    )
    conn.executemany(
        f"INSERT INTO text_fts(rowid, {_FTS_COLUMNS}) VALUES (?,?,?,?,?,?)",
        [(base + i, *cols) for i, (_row_values, cols) in enumerate(records, 1)],
    )
    conn.execute(
        "INSERT INTO text_meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + ?",
        (META_FTS_DOCS, str(len(records)), len(records)),
    )
    return len(records)


def delete_chunks(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> int:
    """Remove chunk rows. Their FTS documents stay as dead ones (see the module docstring)."""
    total = 0
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        total += conn.execute(f"DELETE FROM text_chunks WHERE chunk_id IN ({marks})", part).rowcount
    return total


def move_chunks(conn: sqlite3.Connection, moves: Sequence[tuple[int, int, str]]) -> None:
    """New line ranges ``(start, end, chunk_id)`` for chunks whose text did not change."""
    conn.executemany("UPDATE text_chunks SET start_line = ?, end_line = ? WHERE chunk_id = ?", moves)


def chunks_of_file(conn: sqlite3.Connection, file: str) -> dict[str, str]:
    """``chunk_id -> content_hash`` of the chunks stored for ``file``."""
    return dict(
        conn.execute("SELECT chunk_id, content_hash FROM text_chunks WHERE file=?", (file,)).fetchall()
    )


def spans_of_file(conn: sqlite3.Connection, file: str) -> dict[str, tuple[str, int, int]]:
    """``chunk_id -> (content_hash, start_line, end_line)`` of the chunks stored for ``file``."""
    return {
        cid: (h, lo, hi)
        for cid, h, lo, hi in conn.execute(
            "SELECT chunk_id, content_hash, start_line, end_line FROM text_chunks WHERE file=?", (file,)
        )
    }


def merge_segments(conn: sqlite3.Connection) -> None:
    """Merge FTS segments into one b-tree, in the caller's transaction (after a bulk load:
    ansible's queries take 30 ms instead of 38 ms at the median)."""
    conn.execute("INSERT INTO text_fts(text_fts) VALUES ('optimize')")


def optimize(conn: sqlite3.Connection) -> None:
    """Merge FTS segments after a bulk load so queries read one b-tree, and commit."""
    merge_segments(conn)
    conn.commit()


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM text_chunks").fetchone()[0])


def dead_documents(conn: sqlite3.Connection) -> int:
    """FTS documents whose chunk row is gone (replaced or deleted since the last compaction)."""
    row = conn.execute("SELECT value FROM text_meta WHERE key = ?", (META_FTS_DOCS,)).fetchone()
    docs = int(row[0]) if row else 0
    return max(0, docs - chunk_count(conn))


def compaction_due(conn: sqlite3.Connection) -> bool:
    dead = dead_documents(conn)
    return dead >= COMPACT_DEAD_MIN and dead > COMPACT_DEAD_SHARE * chunk_count(conn)


# A chunk's symbol signature and doc (one text), joined from the store's symbols table.
_SIGDOC = "COALESCE(s.signature || CASE WHEN s.doc != '' THEN char(10) || s.doc ELSE '' END, '')"
_SYMBOL_JOIN = "LEFT JOIN symbols s ON s.id = c.symbol_id AND s.file = c.file"


def _has_symbols(conn: sqlite3.Connection) -> bool:
    """Whether the store's symbols table is in this database (a text index alone has none)."""
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'symbols'").fetchone()
    return row is not None


def _with_sigdoc(
    conn: sqlite3.Connection, sql_where: str, params: Sequence[object], order: str = ""
) -> list[ChunkRow]:
    """Chunk rows matching ``sql_where`` (on alias ``c``), each with its symbol's signature and doc."""
    if _has_symbols(conn):
        sql = f"SELECT {_ROW_SELECT}, {_SIGDOC} FROM text_chunks c {_SYMBOL_JOIN} WHERE {sql_where} {order}"
    else:
        sql = f"SELECT {_ROW_SELECT}, '' FROM text_chunks c WHERE {sql_where} {order}"
    return [_row(values) for values in conn.execute(sql, list(params)).fetchall()]


def rows_by_chunk_ids(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
    out: dict[str, ChunkRow] = {}
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        for row in _with_sigdoc(conn, f"c.chunk_id IN ({','.join('?' * len(part))})", part):
            out[row.chunk_id] = row
    return out


def definitions_starting_at(
    conn: sqlite3.Connection, spots: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], ChunkRow]:
    """The first chunk of the definition that starts at each ``(file, line)``, where one does."""
    out: dict[tuple[str, int], ChunkRow] = {}
    for file, line in dict.fromkeys(spots):
        found = _with_sigdoc(
            conn,
            "c.file = ? AND c.start_line = ? AND c.kind IN ('symbol', 'header')",
            (file, line),
            "ORDER BY c.kind = 'symbol', c.end_line DESC, c.part LIMIT 1",
        )
        if found:
            out[(file, line)] = found[0]
    return out


def rows_by_symbol_ids(conn: sqlite3.Connection, symbol_ids: Sequence[str]) -> dict[str, ChunkRow]:
    """The first chunk (part 0, or header) of each symbol id."""
    out: dict[str, ChunkRow] = {}
    for i in range(0, len(symbol_ids), 500):
        part = list(symbol_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        for row in _with_sigdoc(conn, f"c.symbol_id IN ({marks})", part, "ORDER BY c.part"):
            out.setdefault(row.symbol_id or "", row)
    return out


# --- queries ---------------------------------------------------------------------------


def query_terms(text: str) -> list[str]:
    """Words of a user query, split at identifier boundaries too, stopwords dropped, deduplicated.

    ``getUserById`` yields its whole form and ``get user by id``; a query made only of
    stopwords keeps them, so that searching for "the" still searches.
    """
    words: list[str] = []
    for match in _WORD.finditer(text):
        token = match.group(0)
        words.append(token.lower())
        # The identifier splitter knows ASCII letters only: it cut "héllo" into "h" and "llo",
        # fragments that matched one-letter names everywhere. Other words split at "_" alone.
        parts = split_identifier(token) if token.isascii() else [p.lower() for p in token.split("_") if p]
        if len(parts) > 1:
            words.extend(parts)
    unique = list(dict.fromkeys(w for w in words if w.strip("_")))
    kept = [w for w in unique if w not in STOPWORDS]
    return (kept or unique)[:MAX_QUERY_TERMS]


def quote_term(term: str) -> str:
    """An FTS5 string literal: the tokenizer sees the text, the parser sees no operator."""
    return '"' + term.replace('"', '""') + '"'


class TermStats:
    """Document frequencies of query terms, cached per connection generation."""

    def __init__(self) -> None:
        self._df: dict[str, int] = {}
        self._total: int | None = None
        self._dead: int | None = None
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self._df.clear()
            self._total = None
            self._dead = None

    def dead(self, conn: sqlite3.Connection) -> int:
        """Dead FTS documents (see ``dead_documents``), counted once per generation."""
        with self._lock:
            if self._dead is None:
                self._dead = dead_documents(conn)
            return self._dead

    def total(self, conn: sqlite3.Connection) -> int:
        with self._lock:
            if self._total is None:
                self._total = chunk_count(conn)
            return self._total

    def df(self, conn: sqlite3.Connection, term: str, column: str | None = None) -> int:
        """Chunks holding ``term`` (in ``column`` only, when given: ``name``, ``body``...)."""
        key = f"{column}:{term}" if column else term
        with self._lock:
            if key in self._df:
                return self._df[key]
        expr = f"{column} : {quote_term(term)}" if column else quote_term(term)
        count = int(
            conn.execute("SELECT COUNT(*) FROM text_fts WHERE text_fts MATCH ?", (expr,)).fetchone()[0]
        )
        with self._lock:
            self._df[key] = count
        return count


def informative_terms(conn: sqlite3.Connection, terms: list[str], stats: TermStats) -> list[str]:
    """Drop terms found in most chunks; if all are common, keep the rarest one so the query still runs.

    Terms found nowhere match nothing and are dropped too, unless nothing matches at all: in a small
    index (3 chunks: one is a third) they used to be all that was kept of "greet xyzzy", and the
    search found nothing although "greet" was there.
    """
    total = stats.total(conn)
    if total == 0 or len(terms) <= 1:
        return terms
    scored = [(df, t) for t in terms if (df := stats.df(conn, t)) > 0]
    if not scored:
        return terms
    kept = [t for df, t in scored if df <= COMMON_TERM_FRACTION * total]
    if kept:
        return kept
    return [min(scored)[1]]


def match_expression(terms: Sequence[str]) -> str:
    return " OR ".join(quote_term(t) for t in terms)


def search(
    conn: sqlite3.Connection,
    query: str,
    *,
    limit: int = 50,
    stats: TermStats | None = None,
) -> list[tuple[ChunkRow, float]]:
    """Weighted BM25 over chunks. Returns ``(row, bm25)`` best first (lower bm25 is better).

    The MATCH runs in a subquery so FTS5 picks and ranks the rowids before any join. Dead
    documents (no chunk row any more) drop out of the join; while there are any, the subquery
    asks for more than ``limit`` and again for more if too few rows were alive.
    """
    terms = query_terms(query)
    if not terms:
        return []
    stats = stats or TermStats()
    terms = informative_terms(conn, terms, stats)
    expr = match_expression(terms)
    sql = (
        f"SELECT {_ROW_SELECT}, {_SIGDOC}, f.rank FROM "
        "(SELECT rowid, rank FROM text_fts WHERE text_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) AS f "
        f"JOIN text_chunks AS c ON c.rowid = f.rowid {_SYMBOL_JOIN} ORDER BY f.rank"
    )
    if not _has_symbols(conn):
        sql = sql.replace(_SIGDOC, "''").replace(_SYMBOL_JOIN, "")
    dead = stats.dead(conn)
    fetch = limit + min(dead, limit)
    while True:
        try:
            rows = conn.execute(sql, (expr, RANK_FUNCTION, fetch)).fetchall()
        except sqlite3.OperationalError as exc:
            raise IndexError_(f"full-text query failed: {exc}") from exc
        if len(rows) >= limit or fetch >= limit + dead:
            break
        fetch = min(limit + dead, fetch * 4)
    return [(_row(values[:-1]), float(values[-1])) for values in rows[:limit]]
