"""The full-text index: chunk rows and an external-content FTS5 table in index.db.

Owns the ``text_*`` tables (its own schema version in ``text_meta``), safe query
building (user text never reaches FTS5 syntax raw) and weighted BM25 ranking.
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
from engine.index.chunking import Chunk, split_identifier

SCHEMA_VERSION = "2"

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

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS text_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS text_files (
    path TEXT PRIMARY KEY, sha256 TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    language TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS text_chunks (
    rowid INTEGER PRIMARY KEY,
    chunk_id TEXT NOT NULL UNIQUE,
    file TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    kind TEXT NOT NULL,
    language TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    symbol_id TEXT,
    qualified_name TEXT,
    part INTEGER NOT NULL DEFAULT 0,
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    sigdoc TEXT NOT NULL,
    body TEXT NOT NULL,
    parts TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS text_chunks_file ON text_chunks(file);
CREATE INDEX IF NOT EXISTS text_chunks_symbol ON text_chunks(symbol_id);
CREATE VIRTUAL TABLE IF NOT EXISTS text_fts USING fts5(
    name, path, sigdoc, body, parts,
    content='text_chunks', content_rowid='rowid', tokenize='porter unicode61'
);
CREATE TABLE IF NOT EXISTS vector_state (
    chunk_id TEXT PRIMARY KEY, content_hash TEXT NOT NULL
);
INSERT OR IGNORE INTO text_meta VALUES ('schema_version', '{SCHEMA_VERSION}');
"""

_WORD = re.compile(r"\w+", re.UNICODE)
# Per-query rank function (not stored config, so concurrent readers never see it change).
RANK_FUNCTION = f"bm25({W_NAME}, {W_PATH}, {W_SIGDOC}, {W_BODY}, {W_PARTS})"


@dataclass(frozen=True)
class ChunkRow:
    """A chunk as stored: everything a search hit needs, without the index columns."""

    rowid: int
    chunk_id: str
    file: str
    start_line: int
    end_line: int
    kind: str
    language: str
    content_hash: str
    symbol_id: str | None
    qualified_name: str | None
    name: str
    sigdoc: str
    body: str


ROW_COLUMNS = (
    "rowid, chunk_id, file, start_line, end_line, kind, language, content_hash, symbol_id, "
    "qualified_name, name, sigdoc, body"
)


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


def insert_chunks(conn: sqlite3.Connection, chunks: Iterable[Chunk]) -> int:
    """Add chunk rows, then index them in FTS with one set-based statement (fast for bulk loads)."""
    rows = []
    for c in chunks:
        name, path_text, sigdoc, body, parts = index_columns(c)
        rows.append(
            (
                c.id,
                c.file,
                c.start_line,
                c.end_line,
                c.kind,
                c.language,
                c.content_hash,
                c.symbol_id,
                c.qualified_name,
                c.part,
                name,
                path_text,
                sigdoc,
                body,
                parts,
            )
        )
    if not rows:
        return 0
    high = conn.execute("SELECT COALESCE(MAX(rowid), 0) FROM text_chunks").fetchone()[0]
    conn.executemany(
        "INSERT INTO text_chunks(chunk_id, file, start_line, end_line, kind, language, "
        "content_hash, symbol_id, qualified_name, part, name, path, sigdoc, body, parts) "
        "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
        rows,
    )
    conn.execute(
        f"INSERT INTO text_fts(rowid, {_FTS_COLUMNS}) SELECT rowid, {_FTS_COLUMNS} FROM text_chunks WHERE rowid > ?",
        (high,),
    )
    return len(rows)


def delete_chunks(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> int:
    """Remove chunks from FTS (with their old values, as external content requires) and from the table."""
    total = 0
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        conn.execute(
            f"INSERT INTO text_fts(text_fts, rowid, {_FTS_COLUMNS}) "
            f"SELECT 'delete', rowid, {_FTS_COLUMNS} FROM text_chunks WHERE chunk_id IN ({marks})",
            part,
        )
        total += conn.execute(f"DELETE FROM text_chunks WHERE chunk_id IN ({marks})", part).rowcount
    return total


def chunks_of_file(conn: sqlite3.Connection, file: str) -> dict[str, str]:
    """``chunk_id -> content_hash`` of the chunks stored for ``file``."""
    return dict(
        conn.execute("SELECT chunk_id, content_hash FROM text_chunks WHERE file=?", (file,)).fetchall()
    )


def optimize(conn: sqlite3.Connection) -> None:
    """Merge FTS segments after a bulk load so queries read one b-tree."""
    conn.execute("INSERT INTO text_fts(text_fts) VALUES ('optimize')")
    conn.commit()


def chunk_count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COUNT(*) FROM text_chunks").fetchone()[0])


def rows_by_chunk_ids(conn: sqlite3.Connection, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
    out: dict[str, ChunkRow] = {}
    for i in range(0, len(chunk_ids), 500):
        part = list(chunk_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        for values in conn.execute(
            f"SELECT {ROW_COLUMNS} FROM text_chunks WHERE chunk_id IN ({marks})", part
        ):
            row = _row(values)
            out[row.chunk_id] = row
    return out


def rows_by_symbol_ids(conn: sqlite3.Connection, symbol_ids: Sequence[str]) -> dict[str, ChunkRow]:
    """The first chunk (part 0, or header) of each symbol id."""
    out: dict[str, ChunkRow] = {}
    for i in range(0, len(symbol_ids), 500):
        part = list(symbol_ids[i : i + 500])
        marks = ",".join("?" * len(part))
        sql = f"SELECT {ROW_COLUMNS} FROM text_chunks WHERE symbol_id IN ({marks}) ORDER BY part"
        for values in conn.execute(sql, part):
            row = _row(values)
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
        parts = split_identifier(token)
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
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self._df.clear()
            self._total = None

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
    """Drop terms found in most chunks; if all are common, keep the rarest one so the query still runs."""
    total = stats.total(conn)
    if total == 0 or len(terms) <= 1:
        return terms
    scored = [(stats.df(conn, t), t) for t in terms]
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

    The MATCH runs in a subquery so FTS5 picks and ranks the rowids before any join.
    """
    terms = query_terms(query)
    if not terms:
        return []
    terms = informative_terms(conn, terms, stats or TermStats())
    expr = match_expression(terms)
    sql = (
        f"SELECT {', '.join('c.' + c.strip() for c in ROW_COLUMNS.split(','))}, f.rank FROM "
        "(SELECT rowid, rank FROM text_fts WHERE text_fts MATCH ? AND rank MATCH ? ORDER BY rank LIMIT ?) AS f "
        "JOIN text_chunks AS c ON c.rowid = f.rowid ORDER BY f.rank"
    )
    try:
        rows = conn.execute(sql, (expr, RANK_FUNCTION, limit)).fetchall()
    except sqlite3.OperationalError as exc:
        raise IndexError_(f"full-text query failed: {exc}") from exc
    return [(_row(values[:-1]), float(values[-1])) for values in rows]
