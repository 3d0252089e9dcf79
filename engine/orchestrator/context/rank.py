"""Step 3 of the pack: how much each candidate is worth, from its own code, its file and the call graph.

Owns the ranking constants and the score. For every candidate it measures, over the lines
that are its own (a class: its signature, docstring, attributes and member names; a function:
its whole body):

- **lexical**: BM25 of the *whole* task over those lines, each term weighed by its rarity in
  the repository (``terms``), plus the task terms in the definition's own name;
- **retrieval**: its reciprocal ranks in the channels (hybrid search, named symbols);
- **graph**: the mass it gains in a personalised PageRank from the strongest candidates;
- **locality**: how strongly its file is implicated (the evidence of its file's best few).

Each is scaled to [0, 1] within the task and weighed by the ``W_*`` constants below. Tests,
docs and examples count ``NON_SOURCE_WEIGHT`` unless the task asks for them. It reads files
only through ``RepoReader`` and never decides what enters the pack (``fill`` does).
"""

from __future__ import annotations

import re
import statistics
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from engine.errors import SemforaError
from engine.orchestrator.context.candidates import (
    NEIGHBOURHOOD_FILES,
    Candidate,
    neighbourhood,
    of_symbol,
)
from engine.orchestrator.context.excerpt import doc_above, is_stub
from engine.orchestrator.context.graph import GRAPH_SEEDS, personalised_pagerank
from engine.orchestrator.context.reads import RepoReader
from engine.policy.paths import PathKind, classify_path
from engine.query import STOPWORDS, SymbolIndex, TaskTerms, lexical_score, tokens

# The parts of the final score. The candidate's own code against the whole task is the most
# general signal (it does not depend on how the task is phrased), so it leads; the search's
# fused ranks bring vectors and symbol names; the graph and the file carry evidence from
# neighbours, which is weaker than a candidate's own.
W_LEXICAL = 1.0
W_RETRIEVAL = 0.7
W_GRAPH = 0.25
W_LOCALITY = 0.3
# A symbol whose source the model read earlier in the session gains this much (a follow-up
# task is usually about the same code).
W_RECENCY = 0.15
# Tests, examples, docs and generated code match a task's words as well as the implementation
# does, but a task is about the implementation unless it says otherwise.
NON_SOURCE_WEIGHT = 0.35
# Code outside any definition (imports, a file's header, the docblocks between methods) matches
# a task's words through comments and import lists; behaviour lives in definitions.
MODULE_WEIGHT = 0.5
# A definition whose body is only a docstring (a hook specification, an abstract or protocol
# method) is prose: it matches a task's words as a manual does, and nothing it runs can be
# wrong. It counts this much unless the task acts on docs (``asks_for_tests``); the code that
# implements the behaviour it describes is what a fix changes.
STUB_WEIGHT = 0.5
# A comment of at least this many lines right above a member is its doc, left out of its
# container's skeleton (shorter ones cost no more than the gap's marker).
MIN_DOC_LINES = 3
# Words that name tests, examples or docs. Saying one is not asking for them: "when a test
# raises", "the short test summary", "the test runner strips colour", "in tests I assert..."
# describe the library's behaviour (a testing tool's above all), and the code to change is the
# implementation. They count fully only when the request acts on them (``TEST_REQUEST``).
TEST_WORDS = r"(?:tests?|testing|specs?|examples?|docs|unit ?tests?|test ?cases?|test ?suites?)"
# Verbs that act on tests, examples or docs ("add a test", "where are the examples", "update
# the docs"), followed within TEST_VERB_REACH words by one of TEST_WORDS.
TEST_VERBS = (
    "add|adding|write|writing|create|update|fix|extend|improve|rewrite|remove|delete|run|running"
    "|cover|show|find|where|list|move|rename|refactor|split|convert|port|migrate|parametrize"
)
TEST_VERB_REACH = 3
TEST_REQUEST = re.compile(
    rf"\b(?:{TEST_VERBS})\b(?:\W+\w+){{0,{TEST_VERB_REACH}}}?\W+{TEST_WORDS}\b"
    rf"|\b{TEST_WORDS}\s+(?:for|of|that|covering)\b"
    r"|\b(?:failing|flaky|broken|missing|new|existing) (?:unit )?tests?\b|\btest coverage\b"
)
# Declaration files restate an implementation's API beside it (a package's index.d.ts beside its
# JavaScript): their names and comments match a task as well as the code does, and on the context
# set's public part they took 29% of the packs' tokens at 8,000 while no gold symbol is in one. What a
# change touches is the implementation, unless the task is about the types.
DECLARATION_SUFFIXES = (".d.ts", ".d.cts", ".d.mts")
# Words that make a task about the declarations: then they count fully.
TYPE_WORDS = frozenset(
    {"types", "typings", "typing", "typescript", "declaration", "declarations", "typedef", "typedefs", "dts"}
)
# A report of something going wrong (an issue: paragraphs, pasted code or output, or more content
# words than this) is not a request about tests even when it says "example" or "test": those are
# the reproduction's ("Reproducible example:", "Test CLI"), and what it asks is that the code
# misbehaving change. Requests are a sentence or two (the context set's: 5 to 25 content words).
REPORT_WORDS = 30
# The file's evidence: its best candidates' scores with these weights (the best, the second,
# the third), so a file with several matching definitions outranks one lucky hit.
LOCALITY_WEIGHTS = (1.0, 0.5, 0.25)
# Decoded line terms kept for this many files (process-wide): consecutive tasks share files.
MAX_LEXICON_FILES = 512


def _words(prose: str) -> list[str]:
    """The task's words, lowercased (letters only)."""
    return [w.lower() for w in re.findall(r"[A-Za-z]+", prose)]


def is_report(prose: str, pasted: int) -> bool:
    """Whether a task is a report (see ``REPORT_WORDS``): ``prose`` is its text without the
    ``pasted`` blocks of code and output."""
    if pasted:
        return True
    if sum(1 for part in re.split(r"\n\s*\n", prose) if part.strip()) > 1:
        return True
    return sum(1 for w in _words(prose) if len(w) > 2 and w not in STOPWORDS) > REPORT_WORDS


def asks_for_tests(prose: str, paths: Iterable[str], *, report: bool) -> bool:
    """Whether tests, examples and docs should count fully: a request (not a report) that says
    so in its own words, or that names a test file."""
    if report:
        return False
    return bool(TEST_REQUEST.search(" ".join(prose.lower().split()))) or any(
        "test" in p.lower() for p in paths
    )


def is_declaration(rel: str) -> bool:
    """A TypeScript declaration file (``index.d.ts``): an API restated, not its implementation."""
    return rel.endswith(DECLARATION_SUFFIXES)


def asks_for_types(prose: str, paths: Iterable[str]) -> bool:
    """Whether declaration files should count fully: the task speaks of types, typings or
    declarations, or names a declaration file (a report's TypeScript error counts too)."""
    return not TYPE_WORDS.isdisjoint(_words(prose)) or any(is_declaration(p) for p in paths)


class Lexicon:
    """Stems of each line of a file, computed lazily per line and kept per file version."""

    _shared: OrderedDict[str, tuple[list[str], list[tuple[str, ...] | None]]] = OrderedDict()
    _lock = threading.Lock()

    def __init__(self, reader: RepoReader) -> None:
        self.reader = reader

    def lines(self, rel: str) -> list[str]:
        return self.reader.lines(rel)

    def stems(self, rel: str, first: int, last: int) -> Iterable[tuple[int, tuple[str, ...]]]:
        """(line number, stems) for ``first..last`` of ``rel``."""
        lines = self.reader.lines(rel)
        key = f"{self.reader.root}\0{rel}"
        with self._lock:
            cached = self._shared.get(key)
            if cached is None or cached[0] is not lines:
                cached = (lines, [None] * len(lines))
                self._shared[key] = cached
                while len(self._shared) > MAX_LEXICON_FILES:
                    self._shared.popitem(last=False)
            else:
                self._shared.move_to_end(key)
        per_line = cached[1]
        for n in range(max(1, first), min(last, len(lines)) + 1):
            found = per_line[n - 1]
            if found is None:
                found = per_line[n - 1] = tuple(tokens(lines[n - 1]))
            yield n, found


class Ranker:
    """Scores the candidates of one task. One instance per pack; ``order`` is the whole step."""

    def __init__(
        self,
        store: SymbolIndex,
        reader: RepoReader,
        terms: TaskTerms,
        *,
        wants_tests: bool,
        wants_types: bool = False,
    ) -> None:
        self.store = store
        self.reader = reader
        self.lexicon = Lexicon(reader)
        self.terms = terms
        self.wants_tests = wants_tests
        self.wants_types = wants_types
        self._file_symbols: dict[str, list[Any]] = {}
        self._stats: dict[str, tuple[dict[str, int], int, set[str]]] = {}
        self._avgdl = 0.0
        self._stubs: dict[str, bool] = {}

    def order(
        self,
        cands: dict[str, Candidate],
        is_secret: Callable[[str], bool],
        recency: Callable[[str], float],
    ) -> list[Candidate]:
        """The candidates best first, after adding the file neighbourhood and the call graph's.

        1. each candidate's own evidence: its lines against the task, its channel ranks;
        2. the file neighbourhood: every definition of the files with the most evidence;
        3. the call graph around the strongest candidates (``walk``);
        4. the final score: own evidence, graph, file, naming bonus, recency.
        """
        self.lexical(cands.values())
        self.evidence(list(cands.values()))
        self.locality(cands.values())
        strength = {c.file: c.locality for c in cands.values() if c.is_code and c.file}
        files = sorted(strength, key=lambda f: -strength[f])[:NEIGHBOURHOOD_FILES]
        neighbourhood(self.store, cands, files, is_secret)
        self.lexical(cands.values())
        self.evidence(list(cands.values()))
        added = self.walk(cands, is_secret)
        if added:
            self.lexical(added)
        self.evidence(list(cands.values()))
        self.locality(cands.values())
        return self.final(cands.values(), recency)

    # -- the candidate's own lines --------------------------------------------------------

    def symbols_of(self, rel: str) -> list[Any]:
        found = self._file_symbols.get(rel)
        if found is None:
            found = self._file_symbols[rel] = self.store.file_symbols(rel)
        return found

    def own_ranges(self, c: Candidate) -> list[tuple[int, int]]:
        """The line ranges that are ``c``'s own: a container's lines outside its members' bodies."""
        if c.start_line is None:
            return []
        start, end = c.start_line, c.end_line or c.start_line
        if not c.is_container:
            return [(start, end)]
        ranges: list[tuple[int, int]] = []
        cursor = start
        for sym in self.symbols_of(c.file):
            if sym.start_line <= start or sym.end_line > end or sym.start_line < cursor:
                continue
            # the member's first line (its name) stays; its body is its own candidate's
            ranges.append((cursor, sym.start_line))
            cursor = sym.end_line + 1
        if cursor <= end:
            ranges.append((cursor, end))
        return ranges

    def members(self, c: Candidate, lines: Sequence[str] = ()) -> list[tuple[int, int]]:
        """The bodies of a container's members (hidden when the container is shown as code),
        and, given the file's ``lines``, the doc comment of several lines right above a member's
        first line: the member's line names it, its docblock is its own item's (a PHP class's
        skeleton was 600 tokens of ``/** ... */`` at a 2,000-token budget)."""
        own = self.own_ranges(c)
        hidden = []
        for (_a, b), (a2, _b2) in zip(own, own[1:], strict=False):
            if a2 > b + 1:
                hidden.append((b + 1, a2 - 1))
        if lines:
            for a, b in own[:-1]:  # b: a member's first line
                first = doc_above(lines, b, a)
                if b - first >= MIN_DOC_LINES:
                    hidden.append((first, b - 1))
            hidden.sort()
        return hidden

    def line_weights(self, c: Candidate) -> dict[int, float]:
        """Line -> summed weight of the task terms on it, over ``c``'s own lines."""
        weights = self.terms.weights
        out: dict[int, float] = {}
        for a, b in self.own_ranges(c):
            for n, stems in self.lexicon.stems(c.file, a, b):
                w = sum(weights.get(s, 0.0) for s in set(stems))
                if w > 0:
                    out[n] = w
        return out

    # -- lexical evidence -----------------------------------------------------------------

    def _collect(self, c: Candidate) -> tuple[dict[str, int], int, set[str]]:
        found = self._stats.get(c.key)
        if found is not None:
            return found
        weights = self.terms.weights
        tf: dict[str, int] = {}
        length = 0
        for a, b in self.own_ranges(c):
            for _n, stems in self.lexicon.stems(c.file, a, b):
                length += len(stems)
                for s in stems:
                    if s in weights:
                        tf[s] = tf.get(s, 0) + 1
        name = set(tokens(c.symbol.name)) & set(weights) if c.symbol is not None else set()
        found = self._stats[c.key] = (tf, length, name)
        return found

    def lexical(self, cands: Iterable[Candidate]) -> None:
        """BM25 of the task over each candidate's own lines, its name's terms, and its coverage."""
        pool = list(cands)
        stats = [self._collect(c) for c in pool]
        if not self._avgdl:
            lengths = [length for _tf, length, _n in stats if length]
            self._avgdl = max(10.0, statistics.median(lengths)) if lengths else 10.0
        weights = self.terms.weights
        for c, (tf, length, name) in zip(pool, stats, strict=True):
            c.lexical, c.coverage = lexical_score(tf, length, self._avgdl, name, self.terms)
            found = set(tf) | name
            c.matched = tuple(self.terms.words[t] for t in sorted(found, key=lambda t: -weights[t]))

    # -- the score ------------------------------------------------------------------------

    def kind_weight(self, c: Candidate) -> float:
        kind = classify_path(c.file) if c.file else PathKind.SOURCE
        weight = 1.0
        non_source = kind is not PathKind.SOURCE and not (self.wants_tests and kind is not PathKind.GENERATED)
        if non_source or (not self.wants_types and c.file and is_declaration(c.file)):
            weight = NON_SOURCE_WEIGHT
        if c.symbol is None and c.chunk_kind == "module":
            weight *= MODULE_WEIGHT
        elif not self.wants_tests and self.is_stub(c):
            weight *= STUB_WEIGHT
        return weight

    def is_stub(self, c: Candidate) -> bool:
        """A definition whose body is only its docstring (see ``excerpt.is_stub``), cached."""
        if c.symbol is None or c.is_container or c.start_line is None:
            return False
        found = self._stubs.get(c.key)
        if found is None:
            lines = self.lexicon.lines(c.file)
            found = self._stubs[c.key] = bool(lines) and is_stub(
                lines, c.start_line, c.end_line or c.start_line
            )
        return found

    def evidence(self, cands: list[Candidate]) -> None:
        """The candidate's own evidence (retrieval and lexical), before neighbours lend theirs."""
        best_r = max((c.retrieval for c in cands), default=0.0) or 1.0
        best_l = max((c.lexical for c in cands), default=0.0) or 1.0
        for c in cands:
            c.weight = self.kind_weight(c)
            own = W_LEXICAL * c.lexical / best_l + W_RETRIEVAL * c.retrieval / best_r
            c.score = c.weight * own + c.bonus

    def walk(self, cands: dict[str, Candidate], is_secret: Callable[[str], bool]) -> list[Candidate]:
        """The call graph around the best candidates: mass to their callers and callees.

        Returns the candidates the walk added (not seen by any channel before).
        """
        ordered = sorted((c for c in cands.values() if c.symbol is not None), key=lambda c: -c.score)
        seeds = {c.key: c.score for c in ordered[:GRAPH_SEEDS] if c.score > 0}
        names = {c.key: c.name for c in ordered[:GRAPH_SEEDS]}

        def follow(file: str) -> bool:
            return not is_secret(file) and (self.wants_tests or classify_path(file) is PathKind.SOURCE)

        def callers_of(key: str) -> bool:
            c = cands.get(key)
            return c is None or not c.is_container

        gained, links = personalised_pagerank(self.store, seeds, names, follow=follow, callers_of=callers_of)
        if not gained:
            return []
        # Scaled by the best neighbour, not the best seed: the seeds' own evidence already
        # ranks them, and the walk is what lifts the code around them.
        best = max((m for n, m in gained.items() if n not in seeds), default=0.0) or max(gained.values())
        added = []
        for node, mass in gained.items():
            c = cands.get(node)
            if c is None:
                try:
                    sym = self.store.symbol(node)
                except SemforaError:  # an edge to a symbol deleted since: skipped
                    continue
                if is_secret(sym.file):
                    continue
                c = cands[node] = of_symbol(sym)
                added.append(c)
            c.graph = min(1.0, mass / best)
            link = links.get(node)
            if link is not None and node not in seeds:
                c.neighbour_of = link.seed
                c.reasons.append(link.relation)
        return added

    def locality(self, cands: Iterable[Candidate]) -> None:
        """Each candidate's file evidence: the weighted best few scores of its file, scaled to [0, 1]."""
        by_file: dict[str, list[float]] = {}
        pool = list(cands)
        for c in pool:
            if c.file and c.is_code:
                by_file.setdefault(c.file, []).append(c.score)
        strength = {
            f: sum(w * s for w, s in zip(LOCALITY_WEIGHTS, sorted(scores, reverse=True), strict=False))
            for f, scores in by_file.items()
        }
        best = max(strength.values(), default=0.0) or 1.0
        for c in pool:
            c.locality = strength.get(c.file, 0.0) / best

    def final(self, cands: Iterable[Candidate], recency: Callable[[str], float]) -> list[Candidate]:
        """The final score and order (best first): own evidence, graph, file, naming, recency."""
        pool = list(cands)
        best_r = max((c.retrieval for c in pool), default=0.0) or 1.0
        best_l = max((c.lexical for c in pool), default=0.0) or 1.0
        for c in pool:
            c.weight = self.kind_weight(c)
            own = W_LEXICAL * c.lexical / best_l + W_RETRIEVAL * c.retrieval / best_r
            c.recency = W_RECENCY * recency(c.key)
            if c.recency:
                c.reasons.append("viewed earlier in this session")
            c.score = c.weight * (own + W_GRAPH * c.graph + W_LOCALITY * c.locality) + c.bonus + c.recency
        return sorted(pool, key=lambda c: (-c.score, c.key))
