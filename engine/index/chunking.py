"""Cut files into retrieval chunks: symbol-boundary chunks for code, line windows for prose.

Owns the chunk model (stable ids, line ranges, content hashes) and identifier
splitting. It reads no files and opens no databases: callers pass text and symbols. Text is
redacted (``engine.policy.redaction``, line breaks kept) before it is cut, so no chunk, FTS
row or embedding request ever carries a secret.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from itertools import accumulate, chain, count
from operator import add
from pathlib import PurePosixPath

from engine.policy.redaction import redact, redact_many
from engine.semantic.model import Symbol

# Raised whenever the chunks made from unchanged files change: an index chunked by another version is
# chunked again on the next refresh, keeping the vectors of every chunk whose id and text stayed the same.
# 2: a definition's leading comment is cut from the module code above it.
# 3: the redactor leaves a bare code value before a ``,`` or ``;`` alone (chunks are cut from the
#    redacted text, so what it masks is part of what a chunk is).
CHUNKING_VERSION = "4"
# Symbols longer than this are split so one chunk stays within an embedding model's reach.
MAX_SYMBOL_LINES = 120
# Lines shared by consecutive parts of a split symbol, so a statement cut in two is seen whole once.
SYMBOL_OVERLAP = 20
# Prose and config windows (LocalAgent ADR): 200 lines, 50 of them shared with the next window.
PROSE_WINDOW = 200
PROSE_OVERLAP = 50
# Extensions chunked as prose/config in line windows rather than by symbols.
PROSE_EXTENSIONS = frozenset({".md", ".markdown", ".rst", ".txt", ".toml", ".yaml", ".yml", ".json"})
# Kinds that get one chunk for their whole body.
BODY_KINDS = frozenset({"function", "method", "macro"})
# Kinds that get a header chunk (declaration up to the first member) plus member signatures.
HEADER_KINDS = frozenset({"class", "struct", "interface", "trait", "enum", "namespace", "type", "module"})
# Member signatures listed in a class chunk's signature column: enough to name the API, bounded.
MAX_MEMBER_SIGNATURES = 60

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
# A case change inside a word: getUserById, HttpResponse, HTTPServer.
# Written to start with [A-Z] (same matches as ``[a-z0-9][A-Z]|[A-Z]{2}[a-z]``) so the regex engine
# skips ahead to uppercase letters instead of trying every position: 3-4 times faster on code.
_CASE_CHANGE = re.compile(r"[A-Z](?:(?<=[a-z0-9][A-Z])|(?=[A-Z][a-z]))")
_SEPARATORS = re.compile(r"[_\-\s.]+")
_CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True)
class Chunk:
    """One unit of retrieval: a symbol (or part of one), a class header, module lines or a prose window."""

    id: str
    file: str
    start_line: int
    end_line: int
    kind: str  # "symbol" | "header" | "module" | "prose"
    language: str
    content_hash: str
    text: str
    name: str = ""
    qualified_name: str | None = None
    symbol_id: str | None = None
    signature_doc: str = ""
    part: int = 0
    parts: str = ""  # the parts of the text's mixed-case words (see camel_case_parts)


@lru_cache(maxsize=1 << 16)
def _split_cached(word: str) -> tuple[str, ...]:
    out: list[str] = []
    for piece in _SEPARATORS.split(word):
        if piece:
            out.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return tuple(out)


def split_identifier(word: str) -> list[str]:
    """``getUserById`` -> get user by id; ``should_strip_auth`` and ``kebab-case`` split too."""
    return list(_split_cached(word))


@lru_cache(maxsize=1 << 16)
def _is_mixed(word: str) -> bool:
    return not word.islower() and not word.isupper() and _CASE_CHANGE.search(word) is not None


def mixed_case_words(text: str) -> frozenset[str]:
    """The camelCase/PascalCase words of ``text`` (getUserById, HttpResponse, HTTPServer)."""
    if _CASE_CHANGE.search(text) is None:
        return frozenset()
    return frozenset(w for w in set(_WORD.findall(text)) if _is_mixed(w))


def camel_case_parts(text: str, candidates: frozenset[str] | None = None) -> str:
    """The split parts of every camelCase/PascalCase identifier in ``text``, deduplicated.

    snake_case and kebab-case need no help: the FTS tokenizer already splits at ``_`` and
    ``-``. Mixed-case words are the ones a word query cannot reach without this column.
    ``candidates`` (the mixed-case words of the whole file, if known) narrows the words looked at.
    """
    words = mixed_case_words(text)
    if candidates is not None:
        words = words & candidates
    seen: set[str] = set()
    for word in words:
        seen.update(_split_cached(word))
    return " ".join(sorted(seen))


class _LinePartsIndex:
    """The identifier parts of one file by line, so a chunk's parts are a union over its lines.

    Equal to ``camel_case_parts(chunk_text)`` (a word never spans a line break), with one pass over the
    file's lines: only lines with a case change inside a word (a few in most code) are split into words.
    Each such line keeps the parts of its mixed-case words, and a chunk looks up (by bisection) only the
    lines that have some, instead of every line of its range: chunking Django's 2,833 code files,
    0.81 -> 0.77 s.
    """

    def __init__(self, text: str, lines: Sequence[str] | None = None) -> None:
        # Line numbers (ascending) that hold a mixed-case word, and the parts of those words.
        self.linenos: list[int] = []
        self.parts_of: list[frozenset[str]] = []
        search = _CASE_CHANGE.search
        hit = search(text)
        if hit is None:
            return
        if lines is None:
            lines = text.splitlines()
        # Where each line ends (its break included), with splitlines()'s idea of a line break. Every
        # break but "\r\n" is one character: without one, a line's end is the lengths of the lines up
        # to it plus their count, summed in C (no second list of 477k lines for Django).
        if "\r\n" in text:
            ends = list(accumulate(map(len, text.splitlines(keepends=True))))
        else:
            ends = list(map(add, accumulate(map(len, lines)), count(1)))
        words_of = _WORD.findall
        mixed = _is_mixed
        split = _split_cached
        while hit is not None:  # one step per line that has a case change, not per line
            index = bisect_right(ends, hit.start())
            found = frozenset(chain.from_iterable(map(split, filter(mixed, words_of(lines[index])))))
            if found:
                self.linenos.append(index + 1)
                self.parts_of.append(found)
            hit = search(text, ends[index]) if index + 1 < len(ends) else None

    def parts(self, start: int, end: int) -> str:
        """The sorted, space-separated identifier parts of lines ``start..end`` (1-based, inclusive)."""
        linenos = self.linenos
        lo = bisect_left(linenos, start)
        hi = bisect_right(linenos, end, lo)
        if lo == hi:
            return ""
        return " ".join(sorted(frozenset().union(*self.parts_of[lo:hi])))


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def text_hash(text: str) -> int:
    """A 64-bit fingerprint of a chunk's text as the file holds it (``chunk_source`` checks it)."""
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def source_lines(text: str) -> list[str]:
    """A file's text cut into lines the way every chunk's line numbers count them."""
    return text.splitlines()


def lines_text(lines: Sequence[str], start: int, end: int) -> str:
    """Lines ``start..end`` (1-based, inclusive) joined: exactly a chunk's text."""
    return "\n".join(lines[start - 1 : end])


def chunk_id(file: str, anchor: str, part: int) -> str:
    """Stable id: path + symbol id (or line window) + part. Never the content."""
    raw = f"{file}\x00{anchor}\x00{part}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:24]


def is_prose(path: str) -> bool:
    return _suffix(path) in PROSE_EXTENSIONS


@lru_cache(maxsize=4096)
def _suffix(path: str) -> str:
    """``PurePosixPath(path).suffix.lower()`` (asked several times per file)."""
    return PurePosixPath(path).suffix.lower()


def _windows(start: int, end: int, size: int, overlap: int) -> list[tuple[int, int]]:
    """1-based inclusive windows covering ``start..end``."""
    if end < start:
        return []
    out = []
    step = max(1, size - overlap)
    lo = start
    while True:
        hi = min(end, lo + size - 1)
        out.append((lo, hi))
        if hi >= end:
            break
        lo += step
    return out


def _slice(lines: Sequence[str], start: int, end: int) -> str:
    return "\n".join(lines[start - 1 : end])


def chunk_prose(path: str, text: str, language: str = "text") -> list[Chunk]:
    lines = text.splitlines()
    windows = _windows(1, len(lines), PROSE_WINDOW, PROSE_OVERLAP)
    return _window_chunks(path, lines, windows, "L", "prose", language, _LinePartsIndex(text, lines))


def _window_chunks(
    path: str,
    lines: Sequence[str],
    windows: list[tuple[int, int]],
    prefix: str,
    kind: str,
    language: str,
    index: _LinePartsIndex,
) -> list[Chunk]:
    """One chunk per non-blank line window, named after the file (prose and module-level code)."""
    chunks = []
    stem = _stem(path)
    for lo, hi in windows:
        body = _slice(lines, lo, hi)
        if not body.strip():
            continue
        chunks.append(
            _new_chunk(
                id=chunk_id(path, f"{prefix}{lo}", 0),
                file=path,
                start_line=lo,
                end_line=hi,
                kind=kind,
                language=language,
                content_hash=content_hash(body),
                text=body,
                name=stem,
                qualified_name=None,
                symbol_id=None,
                signature_doc="",
                part=0,
                parts=index.parts(lo, hi),
            )
        )
    return chunks


def _new_chunk(**values: object) -> Chunk:
    """A ``Chunk`` with every field given, its ``__dict__`` filled at once: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__`` (three times slower; 45k chunks on
    Django). A test checks it equals the ``Chunk`` its constructor makes."""
    chunk: Chunk = object.__new__(Chunk)
    object.__setattr__(chunk, "__dict__", values)
    return chunk


@lru_cache(maxsize=4096)
def _stem(path: str) -> str:
    """``PurePosixPath(path).stem``, without building a path object per window."""
    return PurePosixPath(path).stem


def _contains(outer: Symbol, inner: Symbol) -> bool:
    return (
        outer is not inner
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
        and (outer.start_line, outer.end_line) != (inner.start_line, inner.end_line)
    )


def _sig_doc(sym: Symbol, members: list[Symbol]) -> str:
    """A symbol chunk's signature and doc (a class's: with its members' signatures), unredacted."""
    sig_doc = "\n".join(x for x in (sym.signature, sym.doc) if x)
    if sym.kind in HEADER_KINDS:
        member_sigs = [m.signature or m.name for m in members[:MAX_MEMBER_SIGNATURES]]
        if member_sigs:
            sig_doc = sig_doc + "\n" + "\n".join(member_sigs)
    return sig_doc


def _symbol_chunks(
    path: str, lines: Sequence[str], sym: Symbol, members: list[Symbol], index: _LinePartsIndex, sig_doc: str
) -> list[Chunk]:
    """The chunks of one symbol; ``sig_doc`` is ``_sig_doc(sym, members)`` redacted."""
    end = min(sym.end_line, len(lines))
    start = max(1, sym.start_line)
    if sym.kind in HEADER_KINDS:
        kind = "header"
        if members:
            end = max(start, min(m.start_line for m in members) - 1)
        spans = _windows(start, min(end, start + MAX_SYMBOL_LINES - 1), MAX_SYMBOL_LINES, 0)
    else:
        kind = "symbol"
        spans = _windows(start, end, MAX_SYMBOL_LINES, SYMBOL_OVERLAP)
    chunks = []
    for part, (lo, hi) in enumerate(spans):
        body = _slice(lines, lo, hi)
        chunks.append(
            _new_chunk(
                id=chunk_id(path, sym.id, part),
                file=path,
                start_line=lo,
                end_line=hi,
                kind=kind,
                language=sym.language,
                content_hash=content_hash(f"{sym.qualified_name}\n{sig_doc}\n{body}"),
                text=body,
                name=sym.name,
                qualified_name=sym.qualified_name,
                symbol_id=sym.id,
                signature_doc=sig_doc,
                part=part,
                parts=index.parts(lo, hi),
            )
        )
    return chunks


# How a comment line starts, in the languages the engine parses. ``#`` counts only before a space, a
# second ``#`` or the line's end, so C's ``#include`` and ``#define`` stay code.
COMMENT_LINE = re.compile(r"(?://|/\*|\*|#(?:[ \t#!]|$)|--|;)")


def is_comment_block(text: str) -> bool:
    """True when every non-blank line of ``text`` is a comment line (and there is one)."""
    lines = [line.strip() for line in text.splitlines()]
    return any(lines) and all(not line or COMMENT_LINE.match(line) for line in lines)


def _leading_comment(lines: Sequence[str], start: int, end: int) -> int | None:
    """Where the comment block that ends at line ``end`` (1-based) begins, when lines before it in
    ``start..end`` are not part of it; None when line ``end`` is no comment or the block is the whole run.

    A block whose first line is a continuation (``* ...``) or a closer (``*/``) has its opener
    further up, past a line that does not look like a comment; it is left whole.
    """
    line = end
    while line >= start and (text := lines[line - 1].strip()) and COMMENT_LINE.match(text):
        line -= 1
    first = line + 1
    if first > end or first == start or lines[first - 1].lstrip().startswith("*"):
        return None
    return first


def _module_chunks(
    path: str, lines: Sequence[str], covered: list[tuple[int, int]], language: str, index: _LinePartsIndex
) -> list[Chunk]:
    """Line windows over the runs of lines that no span in ``covered`` (1-based, inclusive) holds."""
    chunks: list[Chunk] = []
    next_free = 1
    for lo, hi in sorted(covered) + [(len(lines) + 1, len(lines) + 1)]:
        if lo > next_free:
            run_end = min(lo - 1, len(lines))
            if run_end >= next_free:
                # The comment right above a definition (a JSDoc block under a file's imports) is a
                # chunk of its own: search hands such a chunk to the definition it describes.
                split = _leading_comment(lines, next_free, run_end) if lo <= len(lines) else None
                runs = [(next_free, run_end)] if split is None else [(next_free, split - 1), (split, run_end)]
                for first, last in runs:
                    windows = _windows(first, last, MAX_SYMBOL_LINES, SYMBOL_OVERLAP)
                    chunks.extend(_window_chunks(path, lines, windows, "M", "module", language, index))
        next_free = max(next_free, hi + 1)
    return chunks


def chunk_code(path: str, text: str, symbols: Iterable[Symbol], language: str) -> list[Chunk]:
    """Symbol-boundary chunks plus module-level chunks for the lines no symbol chunk covers."""
    lines = text.splitlines()
    index = _LinePartsIndex(text, lines)
    syms = sorted(symbols, key=lambda s: (s.start_line, -s.end_line))
    covered: list[tuple[int, int]] = []  # line spans the symbol chunks hold
    chunks: list[Chunk] = []
    count = len(syms)
    chunked: list[tuple[Symbol, list[Symbol]]] = []
    for i, sym in enumerate(syms):
        if sym.kind not in BODY_KINDS and sym.kind not in HEADER_KINDS:
            continue
        members = []
        if sym.kind in HEADER_KINDS:
            # sorted by start line: members are the following symbols that start inside this one
            for j in range(i + 1, count):
                other = syms[j]
                if other.start_line > sym.end_line:
                    break
                if _contains(sym, other):
                    members.append(other)
        chunked.append((sym, members))
    # Signatures and docstrings come from the unredacted parse (a docstring is dedented, a signature
    # may be re-joined), so the redacted file text does not cover them: they are redacted here.
    sig_docs = redact_many([_sig_doc(sym, members) for sym, members in chunked])
    for (sym, members), sig_doc in zip(chunked, sig_docs, strict=True):
        made = _symbol_chunks(path, lines, sym, members, index, sig_doc)
        covered.extend((c.start_line, min(c.end_line, len(lines))) for c in made)
        chunks.extend(made)
    chunks.extend(_module_chunks(path, lines, covered, language, index))
    chunks.sort(key=lambda c: (c.start_line, c.end_line, c.id))
    return _unique_ids(chunks)


def _unique_ids(chunks: list[Chunk]) -> list[Chunk]:
    """Two definitions with one symbol id (``if PY3: def f`` / ``else: def f``) still get distinct chunks."""
    seen: set[str] = set()
    out = []
    for c in chunks:
        if c.id in seen:
            c = replace(c, id=chunk_id(c.file, f"{c.symbol_id}@{c.start_line}", c.part))
        seen.add(c.id)
        out.append(c)
    return out


def chunk_file(path: str, text: str, symbols: Iterable[Symbol] = (), language: str = "text") -> list[Chunk]:
    """Chunk one file: prose/config by windows, anything else by symbols and leftovers."""
    text = redact(text)
    if is_prose(path):
        return chunk_prose(path, text, language if language != "text" else _prose_language(path))
    return chunk_code(path, text, symbols, language)


def _prose_language(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower().lstrip(".")
    return {"md": "markdown", "markdown": "markdown", "yml": "yaml"}.get(suffix, suffix or "text")
