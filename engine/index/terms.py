"""A task's vocabulary and how strongly a piece of code speaks it: weighted terms and BM25.

Owns tokenising (task text and code alike: identifiers split into their parts, a light
stemmer so ``redirects``/``redirect`` and ``cookies``/``cookie`` meet), the weight of each
task term (its rarity in the repository, IDF from the full-text index, times how much the
task insists on it) and ``lexical_score``, BM25 of the whole task over one definition's own
text. A long issue report rarely names the function it is about, but its rare words
(``307``, ``generator``, ``rewind``) are what that function's code says too. Shared by hybrid
search (rescoring) and the context pack (ranking, and which lines of a long definition to
show). It reads no files and opens no database; callers pass text and frequencies.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from engine.index.chunking import split_identifier

# Words of code and numbers of at least two digits (status codes, ports, versions): one
# character words and single digits match everything.
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9]*|[0-9]{2,}")
# Version strings (``3.11``, ``0.27.0``, ``v13.7.1``) describe the reporter's environment, not the
# code: their numbers are not task terms (a status code such as ``307`` stays one).
_VERSION = re.compile(r"\bv?\d+(?:\.\d+)+\b")
# An identifier written on purpose: snake_case, camelCase, dotted.path or a call.
_IDENTIFIER = re.compile(r"[A-Za-z0-9]_[A-Za-z0-9]|[a-z][A-Z]|[A-Za-z]\.[A-Za-z]|\w\(")
# English glue, the words bug reports are made of ("expected", "instead", "currently") and the
# keywords of the languages indexed (``import``, ``def``, ``self``, ``const``), which a pasted
# snippet is full of: they say how the user writes or feels, not what the code is about. Code
# words such as ``get``, ``value`` or ``error`` stay; their rarity decides their weight.
_STOPWORD_TEXT = """
    a about above after again against all also am an and any are aren as at be because been before
    being below between both but by can cannot could did didn do does doesn doing don down during each
    few for from further had has have having he her here hers him his how i if in into is isn it its
    itself just me more most my no nor not of off on once only or other our ours out over own same she
    should so some such than that the their theirs them then there these they this those through to too
    under until up very was wasn we were weren what when where which while who whom why will with won
    would you your yours please thanks thank hello hi seem seems seemed like want wanted need needs
    expected expect expecting actual actually instead currently however though although maybe perhaps
    probably really still already even ever way thing things something anything everything nothing
    someone anyone happen happens happened happening see saw seen try tried trying think thought
    know known unknown able unable sure correct correctly wrong wrongly properly proper issue issues
    problem problems bug bugs behaviour behavior example examples following follows case cases
    explain show find locate fix make change let lets one two yes ok okay etc eg ie via use used using
    import def class return returns self cls lambda function var const elif else
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
# Terms kept per task, strongest first: a long report has hundreds of words, and past the
# first few dozen informative ones the rest repeat them or are noise.
MAX_TASK_TERMS = 32
# Pasted code, logs and output (``pasted`` of ``task_terms``) lend each of their words this much,
# once: they hold the names that matter (an exception, a function) but repeat everything (a
# log of 300 lines says "GET" 300 times without insisting on it), and their numbers are
# timestamps, ids and line numbers.
PASTED_WEIGHT = 0.5
# A report's title (its first line, when more follows) is the reporter's own summary of the
# problem: its words count this much more, once, than the same words in the story below it.
TITLE_WEIGHT = 1.0
# In a report (an issue's paragraphs), a word no definition of the repository is named with
# (``regression``, ``scenario``, ``weeks``) is the reporter's prose: rare in the index because
# code rarely says it, not because it is the point; it would rank code by its comments. Such a
# word weighs this much of its IDF (numbers, a status code or a port, are not prose). On the
# issue-report set's public part, 1.0 -> 0.0 moved code coverage at 8,000 from 0.75 to 0.79
# (0.2: 0.75, 0.5: 0.75) and left the other sets unchanged.
PROSE_ONLY_WEIGHT = 0.0
# A term the user wrote as an identifier (``resolve_redirects``, ``Session.send``, ``foo()``)
# was chosen on purpose: its parts count this much more than the same words in prose.
IDENTIFIER_EMPHASIS = 1.5


# BM25 (Robertson): a term's count saturates around K1. B, the share of a definition's length
# held against it, is low for code: the function a fix goes into is often long (it is where the
# logic is), and the usual 0.75 let two-line helpers that mention a word once outrank it.
BM25_K1 = 1.2
BM25_B = 0.3
# A task term in the definition's own name (``resolve_redirects`` for "redirect") counts this
# much of its weight on top of its body occurrences: names say what code is for, but one word
# of a long report matching a name is not enough on its own.
W_NAME = 0.5


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light stem (plural, -ed, -ing, final -e/-y) so a task's inflections meet the code's names."""
    w = word.lower()
    if len(w) <= 3:
        return w
    if w.endswith("ies") and len(w) > 4:
        w = w[:-3] + "i"
    elif w.endswith(("sses", "ches", "shes", "xes", "zes")):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[: -len(suffix)]
            if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]  # stopped -> stop, running -> run
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    elif len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    return w


@lru_cache(maxsize=1 << 16)
def _word_stems(token: str) -> tuple[str, ...]:
    if token.isdigit():
        return (token,)
    parts = split_identifier(token) or [token.lower()]
    return tuple(stem(p) for p in parts if len(p) >= 2)


def tokens(text: str) -> list[str]:
    """Stems of every word and identifier part of ``text``, in order (duplicates kept)."""
    if len(text) <= MAX_CACHED_LINE:
        return list(_line_stems(text))
    out: list[str] = []
    for word in _TOKEN.findall(text):
        out.extend(_word_stems(word))
    return out


# Lines up to this long are tokenized once per process (code repeats its lines: ``return
# self``, ``}``, imports); longer texts are tokenized each time.
MAX_CACHED_LINE = 200


@lru_cache(maxsize=1 << 17)
def _line_stems(line: str) -> tuple[str, ...]:
    out: list[str] = []
    for word in _TOKEN.findall(line):
        out.extend(_word_stems(word))
    return tuple(out)


DocumentFrequencies = Callable[[Sequence[str]], tuple[int, Mapping[str, int]]]


@dataclass(frozen=True)
class TaskTerms:
    """The informative terms of one task: stem -> weight, and the task's word for each stem."""

    weights: Mapping[str, float]
    words: Mapping[str, str]
    order: tuple[str, ...]  # stems by first appearance in the task

    @property
    def total(self) -> float:
        return sum(self.weights.values())

    def weight(self, stems: Iterable[str]) -> float:
        """The summed weight of the distinct task terms among ``stems``."""
        return sum(self.weights.get(s, 0.0) for s in set(stems))

    def matched(self, stems: Iterable[str]) -> list[str]:
        """Task words found among ``stems``, strongest first (for reasons shown to people)."""
        found = {s for s in stems if s in self.weights}
        return [self.words[s] for s in sorted(found, key=lambda s: -self.weights[s])]

    def query(self, limit: int) -> str:
        """The ``limit`` strongest terms as words, in the task's order: a focused search query."""
        top = set(sorted(self.weights, key=lambda s: -self.weights[s])[:limit])
        return " ".join(self.words[s] for s in self.order if s in top)


NameFrequencies = Callable[[Sequence[str]], Mapping[str, int]]


def task_terms(
    task: str,
    frequencies: DocumentFrequencies | None,
    pasted: str = "",
    title: str = "",
    names: NameFrequencies | None = None,
) -> TaskTerms:
    """Weigh the words of ``task``: IDF in the repository times the task's own emphasis.

    ``frequencies(words)`` returns the index's chunk count and each word's document frequency;
    without it (no index) every term weighs 1. Terms absent from the index cannot find anything
    and are dropped; terms in most chunks (``self``) keep the small weight their IDF gives.
    ``pasted`` is the code and output the user pasted, weighed by ``PASTED_WEIGHT``; ``title`` a
    report's title (part of ``task``), whose words count ``TITLE_WEIGHT`` more. ``names(words)``,
    given for a report, counts each word's definitions named with it: a word with none weighs
    ``PROSE_ONLY_WEIGHT`` (unless no word of the task names anything).
    """
    counts: dict[str, float] = {}
    words: dict[str, str] = {}
    order: list[str] = []
    for match in re.finditer(r"[\w.()]+", _VERSION.sub(" ", task)):
        raw = match.group(0)
        emphasis = IDENTIFIER_EMPHASIS if _IDENTIFIER.search(raw) else 1.0
        for token in _TOKEN.finditer(raw):
            text = token.group(0)
            parts = [text] if text.isdigit() else (split_identifier(text) or [text.lower()])
            for part in parts:
                if len(part) < 2 or part in STOPWORDS or (len(part) < 3 and not part.isdigit()):
                    continue
                s = stem(part)
                if s not in counts:
                    order.append(s)
                    words[s] = part
                    counts[s] = 0.0
                counts[s] += emphasis
    for s in {stem(w) for w in _words(title)}:
        if s in counts:
            counts[s] += TITLE_WEIGHT
    pasted_words: dict[str, str] = {}
    for token in _TOKEN.findall(_VERSION.sub(" ", pasted)):
        if token.isdigit():
            continue
        for part in split_identifier(token) or [token.lower()]:
            if len(part) >= 3 and part not in STOPWORDS:
                pasted_words.setdefault(stem(part), part)
    for s, part in pasted_words.items():
        if s not in counts:
            order.append(s)
            words[s] = part
            counts[s] = 0.0
        counts[s] += PASTED_WEIGHT
    if not counts:
        return TaskTerms({}, {}, ())
    weights: dict[str, float] = {}
    total, df = frequencies(list(words.values())) if frequencies is not None else (0, {})
    for s, count in counts.items():
        # Repetition counts, but less and less: a word said three times is not three times the
        # point; a word only pasted counts PASTED_WEIGHT.
        emphasis = 1.0 + math.log(count) if count >= 1 else count
        if total <= 0:
            weights[s] = emphasis
            continue
        n = df.get(words[s], 0)
        if n <= 0:
            continue
        idf = math.log(1.0 + (total - n + 0.5) / (n + 0.5))
        weights[s] = idf * emphasis
    if names is not None and weights:
        named = names([words[s] for s in weights if not words[s].isdigit()])
        prose = [s for s in weights if not words[s].isdigit() and not named.get(words[s], 0)]
        if len(prose) < len(weights):
            for s in prose:
                weights[s] *= PROSE_ONLY_WEIGHT
            weights = {s: w for s, w in weights.items() if w > 0}
    kept = sorted(weights, key=lambda s: -weights[s])[:MAX_TASK_TERMS]
    return TaskTerms(
        {s: weights[s] for s in kept},
        {s: words[s] for s in kept},
        tuple(s for s in order if s in kept),
    )


def _words(text: str) -> list[str]:
    """The identifier parts of ``text`` that can be terms (as ``task_terms`` reads them)."""
    out = []
    for token in _TOKEN.findall(_VERSION.sub(" ", text)):
        for part in [token] if token.isdigit() else (split_identifier(token) or [token.lower()]):
            if len(part) >= 2 and part not in STOPWORDS:
                out.append(part)
    return out


def term_counts(stems: Iterable[str], terms: TaskTerms) -> tuple[dict[str, int], int]:
    """(count of each task term among ``stems``, number of stems): what ``lexical_score`` needs."""
    weights = terms.weights
    tf: dict[str, int] = {}
    length = 0
    for s in stems:
        length += 1
        if s in weights:
            tf[s] = tf.get(s, 0) + 1
    return tf, length


def lexical_score(
    tf: Mapping[str, int], length: int, avgdl: float, name_terms: Iterable[str], terms: TaskTerms
) -> tuple[float, float]:
    """(BM25 of the task over a definition plus its name's terms, share of the task's weight it holds)."""
    weights = terms.weights
    norm = BM25_K1 * (1 - BM25_B + BM25_B * length / max(avgdl, 1.0))
    body = sum(weights[t] * n * (BM25_K1 + 1) / (n + norm) for t, n in tf.items() if t in weights)
    named = {t for t in name_terms if t in weights}
    score = body + W_NAME * sum(weights[t] for t in named)
    found = set(tf) | named
    return score, sum(weights[t] for t in found) / (terms.total or 1.0)
