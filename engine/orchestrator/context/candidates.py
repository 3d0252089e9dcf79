"""Step 2 of the pack: candidates, from the names in the task, hybrid search and their files.

Owns ``Candidate`` and the channels that propose them: the *anchor channel* (symbols the
task names: ``@X``, ``X()``, backticks, identifiers, paths), the *search channel* (hybrid
search, FTS + vectors + symbol names, on the whole task) and the *file neighbourhood* (every
definition in the files the search ranks highest, so the function the fix goes into can
compete even when its file's other functions took the search's top ranks). It proposes;
``rank`` decides. It never reads file contents (``RepoReader`` does, for ``rank``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from engine.errors import ConfigError, SemforaError
from engine.orchestrator.anchors import Anchors
from engine.query import CONTEXT_RRF_K, SymbolIndex, phrase_chunks, rrf, search_hits
from engine.semantic.model import Symbol

if TYPE_CHECKING:
    from engine.query import SearchHit

log = logging.getLogger(__name__)

# Identifier anchors looked up per task; more are usually words of prose mis-read as names.
MAX_SYMBOL_ANCHORS = 8
# A method a pasted snippet calls on a variable (``t.append(x)``) is looked up by its bare name
# only when at most this many definitions have it: ``append`` in a text library, not ``get``.
SNIPPET_NAME_MAX = 3
# Symbols kept per anchor; the index ranks exact names and prefixes first.
SYMBOL_RESULTS_PER_ANCHOR = 5
# Hybrid search reads the task up to this length: the search focuses a long text on its rarest
# words itself, and beyond a few paragraphs a report repeats itself (or pastes a log).
MAX_QUERY_CHARS = 2000
# Hybrid hits taken: the head of the list is the search's opinion, the tail is cheap to rescore.
SEARCH_POOL = 40
# Something the user named on purpose (``@X``, ``X()``, backticks) is meant, whatever the rest says.
EXPLICIT_BONUS = 0.5
# An identifier of the task (``Cart.total``, ``get_user``) that names a symbol exactly is almost
# certainly meant, even without @ or backticks.
EXACT_NAME_BONUS = 0.25
# A quoted message found in more source chunks than this is an expression many places use
# ("could not be", "is not a"), not the one that printed it.
MESSAGE_MAX_CHUNKS = 4
# A message of more words than this that is not found is looked up again by its first
# MESSAGE_HEAD_WORDS: the program formatted a value into it after its opening words.
MESSAGE_HEAD_WORDS = 4
# Files whose definitions all compete (the neighbourhood): the best few files by search evidence.
NEIGHBOURHOOD_FILES = 4
# Definitions taken from one neighbourhood file at most (a 3,000-line module has hundreds).
NEIGHBOURHOOD_PER_FILE = 120
# Kinds that hold other definitions: they compete with their own lines (signature, docstring,
# attributes), while their methods compete as candidates of their own.
CONTAINER_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "namespace", "module", "impl"})


@dataclass
class Candidate:
    """A definition (or a range of a file) competing for a place in the pack."""

    key: str  # symbol id, or "file:line" for code outside any symbol
    symbol: Symbol | None = None
    file: str = ""
    start_line: int | None = None
    end_line: int | None = None
    snippet: str = ""
    chunk_kind: str = "symbol"  # symbol | header | module | prose (what search found)
    retrieval: float = 0.0  # reciprocal ranks in the channels
    lexical: float = 0.0  # BM25 of the whole task over the candidate's own lines
    coverage: float = 0.0  # share of the task's term weight found in those lines
    matched: tuple[str, ...] = ()  # task words found there, strongest first
    graph: float = 0.0  # mass gained in the call-graph walk
    locality: float = 0.0  # how strongly its file is implicated
    recency: float = 0.0
    bonus: float = 0.0
    weight: float = 1.0  # tests, docs and examples count less unless asked for
    explicit: bool = False
    neighbour_of: str | None = None
    score: float = 0.0
    ranks: dict[str, int] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.symbol.qualified_name if self.symbol else (self.file or self.key)

    @property
    def is_container(self) -> bool:
        return self.symbol is not None and self.symbol.kind in CONTAINER_KINDS

    @property
    def is_code(self) -> bool:
        """Code the model could read or edit (not a prose window of a README)."""
        return self.chunk_kind != "prose" and self.start_line is not None

    @property
    def reason(self) -> str:
        return "; ".join(dict.fromkeys(self.reasons)) or "search hit"


def of_symbol(sym: Symbol) -> Candidate:
    return Candidate(sym.id, sym, sym.file, sym.start_line, sym.end_line)


def anchor_channel(
    store: SymbolIndex,
    anchors: Anchors,
    is_secret: Callable[[str], bool],
    safe_rel: Callable[[str], str | None],
) -> list[tuple[Symbol, str, float]]:
    """(symbol, reason, bonus) in channel order, from the names and paths the task mentions.

    ``bonus`` is EXPLICIT_BONUS for what the user named on purpose, EXACT_NAME_BONUS for an
    exact identifier match, 0 for ranked name-search results.
    """
    out: list[tuple[Symbol, str, float]] = []
    seen: set[str] = set()
    explicit_texts = {a.text for a in anchors.explicit}

    def take(sym: Symbol, reason: str, bonus: float) -> None:
        if sym.id not in seen and not is_secret(sym.file):
            seen.add(sym.id)
            out.append((sym, reason, bonus))

    for frame in reversed(anchors.frames):  # innermost first: where the failure surfaced
        for sym in frame_symbols(store, frame.text, frame.path, frame.line):
            take(sym, f"in the task's traceback (`{sym.file}:{frame.line}`)", EXACT_NAME_BONUS)
    for link in anchors.links:
        # a link to a line of the repository's code (at the reporter's commit: the line may
        # have moved, the definition holding it rarely has)
        rel = store.repository_file(link.path)
        if rel is None or not link.line:
            continue
        for sym in linked_symbols(store, rel, link.line):
            take(sym, f"linked in the task (`{rel}#L{link.line}`)", EXACT_NAME_BONUS)
    snippets = {a.text for a in anchors.items if a.kind == "snippet"}
    for name in anchors.symbols[:MAX_SYMBOL_ANCHORS]:
        if name in snippets:
            # pasted code shows how the library is called: evidence, but not a pointer; a
            # method called on a variable (``t.append``) is looked up by its own name when few
            # definitions share it
            found = store.symbols_by_name(name, limit=SYMBOL_RESULTS_PER_ANCHOR)
            if not found and "." in name:
                found = store.symbols_by_name(name.rsplit(".", 1)[1], limit=SNIPPET_NAME_MAX + 1)
                found = found if len(found) <= SNIPPET_NAME_MAX else []
            for sym in found:
                take(sym, f"used in the task's code `{name}`", 0.0)
            continue
        explicit = name in explicit_texts
        exact = store.symbols_by_name(name, limit=SYMBOL_RESULTS_PER_ANCHOR)
        if not exact and "." in name:
            owner, last = name.rsplit(".", 1)
            module = owner.rsplit(".", 1)[-1]
            exact = [
                s
                for s in store.symbols_by_name(last, limit=20)
                if s.qualified_name.endswith("." + name)
                or s.parent == owner
                # `routing.get_name()` written on purpose: a module's function, with its module
                or (explicit and s.qualified_name == last and PurePosixPath(s.file).stem == module)
            ]
        label = "named in the task" if explicit else "exact name match"
        for sym in exact:
            take(sym, f"{label} `{name}`", EXPLICIT_BONUS if explicit else EXACT_NAME_BONUS)
        if not exact:
            for rank, sym in enumerate(store.search_symbols(name, limit=SYMBOL_RESULTS_PER_ANCHOR), 1):
                take(sym, f"symbol search rank {rank} for '{name}'", 0.0)
    linked_files = [store.repository_file(link.path) for link in anchors.links if not link.line]
    for path in [*anchors.paths, *(f for f in linked_files if f)]:
        rel = safe_rel(path)
        if rel is None:
            continue
        for sym in store.file_symbols(rel):
            if sym.parent is None:
                bonus = EXACT_NAME_BONUS if path in explicit_texts else 0.0
                take(sym, f"defined in `{rel}` named in the task", bonus)
    return out


def frame_symbols(store: SymbolIndex, name: str, path: str, line: int) -> list[Symbol]:
    """The definition a stack frame names, in the repository file its path ends with.

    Among that file's definitions named ``name``, the one holding ``line`` wins; line numbers
    from another release may be off, so the name decides.
    """
    if not name.isidentifier() and "." not in name:
        return []
    rel = store.repository_file(path)
    if rel is None:
        return []
    short = name.rsplit(".", 1)[-1]
    found = [s for s in store.file_symbols(rel) if s.name == short]
    found.sort(key=lambda s: (not s.start_line <= line <= s.end_line, s.end_line - s.start_line))
    return found[:1]


def linked_symbols(store: SymbolIndex, rel: str, line: int) -> list[Symbol]:
    """The innermost definition of ``rel`` holding ``line`` (none when the line is outside all)."""
    holders = [s for s in store.file_symbols(rel) if s.start_line <= line <= s.end_line]
    return sorted(holders, key=lambda s: s.end_line - s.start_line)[:1]


def message_channel(
    layout: Any, settings: Any, store: SymbolIndex, phrases: list[str], is_secret: Callable[[str], bool]
) -> list[tuple[Symbol, str, float]]:
    """(symbol, reason, bonus) of the source definitions that spell out a message the task quotes.

    A report copies what the program printed (an exception's text, a log line); the code that
    printed it is where the fix usually goes. Tests and docs that repeat a message are skipped
    (they assert it), and so is a phrase too common to point anywhere."""
    from engine.policy.paths import PathKind, classify_path

    out: list[tuple[Symbol, str, float]] = []
    seen: set[str] = set()
    for phrase in phrases:
        words = phrase.split()
        tries = [phrase] + ([" ".join(words[:MESSAGE_HEAD_WORDS])] if len(words) > MESSAGE_HEAD_WORDS else [])
        for attempt in tries:
            rows = [
                r
                for r in phrase_chunks(layout, settings, attempt, 4 * MESSAGE_MAX_CHUNKS)
                if r.symbol_id and not is_secret(r.file) and classify_path(r.file) is PathKind.SOURCE
            ]
            if not rows:
                continue
            if len(rows) <= MESSAGE_MAX_CHUNKS:
                for row in rows:
                    sid = row.symbol_id or ""
                    sym = _symbol(store, sid) if sid not in seen else None
                    if sym is not None:
                        seen.add(sym.id)
                        out.append(
                            (sym, f"spells the message the task quotes ('{attempt}')", EXACT_NAME_BONUS)
                        )
            break
    return out


def search_channel(
    layout: Any, settings: Any, memory: Any, query: str, on_warning: Callable[[str], None]
) -> list[SearchHit]:
    """Hybrid search hits for ``query``, cached in session memory for five minutes."""
    key = f"hybrid:{SEARCH_POOL}:{query}"
    cached = memory.search(key)
    if cached is not None:
        return list(cached)
    try:
        hits = list(
            search_hits(
                layout,
                settings,
                query,
                mode="hybrid",
                limit=SEARCH_POOL,
                on_warning=lambda w: on_warning(w.message),
                # the fusion's own order: ``rank`` scores every candidate on its text itself,
                # and the lists' opinion is worth most as an independent signal
                rescore=False,
            )
        )
    except ConfigError:
        raise  # a bad search.embedding (a model path that is not there) is the user's to fix: exit 2
    except SemforaError as exc:
        log.warning("hybrid search failed (%s); continuing with the named symbols only", exc)
        return []
    memory.remember_search(key, hits)
    return hits


def sources_label(hit: SearchHit) -> str:
    """'fts rank 2', 'fts rank 1, vector rank 4'... from a hit's per-source ranks."""
    parts = [f"{name} rank {rank}" for name, rank in sorted(hit.sources.items()) if rank]
    return ", ".join(parts) or "search"


def collect(
    store: SymbolIndex,
    symbol_hits: list[tuple[Symbol, str, float]],
    search_hits: Sequence[SearchHit],
    query_label: str,
    is_secret: Callable[[str], bool],
    message_hits: Sequence[tuple[Symbol, str, float]] = (),
) -> dict[str, Candidate]:
    """Merge the channels: each candidate scores ``sum(rrf(rank, CONTEXT_RRF_K))`` over the channels that found it."""
    cands: dict[str, Candidate] = {}
    for channel, hits in (("symbols", symbol_hits), ("messages", message_hits)):
        for rank, (sym, reason, bonus) in enumerate(hits, 1):
            c = cands.setdefault(sym.id, of_symbol(sym))
            c.ranks[channel] = min(c.ranks.get(channel, rank), rank)
            c.retrieval += rrf(rank, CONTEXT_RRF_K)
            c.bonus = max(c.bonus, bonus)
            c.explicit = c.explicit or bonus >= EXPLICIT_BONUS
            c.reasons.append(reason)
    for rank, hit in enumerate(search_hits, 1):
        file = hit.file
        if not file or is_secret(file):
            continue
        sid = hit.symbol_id
        key = sid or f"{file}:{hit.start_line}"
        found = cands.get(key)
        if found is not None:
            c = found
        else:
            hit_sym = _symbol(store, sid) if sid else None
            if hit_sym is not None:
                c = of_symbol(hit_sym)
            else:
                c = Candidate(
                    key,
                    None,
                    file,
                    hit.start_line,
                    hit.end_line,
                    snippet=hit.snippet,
                    chunk_kind=hit.kind or "module",
                )
            cands[key] = c
        c.ranks["search"] = min(c.ranks.get("search", rank), rank)
        c.retrieval += rrf(rank, CONTEXT_RRF_K)
        c.reasons.append(f"{sources_label(hit)} for '{query_label}'")
    return cands


def neighbourhood(
    store: SymbolIndex, cands: dict[str, Candidate], files: list[str], is_secret: Callable[[str], bool]
) -> int:
    """Add every definition of ``files`` not yet a candidate; returns how many were added."""
    added = 0
    for rel in files:
        if is_secret(rel):
            continue
        for sym in store.file_symbols(rel)[:NEIGHBOURHOOD_PER_FILE]:
            if sym.id in cands:
                continue
            c = of_symbol(sym)
            c.reasons.append(f"defined in `{rel}`, a file the search ranks high")
            cands[sym.id] = c
            added += 1
    return added


def _symbol(store: SymbolIndex, symbol_id: str) -> Symbol | None:
    try:
        return store.symbol(symbol_id)
    except SemforaError:
        return None
