"""Hybrid search: FTS5, vectors and symbols fused by Reciprocal Rank Fusion.

The story, end to end: take the query (plus up to 2 LLM rewrites when expansion is
on), get a ranked list from each source, fuse the lists with RRF, optionally let a
local LLM rerank the top 20 with a position-aware blend, then record an anonymous
metrics event. Any optional part that is unavailable is skipped with one warning.
It never writes the index; it reads index.db, Chroma and cache.db.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import math
import re
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from engine.config import Settings
from engine.errors import EngineWarning, SemforaError, UsageError, WarningSink
from engine.index import fts
from engine.index.chunk_source import chunk_texts
from engine.index.chunking import is_comment_block
from engine.index.fusion import SEARCH_RRF_K, TEST_WEIGHT, rrf
from engine.index.metrics import MetricsRecorder, SearchEvent
from engine.index.rerank import BlendMode, OllamaReranker, RerankCandidate, Reranker, rerank
from engine.index.terms import TaskTerms, lexical_score, task_terms, term_counts, tokens
from engine.policy.paths import is_test_path
from engine.repo.layout import RepoLayout
from engine.semantic.model import Symbol
from engine.store.cache import ResultCache
from engine.store.db import file_identity
from engine.words import plural

log = logging.getLogger("semfora.index.hybrid")

MODES = ("hybrid", "fts", "vector", "symbols")
# Candidates each source contributes before fusion: deep enough that agreement between sources
# counts, shallow enough that two weak opinions (rank 30 + rank 30) do not outvote one strong one.
# Chosen on the benchmark query set (see docs/benchmarks.md): FTS 30 (50 and 20 did worse); vectors
# 40, one notch deeper, because with complete vectors the embedding list is the better source
# (recall@10 0.87 against FTS's 0.79) and its ranks 30-40 still hold answers FTS also ranks.
FTS_CANDIDATES = 30
VECTOR_CANDIDATES = 40
# Rows read from each ranked source before they are split into implementation and tests.
# Tests outnumber implementation in most repositories and repeat a feature's words, so in one
# list they crowd the implementation out of the first 30 (on Django 20 of FTS's top 30 are tests);
# each class is ranked on its own, from a pool deep enough to hold 40 of the rarer class. Prose
# stays in the implementation's list (its weight already discounts it): a separate prose list
# added an overlap of weak doc windows that cost MRR (0.578 against 0.605 on the query set).
SOURCE_POOL = 150
SYMBOL_CANDIDATES = 20
# Symbols matched per single query word (for plain-language queries that mention an identifier).
SYMBOLS_PER_WORD = 3
# A plain word that is exactly the name of at most this many symbols points at them ("slugify");
# a name shared more widely ("user", "check") says nothing.
RARE_NAME_MAX = 3
RARE_NAME_MIN_CHARS = 4
# Rewrites are guesses: their lists count half as much as the user's own words.
EXPANSION_WEIGHT = 0.5
# Per-source weights in the fusion. Equal: each source is one independent opinion.
SOURCE_WEIGHTS = {"fts": 1.0, "vector": 1.0, "symbols": 1.0}
# Prose/config chunks (docs, READMEs) count less: a code search should surface code first,
# but docs still show when nothing in the code matches.
PROSE_WEIGHT = 0.6
# Content words of a query combined into candidate names (two at a time, both orders): 8 words
# make at most 56 pairs, one indexed lookup, well under a millisecond.
COMPOSED_MAX_WORDS = 8
# A name composed from two query words that more symbols than this share (get_object: 12 in
# Django, one per view class) points nowhere in particular; check_password (4) or add_field (8) do.
COMPOSED_NAME_MAX = 8
_PLAIN_WORD = re.compile(r"[A-Za-z]+")
# Bound parameters per statement: below SQLite's old default limit of 999, whatever the build.
SQL_PARAMS_PER_QUERY = 900
# Endings a request inflects and an identifier usually does not (passwords, hashed, adding):
# each maps to the bare forms it may have come from.
_SUFFIX_FORMS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ies", ("y",)),
    ("es", ("", "e")),
    ("s", ("",)),
    ("ed", ("", "e")),
    ("ing", ("", "e")),
)
# A query with more content words than this is a description (an issue report, a paragraph of
# prose), not a search: its full-text terms are chosen by rarity in the index instead of by
# position, and a single plain word of it that happens to name a symbol (POST -> ``post``) is
# no longer taken as pointing at that symbol.
LONG_QUERY_TERMS = 12
# Rescoring (hybrid mode): the fused list's first RESCORE_DEPTH candidates are scored again
# on their whole text against the whole query (``terms.lexical_score``: BM25 of the query's
# IDF-weighted terms plus the terms in the candidate's name), and the two opinions are added,
# each scaled to [0, 1]. Fusion knows which lists agree; the rescoring knows which candidate
# says most of what the query says, which a rank in a 30-deep list cannot tell.
RESCORE_DEPTH = 50
W_FUSED = 0.7
# The fused list's opinion in the rescoring is its order: rank r counts
# (1 + RESCORE_RANK_K) / (r + RESCORE_RANK_K), 1 for the first (RRF scores with SEARCH_RRF_K = 60 are
# nearly flat across the head, so they would say little).
RESCORE_RANK_K = 10
# Code outside any definition (imports, a file's header, the docblocks between methods) matches
# a task's words through comments and import lists, but behaviour lives in definitions: in the
# rescoring it counts this much, as prose counts PROSE_WEIGHT (tests: see TEST_WEIGHT, applied once).
MODULE_WEIGHT = 0.5
W_LEXICAL = 1.0
# The files the rescored head implicates most lend their other definitions a place in the
# rescoring (the function to change is often next to the ones that matched best, but ranked
# below them by every list), and every candidate the evidence of its file: the weighted best
# three scores of its file (LOCALITY_WEIGHTS), scaled to [0, 1], times W_LOCALITY.
NEIGHBOURHOOD_FILES = 3
NEIGHBOURHOOD_PER_FILE = 150
W_LOCALITY = 0.3
LOCALITY_WEIGHTS = (1.0, 0.5, 0.25)
# Chunk token lists kept for rescoring, by content hash (process-wide): repeated searches
# over the same code do not tokenize it again.
MAX_CACHED_CHUNK_TERMS = 20_000
# A query that is one identifier (``client``, ``Client.send``, ``get_user``) asks for the definitions
# of that name: they go first, whatever the text scores say (``_exact_names_first``).
# How far above the next hit a promoted definition scores, when its own score was lower.
EXACT_NAME_MARGIN = 0.001
EXACT_NAME_QUERY = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*")
# Snippet shown per hit, in lines.
SNIPPET_LINES = 3
# A class hit's snippet ends with one line naming its members, cut at about this many characters
# ("members: __init__(), send(), get(), ... (+38)"): what the class offers, in one line.
MEMBERS_LINE_CHARS = 100
# Files an INDEX_STALE warning names before "and N more": enough to act on, one line.
STALE_FILES_NAMED = 3
MAX_LIMIT = 200

# A word that is an identifier rather than English: snake_case, camelCase, dotted.path, or with digits.
_IDENTIFIER_LIKE = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|[A-Za-z]\.[A-Za-z]|[A-Za-z][0-9]")
_warned: set[str] = set()
_warned_lock = threading.Lock()


@dataclass(frozen=True)
class SearchHit:
    file: str
    symbol: str | None
    symbol_id: str | None
    start_line: int
    end_line: int
    score: float
    sources: dict[str, int | None]
    snippet: str
    chunk_id: str | None
    kind: str = "symbol"
    content_hash: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "symbol": self.symbol,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "score": round(self.score, 6),
            "sources": dict(self.sources),
            "snippet": self.snippet,
            "kind": self.kind,
        }


@dataclass
class _Candidate:
    key: str
    row: fts.ChunkRow | None
    symbol: Symbol | None
    score: float = 0.0
    ranks: dict[str, int | None] = field(
        default_factory=lambda: {"fts": None, "vector": None, "symbols": None}
    )
    fused: float = 0.0  # the fusion's score, kept while rescoring replaces ``score``


# Set (by ``every_warning``) while a caller wants each warning every time: a long-lived server
# answers many clients' calls in one process, and each reply must say what it lacks.
_EVERY_TIME: contextvars.ContextVar[bool] = contextvars.ContextVar("semfora_every_warning", default=False)


@contextmanager
def every_warning() -> Iterator[None]:
    """Within this block, ``warn_once`` tells its sink every time, not once per process."""
    token = _EVERY_TIME.set(True)
    try:
        yield
    finally:
        _EVERY_TIME.reset(token)


def warn_once(warning: EngineWarning, sink: WarningSink | None) -> None:
    """Tell the user once per process (per code) that an optional part is off; log later repeats
    (inside ``every_warning``, tell the sink each time)."""
    with _warned_lock:
        first = warning.code not in _warned
        _warned.add(warning.code)
    if first or (_EVERY_TIME.get() and sink is not None):
        if sink is not None:
            sink(warning)
        else:
            log.warning(warning.message)
    else:
        log.info(warning.message)


def reset_warnings() -> None:
    with _warned_lock:
        _warned.clear()


class _Searcher:
    """Warm per-process state for one repository: connection, term statistics, cache, metrics."""

    _instances: dict[str, _Searcher] = {}
    _instances_lock = threading.Lock()

    def __init__(self, layout: RepoLayout, settings: Settings) -> None:
        self.layout = layout
        self.conn = fts.connect(layout.index_db)
        self.identity = file_identity(layout.index_db)  # the file self.conn reads
        self.lock = threading.Lock()
        self.stats = fts.TermStats()
        self.generation: str | None = None
        self.cache = ResultCache(
            layout.cache_db, ttl_days=settings.cache.ttl_days, max_mb=settings.cache.max_mb
        )
        self.metrics = MetricsRecorder(layout.metrics_db, settings.metrics.level)
        self.chunk_terms: OrderedDict[str, tuple[str, ...]] = OrderedDict()

    @classmethod
    def get(cls, layout: RepoLayout, settings: Settings) -> _Searcher:
        key = str(layout.index_db)
        with cls._instances_lock:
            found = cls._instances.get(key)
            now = file_identity(layout.index_db)
            # index.db replaced (a rebuild, a cleared cache): the warm connection still reads the
            # deleted file, so a server or the app found nothing indexed since, until restarted.
            replaced = found is not None and now is not None and now != found.identity
            # (The old one is not closed here: a search in another thread may still be using it.)
            if found is None or replaced or found.metrics.level != settings.metrics.level:
                found = cls(layout, settings)
                cls._instances[key] = found
            return found

    def refresh_stats(self) -> None:
        row = self.conn.execute("SELECT value FROM text_meta WHERE key='generation'").fetchone()
        generation = row[0] if row else None
        if generation != self.generation:
            self.stats.reset()
            self.generation = generation


def _table_exists(conn: sqlite3.Connection, name: str) -> bool:
    return (
        conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,)).fetchone()
        is not None
    )


def _symbol_list(conn: sqlite3.Connection, query: str, *, long: bool = False) -> list[Symbol]:
    """Symbols named by the query as a whole, by its identifier-looking words, then by pairs of its words.

    In a ``long`` query (a description), plain words are not looked up as names on their own.
    """
    if not _table_exists(conn, "symbols"):
        return []
    from engine.store.symbol_search import rank_symbols

    found: dict[str, Symbol] = {}
    words = query.split()
    if len(words) <= 3:
        for sym in rank_symbols(conn, query, limit=SYMBOL_CANDIDATES):
            found.setdefault(sym.id, sym)
    if len(words) > 1:
        for word in words:
            word = word.strip(".,;:!?()[]{}'\"`")
            # Plain English words ("user", "check") name hundreds of symbols; only words that
            # look like identifiers (snake_case, camelCase, dotted) are worth a name lookup.
            lower = word.lower()
            if not _IDENTIFIER_LIKE.search(word):
                if not long and len(word) >= RARE_NAME_MIN_CHARS and lower not in fts.STOPWORDS:
                    for sym in _rare_exact_name(conn, lower):
                        found.setdefault(sym.id, sym)
                continue
            for sym in rank_symbols(conn, word, limit=SYMBOLS_PER_WORD):
                if sym.name.lower() == lower or sym.qualified_name.lower().endswith(lower):
                    found.setdefault(sym.id, sym)
        for sym in _composed_name_symbols(conn, query):
            found.setdefault(sym.id, sym)
    return list(found.values())[:SYMBOL_CANDIDATES]


def _word_forms(word: str) -> set[str]:
    """A query word and its bare forms, as identifiers spell them: passwords -> password, hashed -> hash."""
    forms = {word}
    for suffix, replacements in _SUFFIX_FORMS:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            stem = word[: -len(suffix)]
            forms.update(stem + r for r in replacements)
    return forms


def _composed_name_symbols(conn: sqlite3.Connection, query: str) -> list[Symbol]:
    """Symbols whose name is two of the query's words joined (checked ... passwords -> check_password).

    Names are made of the words a request uses; snake_case and run-together names (``check_password``,
    ``emailmessage``) formed from any two content words, in either order and in their bare forms, are
    looked up exactly. Names shared by many symbols (``get_object``) say little and are skipped.
    """
    from engine.store.rows import SYMBOL_COLUMNS, row_to_symbol

    words = [w.lower() for w in _PLAIN_WORD.findall(query)]
    words = list(dict.fromkeys(w for w in words if w not in fts.STOPWORDS and len(w) >= 2))[
        :COMPOSED_MAX_WORDS
    ]
    if len(words) < 2:
        return []
    forms = [_word_forms(w) for w in words]
    names: dict[str, int] = {}  # composed name -> distance between its words in the query
    for i, j in itertools.permutations(range(len(words)), 2):
        for a in forms[i]:
            for b in forms[j]:
                for name in (f"{a}_{b}", a + b):
                    names[name] = min(names.get(name, 99), abs(i - j))
    wanted = list(names)
    by_name: dict[str, list[Symbol]] = {}
    for i in range(0, len(wanted), SQL_PARAMS_PER_QUERY):
        part = wanted[i : i + SQL_PARAMS_PER_QUERY]
        sql = f"SELECT {SYMBOL_COLUMNS}, name_lower FROM symbols WHERE name_lower IN ({','.join('?' * len(part))})"
        for r in conn.execute(sql, part):
            # Keyed by the column matched: `res.sendfile` is found under `sendfile`, its bare name.
            by_name.setdefault(r[-1], []).append(row_to_symbol(r[:-1]))
    ordered = sorted(
        (n for n, syms in by_name.items() if len(syms) <= COMPOSED_NAME_MAX),
        key=lambda n: (len(by_name[n]), names[n], n),
    )
    return [sym for n in ordered for sym in sorted(by_name[n], key=lambda s: (is_test_path(s.file), s.file))]


def _rare_exact_name(conn: sqlite3.Connection, name_lower: str) -> list[Symbol]:
    """Symbols named exactly ``name_lower`` when that name is rare (flash, slugify), else none."""
    from engine.store.rows import SYMBOL_COLUMNS, row_to_symbol

    rows = conn.execute(
        f"SELECT {SYMBOL_COLUMNS} FROM symbols WHERE name_lower = ? LIMIT ?", (name_lower, RARE_NAME_MAX + 1)
    ).fetchall()
    if len(rows) > RARE_NAME_MAX:
        return []
    return [row_to_symbol(r) for r in rows]


def _snippet(row: fts.ChunkRow | None, text: str | None, symbol: Symbol | None, terms: list[str]) -> str:
    """A few lines of the chunk around the first query term (its text is read from the file)."""
    if row is None or text is None:
        if row is not None and symbol is None:
            return row.sigdoc.split("\n", 1)[0] or row.qualified_name or row.name
        return (symbol.signature if symbol else "") or (symbol.qualified_name if symbol else "")
    lines = text.splitlines()
    start = 0
    lowered = [t.lower() for t in terms if len(t) > 2]
    for i, line in enumerate(lines):
        if line.strip() and any(t in line.lower() for t in lowered):
            start = i
            break
    else:
        start = next((i for i, line in enumerate(lines) if line.strip()), 0)
    picked = [line.rstrip() for line in lines[start : start + SNIPPET_LINES]]
    return "\n".join(picked)


def _quote_or_blank(line: str) -> bool:
    """A line that is blank or only opens or closes a docstring or comment (\"\"\", /**, */)."""
    return not line.strip().strip("\"'`/*#").strip()


def _class_snippet(name: str, text: str, members: Sequence[tuple[str, str]], terms: list[str]) -> str:
    """A class hit as a reader expects it: the class line, the doc line that matched (or the
    first), and the names of its members; not the header's lines from the first term on, which
    started mid-docstring and never showed the class line. The words of the class's own name
    choose no doc line (the class line shows them)."""
    lines = [line.rstrip() for line in text.splitlines()]
    head = next((i for i, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("@")), 0)
    picked = [lines[head]] if lines else []
    rest = [line for line in lines[head + 1 :] if not _quote_or_blank(line)]
    lowered = [t.lower() for t in terms if len(t) > 2 and t.lower() not in name.lower()]
    doc = next((line for line in rest if any(t in line.lower() for t in lowered)), rest[0] if rest else None)
    if doc is not None:
        picked.append(doc)
    if members:
        indent = lines[head][: len(lines[head]) - len(lines[head].lstrip())] + "    " if lines else ""
        names = list(
            dict.fromkeys(f"{name}()" if kind in ("method", "function") else name for name, kind in members)
        )
        # The constructor and the public API first; private helpers only if room is left.
        names.sort(key=lambda n: n != "__init__()" and n.startswith("_"))
        shown: list[str] = []
        for name in names:
            if shown and len(", ".join([*shown, name])) > MEMBERS_LINE_CHARS:
                break
            shown.append(name)
        more = f", ... (+{len(names) - len(shown)} more)" if len(shown) < len(names) else ""
        picked.append(f"{indent}members: {', '.join(shown)}{more}")
    return "\n".join(picked)


def _class_members(
    conn: sqlite3.Connection, rows: Sequence[fts.ChunkRow]
) -> dict[str, list[tuple[str, str]]]:
    """The members (name, kind), in source order, of each class header row, keyed by chunk id."""
    out: dict[str, list[tuple[str, str]]] = {}
    if not _table_exists(conn, "symbols"):
        return out
    for row in rows:
        if row.kind != "header" or not row.qualified_name:
            continue
        out[row.chunk_id] = conn.execute(
            "SELECT name, kind FROM symbols WHERE file = ? AND parent = ? AND start_line > ? AND "
            "end_line <= (SELECT MAX(end_line) FROM symbols WHERE id = ? AND file = ?) ORDER BY start_line",
            (row.file, row.qualified_name, row.start_line, row.symbol_id, row.file),
        ).fetchall()
    return out


def _to_hit(
    c: _Candidate,
    terms: list[str],
    texts: dict[str, str],
    members: Mapping[str, Sequence[tuple[str, str]]] | None = None,
) -> SearchHit:
    if c.row is not None:
        r = c.row
        text = texts.get(r.chunk_id)
        if r.kind == "header" and text is not None:
            snippet = _class_snippet(r.name, text, (members or {}).get(r.chunk_id, ()), terms)
        else:
            snippet = _snippet(r, text, c.symbol, terms)
        return SearchHit(
            file=r.file,
            symbol=r.qualified_name,
            symbol_id=r.symbol_id,
            start_line=r.start_line,
            end_line=r.end_line,
            score=c.score,
            sources=dict(c.ranks),
            snippet=snippet,
            chunk_id=r.chunk_id,
            kind=r.kind,
            content_hash=r.content_hash,
        )
    s = c.symbol
    assert s is not None
    return SearchHit(
        file=s.file,
        symbol=s.qualified_name,
        symbol_id=s.id,
        start_line=s.start_line,
        end_line=s.end_line,
        score=c.score,
        sources=dict(c.ranks),
        snippet=_snippet(None, None, s, terms),
        chunk_id=None,
        kind="symbol",
        content_hash=s.body_hash,
    )


class _Fusion:
    """Accumulates RRF contributions keyed by symbol (or chunk, for code outside symbols)."""

    def __init__(self) -> None:
        self.cands: dict[str, _Candidate] = {}

    def add(
        self, source: str, rank: int, weight: float, row: fts.ChunkRow | None, symbol: Symbol | None
    ) -> None:
        key = (row.symbol_id or row.chunk_id) if row is not None else (symbol.id if symbol else "")
        cand = self.cands.get(key)
        if cand is None:
            cand = _Candidate(key, row, symbol)
            self.cands[key] = cand
        elif cand.row is None and row is not None:
            cand.row = row
        file = row.file if row is not None else (symbol.file if symbol else "")
        if row is not None and row.kind == "prose":
            weight *= PROSE_WEIGHT
        elif is_test_path(file):
            weight *= TEST_WEIGHT
        cand.score += rrf(rank, SEARCH_RRF_K, weight * SOURCE_WEIGHTS[source])
        best = cand.ranks.get(source)
        if best is None or rank < best:
            cand.ranks[source] = rank

    def add_ranked(self, source: str, rows: list[fts.ChunkRow], weight: float, depth: int) -> None:
        """Add one source's list, ranking tests apart from implementation (code and prose).

        A result's rank is its position among results of its class, so a test that outscores the
        implementation costs the implementation nothing; the class weights in ``add`` then
        decide between classes. At most ``depth`` chunks of each class count.
        """
        seen: dict[str, int] = {}
        keys: set[str] = set()
        for row in rows:
            # The parts of a long symbol split into several chunks are one result: its best
            # part counts, once, and the others take no rank (nor a second helping of score).
            key = row.symbol_id or row.chunk_id
            if key in keys:
                continue
            keys.add(key)
            cls = "test" if is_test_path(row.file) else "code"
            rank = seen.get(cls, 0) + 1
            if rank > depth:
                continue
            seen[cls] = rank
            self.add(source, rank, weight, row, None)

    def ranked(self) -> list[_Candidate]:
        return sorted(self.cands.values(), key=lambda c: (-c.score, c.key))


def _expand(
    settings: Settings, s: _Searcher, query: str, expander: Any, sink: WarningSink | None
) -> tuple[list[str], bool]:
    from engine.index.expansion import OllamaExpander

    exp = expander or OllamaExpander(
        settings.ollama.host, settings.search.llm_model, settings.search.provider_timeout, s.cache
    )
    try:
        return exp.expand(query)
    except SemforaError as exc:
        warn_once(EngineWarning("EXPANSION_OFF", f"query expansion is off: {exc.message}"), sink)
        return [], False


def _content_terms(query: str) -> list[str]:
    """Every full-text term of ``query`` in order, repeats kept (``fts.query_terms`` keeps the first 16)."""
    out: list[str] = []
    for word in re.findall(r"\w+", query):
        out.extend(fts.query_terms(word))
    return [t for t in out if t not in fts.STOPWORDS]


def _focus(s: _Searcher, query: str) -> str:
    """A long query cut to its ``fts.MAX_QUERY_TERMS`` most informative terms, in their order.

    BM25 over the first 16 words of an issue report ranks by its greeting and setup; the rare
    words further on (a status code, an exception name, the feature it is about) carry the
    signal. Terms the index lacks match nothing and are dropped; the rest are ranked by IDF
    times (1 + log of their count in the query). A short query is returned unchanged.
    """
    terms = _content_terms(query)
    unique = list(dict.fromkeys(terms))
    if len(unique) <= fts.MAX_QUERY_TERMS:
        return query
    total = s.stats.total(s.conn)
    counts = {t: terms.count(t) for t in unique}
    scored: dict[str, float] = {}
    for term in unique:
        df = s.stats.df(s.conn, term)
        if df <= 0 or df > fts.COMMON_TERM_FRACTION * total:
            continue
        scored[term] = math.log(1.0 + (total - df + 0.5) / (df + 0.5)) * (1.0 + math.log(counts[term]))
    # The code's own vocabulary first: a word some definition is named with (``redirect``,
    # ``help``) before a word only comments and docs use (``regression``, ``scenario``), which
    # is rare in the index because it is prose, not because it is the point.
    named = {t for t in scored if s.stats.df(s.conn, t, column="name") > 0}
    keep = set(sorted(scored, key=lambda t: (t not in named, -scored[t]))[: fts.MAX_QUERY_TERMS])
    return " ".join(t for t in unique if t in keep) or query


def term_statistics(layout: RepoLayout, settings: Settings, words: list[str]) -> tuple[int, dict[str, int]]:
    """The number of chunks in the text index and, per word, how many contain it (as FTS matches it).

    Counts are cached per index generation in the warm searcher, so the words of a long task cost
    one indexed count each, once per process.
    """
    s = _Searcher.get(layout, settings)
    try:
        with s.lock:
            s.refresh_stats()
            total = s.stats.total(s.conn)
            return total, {w: s.stats.df(s.conn, w) for w in dict.fromkeys(words) if w.strip()}
    except sqlite3.Error as exc:
        log.warning("no term statistics: %s", exc)
        return 0, {}


def name_frequencies(layout: RepoLayout, settings: Settings, words: list[str]) -> dict[str, int]:
    """Per word, how many chunks have it in their definition's name (split into its parts):
    the words the code uses as names, as opposed to those only its comments and docs use."""
    s = _Searcher.get(layout, settings)
    out: dict[str, int] = {}
    try:
        with s.lock:
            s.refresh_stats()
            for w in dict.fromkeys(words):
                if w.strip():
                    out[w] = s.stats.df(s.conn, w, column="name")
    except sqlite3.Error as exc:
        log.warning("no name statistics: %s", exc)
    return out


def phrase_chunks(layout: RepoLayout, settings: Settings, phrase: str, limit: int) -> list[fts.ChunkRow]:
    """Chunks whose signature, docstring or body hold the words of ``phrase`` in order (an FTS5
    phrase query: the message a report quotes, found where the code spells it), at most ``limit``."""
    words = re.findall(r"[A-Za-z0-9']+", phrase)
    if not words:
        return []
    expr = "{sigdoc body} : " + fts.quote_term(" ".join(words))
    sql = (
        f"SELECT {fts.ROW_COLUMNS} FROM text_chunks WHERE rowid IN "
        "(SELECT rowid FROM text_fts WHERE text_fts MATCH ? LIMIT ?)"
    )
    s = _Searcher.get(layout, settings)
    try:
        with s.lock:
            return [fts.ChunkRow(*row) for row in s.conn.execute(sql, (expr, limit)).fetchall()]
    except sqlite3.Error as exc:
        log.warning("phrase lookup failed: %s", exc)
        return []


def validate_request(mode: str, limit: int) -> None:
    """Raise UsageError for a mode or limit search cannot serve."""
    if mode not in MODES:
        raise UsageError(f"unknown search mode {mode!r}; use one of {', '.join(MODES)}")
    if limit < 1 or limit > MAX_LIMIT:
        raise UsageError(f"--limit must be between 1 and {MAX_LIMIT}, not {limit}")


def search(
    layout: RepoLayout,
    settings: Settings,
    query: str,
    mode: str = "hybrid",
    limit: int = 10,
    expand: bool | None = None,
    rerank: bool | None = None,
    *,
    reranker: Reranker | None = None,
    rerank_mode: BlendMode = "blend",
    expander: Any = None,
    on_warning: WarningSink | None = None,
    record_metrics: bool = True,
    rescore: bool = True,
) -> list[SearchHit]:
    """Best ``limit`` hits for ``query``; see the module docstring for the steps.

    ``rescore=False`` returns the fusion's order as it is (for a caller that rescores the
    candidates on their text itself, such as the context pack, and wants the lists' opinion
    as an independent signal).
    """
    validate_request(mode, limit)
    use_expand = settings.search.expansion if expand is None else expand
    use_rerank = settings.search.rerank if rerank is None else rerank
    started = time.perf_counter()
    s = _Searcher.get(layout, settings)
    timings: dict[str, float] = {}
    cache_hits = 0
    error: str | None = None
    hits: list[SearchHit] = []
    rewrites: list[str] = []
    try:
        hits, rewrites, cache_hits = _search(
            s,
            layout,
            settings,
            query,
            mode,
            limit,
            use_expand,
            use_rerank,
            reranker,
            rerank_mode,
            expander,
            on_warning,
            timings,
            rescore,
        )
        return hits
    except SemforaError as exc:
        error = exc.code
        raise
    finally:
        if record_metrics:
            event = SearchEvent(
                query=query,
                mode=mode,
                latency_ms=(time.perf_counter() - started) * 1000,
                result_count=len(hits),
                top_score=hits[0].score if hits else None,
                used_expansion=bool(rewrites),
                used_rerank=use_rerank,
                cache_hits=cache_hits,
                error=error,
                timings=timings,
                expansions=tuple(rewrites),
                results=tuple(f"{h.file}:{h.start_line}" for h in hits),
            )
            try:
                s.metrics.record(event)
            except (sqlite3.Error, OSError) as exc:
                log.warning("metrics not recorded: %s", exc)


def _search(
    s: _Searcher,
    layout: RepoLayout,
    settings: Settings,
    query: str,
    mode: str,
    limit: int,
    use_expand: bool,
    use_rerank: bool,
    reranker: Reranker | None,
    rerank_mode: BlendMode,
    expander: Any,
    sink: WarningSink | None,
    timings: dict[str, float],
    rescore: bool = True,
) -> tuple[list[SearchHit], list[str], int]:
    if not query.strip():
        return [], [], 0
    cache_hits = 0
    rewrites: list[str] = []
    if use_expand and mode in ("hybrid", "fts", "vector"):
        t = time.perf_counter()
        rewrites, hit = _expand(settings, s, query, expander, sink)
        cache_hits += int(hit)
        timings["expand_ms"] = round((time.perf_counter() - t) * 1000, 2)
    queries = [(query, 1.0)] + [(r, EXPANSION_WEIGHT) for r in rewrites]

    from engine.index.vectors import VectorSearcher, not_built, vectors_expected

    vectors = VectorSearcher.for_repo(layout, settings) if mode in ("hybrid", "vector") else None
    if vectors is not None and not vectors.enabled:
        if mode == "vector":
            warn_once(
                EngineWarning(
                    "VECTORS_OFF", f"{vectors.status}; showing full-text and symbol results instead"
                ),
                sink,
            )
            mode = "hybrid"
        elif vectors_expected(layout, settings):
            # The embedder named (or used for this index) is down as this process starts: hybrid
            # results lose their vector side, which the user should hear about once.
            warn_once(
                EngineWarning(
                    "VECTOR_QUERY_FAILED",
                    f"vector search is off for now: {vectors.choice.reason}; "
                    "showing full-text and symbol results",
                ),
                sink,
            )
        vectors = None
    elif vectors is not None:
        # Vectors configured but unusable now (not built, server down, store wiped): answer from
        # full text and symbols, and say so once per process.
        problem = vectors.unavailable()
        if problem:
            unbuilt = not_built(problem)
            if mode == "vector":
                # Asked for vector results, given others: say so, not only why.
                problem += "; showing full-text and symbol results instead"
            if unbuilt:
                warn_once(EngineWarning("VECTORS_NOT_BUILT", problem), sink)
            else:
                warn_once(
                    EngineWarning("VECTOR_QUERY_FAILED", f"vector search is off for now: {problem}"), sink
                )
            if mode == "vector":
                mode = "hybrid"
            vectors = None
        elif vectors.notice:
            warn_once(EngineWarning("VECTORS_PARTIAL", vectors.notice), sink)

    # The vector lookups (embed the query, ask Chroma) run beside FTS and symbols: both sides
    # spend their time outside the GIL (torch/HTTP, SQLite), so the wall time is the longer one.
    vector_lists: list[tuple[float, list[tuple[str, float]]]] = []
    vector_error: list[SemforaError] = []

    def vector_lookup() -> None:
        t0 = time.perf_counter()
        for q, weight in queries:
            try:
                vector_lists.append((weight, vectors.query(q, SOURCE_POOL)))  # type: ignore[union-attr]
            except SemforaError as exc:
                vector_error.append(exc)
                break
        timings["vector_ms"] = round((time.perf_counter() - t0) * 1000, 2)

    worker = None
    if vectors is not None:
        worker = threading.Thread(target=vector_lookup, name="semfora-vector-query", daemon=True)
        worker.start()

    fusion = _Fusion()

    def lexical(mode: str) -> None:
        """The full-text and symbol lists ``mode`` asks for, into ``fusion``."""
        with s.lock:
            s.refresh_stats()
            if mode in ("hybrid", "fts"):
                t = time.perf_counter()
                for q, weight in [(_focus(s, q), w) for q, w in queries]:
                    found_rows = [
                        row for row, _bm25 in fts.search(s.conn, q, limit=SOURCE_POOL, stats=s.stats)
                    ]
                    found_rows = _comments_to_definitions(s, found_rows)
                    fusion.add_ranked("fts", found_rows, weight, FTS_CANDIDATES)
                timings["fts_ms"] = round((time.perf_counter() - t) * 1000, 2)
            if mode in ("hybrid", "symbols"):
                t = time.perf_counter()
                symbols = _symbol_list(s.conn, query, long=len(set(_content_terms(query))) > LONG_QUERY_TERMS)
                rows = fts.rows_by_symbol_ids(s.conn, [sym.id for sym in symbols])
                for rank, sym in enumerate(symbols, 1):
                    fusion.add("symbols", rank, 1.0, rows.get(sym.id), sym)
                timings["symbols_ms"] = round((time.perf_counter() - t) * 1000, 2)

    lexical(mode)
    if worker is not None:
        worker.join()
        if vector_error:
            problem = vector_error[0].message
            if mode == "vector":
                # The store failed mid-query (stopped, or wiped under a warm searcher): `--mode
                # vector` printed "no results"; it answers from full text and symbols, as when the
                # store is known to be unusable before the query.
                problem += "; showing full-text and symbol results instead"
                mode = "hybrid"
                lexical(mode)
            warn_once(EngineWarning("VECTOR_QUERY_FAILED", f"vector search is off for now: {problem}"), sink)
        for weight, found in vector_lists:
            with s.lock:
                by_id = fts.rows_by_chunk_ids(s.conn, [cid for cid, _ in found])
                # Chunks deleted since they were embedded have no row and drop out.
                vector_rows = [by_id[cid] for cid, _distance in found if cid in by_id]
                vector_rows = _comments_to_definitions(s, vector_rows)
            fusion.add_ranked("vector", vector_rows, weight, VECTOR_CANDIDATES)

    ranked = fusion.ranked()
    if rescore and mode == "hybrid" and ranked:
        t = time.perf_counter()
        with s.lock:
            ranked = _rescore(s, query, ranked, {})
        timings["rescore_ms"] = round((time.perf_counter() - t) * 1000, 2)
    terms = fts.query_terms(query)
    if use_rerank and ranked:
        t = time.perf_counter()
        ranked, hits_from_cache = _apply_rerank(settings, s, query, ranked, reranker, rerank_mode, sink)
        cache_hits += hits_from_cache
        timings["rerank_ms"] = round((time.perf_counter() - t) * 1000, 2)
    if mode == "hybrid" and rescore:
        ranked = _exact_names_first(query, ranked)
    chosen = _without_nested(ranked, limit)
    texts = chunk_texts(layout.root, [c.row for c in chosen if c.row is not None])
    _warn_stale([c.row for c in chosen if c.row is not None and c.row.chunk_id not in texts], sink)
    with s.lock:
        members = _class_members(
            s.conn, [c.row for c in chosen if c.row is not None and c.row.chunk_id in texts]
        )
    return [_to_hit(c, terms, texts, members) for c in chosen], rewrites, cache_hits


def _warn_stale(rows: list[fts.ChunkRow], sink: WarningSink | None) -> None:
    """Say which hits come from files changed (or gone) since they were indexed.

    Their lines are the index's, no longer the file's, and their text is not shown (the chunk
    no longer matches its hash): without this a script took the old line numbers as true.
    Said on every search that meets them, not once per process: the files differ each time.
    """
    files = sorted({r.file for r in rows})
    if not files or sink is None:
        return
    shown = ", ".join(files[:STALE_FILES_NAMED]) + (
        f" and {len(files) - STALE_FILES_NAMED} more" if len(files) > STALE_FILES_NAMED else ""
    )
    sink(
        EngineWarning(
            "INDEX_STALE",
            f"{plural(len(files), 'file')} of these results changed on disk since "
            f"{'it was' if len(files) == 1 else 'they were'} indexed ({shown}): their line numbers "
            "may be off and their text is not shown; `semfora index` brings them up to date",
        )
    )


def _comments_to_definitions(s: _Searcher, rows: list[fts.ChunkRow]) -> list[fts.ChunkRow]:
    """``rows`` with each definition's leading comment replaced by the definition itself.

    A symbol's chunk starts at its ``def``/``func``/``function`` line, so the comment above it (Go's
    ``// Path adds a matcher``, a JSDoc or PHPDoc block, Ruby's ``#`` lines) is left to a ``module``
    chunk of its own. In meaning that comment is the closest text there is to a plain-language
    question, and the embedding list ranked it above the code it describes: a quarter of the vector
    top 10 on the context set were module chunks, most of them such comments, and none an answer.
    The comment belongs to the definition that follows it, so that definition takes its place in the
    list (where the definition is listed already, its better rank counts, once).
    """
    spots = {r.chunk_id: (r.file, r.end_line + 1) for r in rows if r.kind == "module"}
    if not spots:
        return rows
    definitions = fts.definitions_starting_at(s.conn, list(spots.values()))
    candidates = [r for r in rows if spots.get(r.chunk_id) in definitions]
    if not candidates:
        return rows
    texts = chunk_texts(s.layout.root, candidates)
    out: list[fts.ChunkRow] = []
    for row in rows:
        spot = spots.get(row.chunk_id)
        text = texts.get(row.chunk_id)
        if spot in definitions and text is not None and is_comment_block(text):
            out.append(definitions[spot])
        else:
            out.append(row)
    return out


def _stems_of(s: _Searcher, key: str, text: str) -> tuple[str, ...]:
    found = s.chunk_terms.get(key)
    if found is None:
        found = tuple(tokens(text))
        s.chunk_terms[key] = found
        while len(s.chunk_terms) > MAX_CACHED_CHUNK_TERMS:
            s.chunk_terms.popitem(last=False)
    else:
        s.chunk_terms.move_to_end(key)
    return found


def _rescore(
    s: _Searcher, query: str, ranked: list[_Candidate], bodies: dict[str, str | None] | None = None
) -> list[_Candidate]:
    """The head of the fused list ordered again by fusion and by each candidate's whole text (see RESCORE_DEPTH)."""

    def frequencies(words: Sequence[str]) -> tuple[int, Mapping[str, int]]:
        return s.stats.total(s.conn), {w: s.stats.df(s.conn, w) for w in words}

    def names(words: Sequence[str]) -> Mapping[str, int]:
        return {w: s.stats.df(s.conn, w, column="name") for w in words}

    # A long query is a report: its prose-only words do not weigh (``terms.PROSE_ONLY_WEIGHT``).
    long = len(set(_content_terms(query))) > LONG_QUERY_TERMS
    terms: TaskTerms = task_terms(query, frequencies, names=names if long else None)
    if not terms.weights:
        return ranked
    head, tail = ranked[:RESCORE_DEPTH], ranked[RESCORE_DEPTH:]
    for c in head:
        c.fused = c.score
    _score_text(s, head, terms, bodies)
    # The neighbourhood: the other definitions of the files the head implicates most.
    files = list(dict.fromkeys(_file_of(c) for c in sorted(head, key=lambda c: -c.score) if _is_code(c)))
    seen = {c.key for c in ranked}
    extra: list[_Candidate] = []
    for file in files[:NEIGHBOURHOOD_FILES]:
        rows = s.conn.execute(
            f"SELECT {fts.ROW_COLUMNS} FROM text_chunks WHERE file = ? AND kind IN ('symbol', 'header') "
            "ORDER BY start_line, part LIMIT ?",
            (file, NEIGHBOURHOOD_PER_FILE),
        ).fetchall()
        for values in rows:
            row = fts.ChunkRow(*values)
            key = row.symbol_id or row.chunk_id
            if key not in seen:
                seen.add(key)
                extra.append(_Candidate(key, row, None))
    if extra:  # the whole pool scored together: lexical scores are scaled by the pool's best
        _score_text(s, head + extra, terms, bodies)
    pool = head + extra
    strength: dict[str, list[float]] = {}
    for c in pool:
        if _is_code(c):
            strength.setdefault(_file_of(c), []).append(c.score)
    files_score = {
        f: sum(w * v for w, v in zip(LOCALITY_WEIGHTS, sorted(vs, reverse=True), strict=False))
        for f, vs in strength.items()
    }
    best_file = max(files_score.values(), default=0.0) or 1.0
    for c in pool:
        c.score += W_LOCALITY * files_score.get(_file_of(c), 0.0) / best_file
    return sorted(pool, key=lambda c: (-c.score, c.key)) + tail


def _file_of(c: _Candidate) -> str:
    return c.row.file if c.row is not None else (c.symbol.file if c.symbol is not None else "")


def _is_code(c: _Candidate) -> bool:
    return not (c.row is not None and c.row.kind == "prose") and not is_test_path(_file_of(c))


def _read_bodies(
    s: _Searcher, rows: list[fts.ChunkRow], memo: dict[str, str | None] | None
) -> dict[str, str]:
    """``chunk_texts`` through ``memo`` (chunk id -> text, None when unreadable), kept for one search:
    the rescoring scores the head, then the head with its neighbourhood, and reads each file once."""
    if memo is None:
        return chunk_texts(s.layout.root, rows)
    todo = [r for r in rows if r.chunk_id not in memo]
    if todo:
        found = chunk_texts(s.layout.root, todo)
        for r in todo:
            memo[r.chunk_id] = found.get(r.chunk_id)
    return {r.chunk_id: text for r in rows if (text := memo.get(r.chunk_id)) is not None}


def _score_text(
    s: _Searcher, head: list[_Candidate], terms: TaskTerms, memo: dict[str, str | None] | None = None
) -> None:
    """Each candidate's score: its fused order and its whole text's lexical score, both in [0, 1]."""
    symbol_ids = [c.row.symbol_id if c.row is not None else c.key for c in head]
    # Every part of each candidate's definition (a long one is cut into several chunks), with
    # its text read back from the file (the index keeps no copy of the source).
    part_rows: dict[str, list[fts.ChunkRow]] = {}
    wanted = [sid for sid in symbol_ids if sid]
    for i in range(0, len(wanted), SQL_PARAMS_PER_QUERY):
        chunk = wanted[i : i + SQL_PARAMS_PER_QUERY]
        sql = (
            f"SELECT {fts.ROW_COLUMNS} FROM text_chunks "
            f"WHERE symbol_id IN ({','.join('?' * len(chunk))}) ORDER BY part"
        )
        for values in s.conn.execute(sql, chunk):
            row = fts.ChunkRow(*values)
            part_rows.setdefault(row.symbol_id or "", []).append(row)
    own = [c.row for c in head if c.row is not None]
    bodies = _read_bodies(s, [r for rows in part_rows.values() for r in rows] + own, memo)
    parts: dict[str, list[tuple[str, str]]] = {
        sid: [(r.content_hash, bodies[r.chunk_id]) for r in rows if r.chunk_id in bodies]
        for sid, rows in part_rows.items()
    }
    stats = []
    for c, sid in zip(head, symbol_ids, strict=True):
        texts = parts.get(sid or "") or (
            [(c.row.content_hash, bodies[c.row.chunk_id])]
            if c.row is not None and c.row.chunk_id in bodies
            else []
        )
        stems = [t for content_hash, body in texts for t in _stems_of(s, content_hash, body)]
        name = c.row.name if c.row is not None else (c.symbol.name if c.symbol is not None else "")
        stats.append((*term_counts(stems, terms), set(tokens(name.split(" ", 1)[0]))))
    lengths = sorted(length for _tf, length, _n in stats if length)
    avgdl = max(10.0, lengths[len(lengths) // 2]) if lengths else 10.0
    lexical = [lexical_score(tf, length, avgdl, name, terms)[0] for tf, length, name in stats]
    best_lexical = max(lexical) or 1.0
    order = {c.key: n for n, c in enumerate(sorted(head, key=lambda c: (-c.fused, c.key)), 1)}
    for c, lex in zip(head, lexical, strict=True):
        file = _file_of(c)
        fused_weight = lexical_weight = 1.0
        if c.row is not None and c.row.kind == "prose":
            fused_weight = lexical_weight = PROSE_WEIGHT
        elif c.row is not None and c.row.kind == "module":
            fused_weight = lexical_weight = MODULE_WEIGHT
        elif is_test_path(file):
            # once: the fused order already discounted the test (``_Fusion.add``)
            lexical_weight = TEST_WEIGHT
        fused = (1 + RESCORE_RANK_K) / (order[c.key] + RESCORE_RANK_K) if c.fused > 0 else 0.0
        c.score = fused_weight * W_FUSED * fused + lexical_weight * W_LEXICAL * lex / best_lexical


def _names_of(c: _Candidate) -> tuple[str, str]:
    """A candidate definition's (name, qualified name), or ("", "") for module code and prose."""
    if c.row is not None:
        if c.row.kind not in ("symbol", "header"):
            return "", ""
        return c.row.name.split(" ", 1)[0], c.row.qualified_name or ""
    if c.symbol is not None:
        return c.symbol.name, c.symbol.qualified_name
    return "", ""


def _module_qualified(query: str, qualified: str, file: str) -> bool:
    """Whether ``query`` is ``qualified`` behind module names of its file (``httpx.Client`` for
    ``Client`` in ``httpx/_client.py``, ``_models.Response``): how an import spells a definition."""
    parts = query.replace("::", ".").split(".")
    folders = {p.lower() for p in file.replace("\\", "/").rsplit(".", 1)[0].split("/")}
    folders |= {p.lstrip("_") for p in folders}
    for k in range(1, len(parts)):
        if ".".join(parts[k:]).lower() == qualified.lower():
            return all(p.lower() in folders for p in parts[:k])
    return False


def _exact_names_first(query: str, ranked: list[_Candidate]) -> list[_Candidate]:
    """The definitions a one-identifier query names exactly, first (see EXACT_NAME_QUERY).

    Typing ``client``, ``Client.send`` or ``httpx.Client`` asks for that definition: the rescoring
    alone put files that say "client" thirty times above the class ``Client``. Among several
    definitions of the name, the qualified name (bare or behind its module) before a member's name
    (``request`` before ``HTTPError.request``), the casing as typed, then implementation before
    tests; the rescored order breaks ties.
    """
    q = query.strip()
    if not EXACT_NAME_QUERY.fullmatch(q):
        return ranked
    ql = q.lower()
    keyed: list[tuple[tuple[bool, bool, bool, int], _Candidate]] = []
    rest: list[_Candidate] = []
    for n, c in enumerate(ranked):
        name, qualified = _names_of(c)
        whole = bool(qualified) and (qualified.lower() == ql or _module_qualified(q, qualified, _file_of(c)))
        if whole or (name and name.lower() == ql):
            cased = q in (name, qualified) or q.endswith("." + qualified)
            keyed.append(((not whole, not cased, is_test_path(_file_of(c)), n), c))
        else:
            rest.append(c)
    if not keyed:
        return ranked
    first = [c for _key, c in sorted(keyed, key=lambda kc: kc[0])]
    # Scores read in the order shown: each named definition scores just above the hit after it.
    floor = rest[0].score if rest else -math.inf
    for c in reversed(first):
        if c.score <= floor:
            c.score = floor + EXACT_NAME_MARGIN
        floor = c.score
    return first + rest


def _without_nested(ranked: list[_Candidate], limit: int) -> list[_Candidate]:
    """The first ``limit`` candidates, skipping a function nested in (or enclosing) one already taken.

    A closure and the function around it are one place to look (``check_password`` and its inner
    ``setter``); listing both spends a slot on lines the user already sees.
    """
    taken: list[_Candidate] = []
    spans: dict[str, list[tuple[int, int]]] = {}
    for cand in ranked:
        row = cand.row
        if row is not None and row.kind == "symbol":
            inside = spans.setdefault(row.file, [])
            if any(
                (lo <= row.start_line and row.end_line <= hi) or (row.start_line <= lo and hi <= row.end_line)
                for lo, hi in inside
            ):
                continue
            inside.append((row.start_line, row.end_line))
        taken.append(cand)
        if len(taken) >= limit:
            break
    return taken


def _apply_rerank(
    settings: Settings,
    s: _Searcher,
    query: str,
    ranked: list[_Candidate],
    reranker: Reranker | None,
    mode: BlendMode,
    sink: WarningSink | None,
) -> tuple[list[_Candidate], int]:
    model = reranker or OllamaReranker(
        settings.ollama.host, settings.search.llm_model, settings.search.provider_timeout
    )
    cands = []
    bodies = chunk_texts(s.layout.root, [c.row for c in ranked if c.row is not None])
    for c in ranked:
        if c.row is not None:
            text = f"{c.row.file} {c.row.qualified_name or ''}\n{bodies.get(c.row.chunk_id, c.row.sigdoc)}"
            cands.append(RerankCandidate(c.key, c.row.content_hash, text))
        elif c.symbol is not None:
            cands.append(RerankCandidate(c.key, c.symbol.body_hash, f"{c.symbol.file} {c.symbol.signature}"))
    outcome = rerank(query, cands, model, s.cache, mode=mode)
    if outcome.failed:
        warn_once(EngineWarning("RERANK_OFF", f"reranking is off: {outcome.failed}"), sink)
        if not outcome.scored and not outcome.cache_hits:
            # Nothing was reranked: the hits keep their own scores (they became 1, 0.5, 0.33...,
            # which read as a reranker's verdict and differed from the same search without it).
            return ranked, 0
    by_key = {c.key: c for c in ranked}
    reordered = []
    for key, score in outcome.order:
        cand = by_key.pop(key)
        cand.score = score
        reordered.append(cand)
    rest = [c for c in ranked if c.key in by_key]
    return reordered + rest, outcome.cache_hits
