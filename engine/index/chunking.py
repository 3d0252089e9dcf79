"""Cut files into retrieval chunks: symbol-boundary chunks for code, line windows for prose.

Owns the chunk model (stable ids, line ranges, content hashes) and identifier
splitting. It reads no files and opens no databases: callers pass text and symbols. Text is
redacted (``engine.policy.redaction``, line breaks kept) before it is cut, so no chunk, FTS
row or embedding request ever carries a secret.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import PurePosixPath

from engine.policy.redaction import redact
from engine.semantic.model import Symbol

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
_CASE_CHANGE = re.compile(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]")
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
    parts: str = ""  # identifier parts of the text (see identifier_parts)


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


def mixed_case_words(text: str) -> frozenset[str]:
    """The camelCase/PascalCase words of ``text`` (getUserById, HttpResponse, HTTPServer)."""
    return frozenset(
        w for w in set(_WORD.findall(text)) if not w.islower() and not w.isupper() and _CASE_CHANGE.search(w)
    )


def identifier_parts(text: str, candidates: frozenset[str] | None = None) -> str:
    """The split parts of every camelCase/PascalCase identifier in ``text``, deduplicated.

    snake_case and kebab-case need no help: the FTS tokenizer already splits at ``_`` and
    ``-``. Mixed-case words are the ones a word query cannot reach without this column.
    ``candidates`` (the mixed-case words of the whole file) makes this a few substring tests
    per chunk instead of a scan of every word.
    """
    if candidates is None:
        words: Iterable[str] = mixed_case_words(text)
    else:
        words = [w for w in candidates if w in text]
    seen: set[str] = set()
    for word in words:
        seen.update(_split_cached(word))
    return " ".join(sorted(seen))


class _LinePartsIndex:
    """The mixed-case words of one file by line, so a chunk's identifier parts are a union over its lines.

    Equal to ``identifier_parts(chunk_text, mixed_case_words(file_text))`` (a word never spans a line
    break), but each word is located once per file instead of searched for in every chunk.
    """

    def __init__(self, text: str) -> None:
        self.by_line: dict[int, set[str]] = {}
        mixed = mixed_case_words(text)
        if not mixed:
            return
        starts = [0]  # offset of each line, with splitlines()'s idea of a line break
        for line in text.splitlines(keepends=True):
            starts.append(starts[-1] + len(line))
        for word in mixed:
            pos = text.find(word)
            while pos != -1:
                self.by_line.setdefault(bisect_right(starts, pos), set()).add(word)
                # The next occurrence on a later line is all that matters for this word.
                line_end = starts[min(bisect_right(starts, pos), len(starts) - 1)]
                pos = text.find(word, max(pos + 1, line_end))

    def parts(self, start: int, end: int) -> str:
        if not self.by_line:
            return ""
        words: set[str] = set()
        for lineno in range(start, end + 1):
            found = self.by_line.get(lineno)
            if found:
                words |= found
        seen: set[str] = set()
        for word in words:
            seen.update(_split_cached(word))
        return " ".join(sorted(seen))


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def chunk_id(file: str, anchor: str, part: int) -> str:
    """Stable id: path + symbol id (or line window) + part. Never the content."""
    raw = f"{file}\x00{anchor}\x00{part}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:24]


def is_prose(path: str) -> bool:
    return PurePosixPath(path).suffix.lower() in PROSE_EXTENSIONS


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
    return _window_chunks(path, lines, windows, "L", "prose", language, _LinePartsIndex(text))


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
    stem = PurePosixPath(path).stem
    for lo, hi in windows:
        body = _slice(lines, lo, hi)
        if not body.strip():
            continue
        chunks.append(
            Chunk(
                id=chunk_id(path, f"{prefix}{lo}", 0),
                file=path,
                start_line=lo,
                end_line=hi,
                kind=kind,
                language=language,
                content_hash=content_hash(body),
                text=body,
                name=stem,
                parts=index.parts(lo, hi),
            )
        )
    return chunks


def _contains(outer: Symbol, inner: Symbol) -> bool:
    return (
        outer is not inner
        and outer.start_line <= inner.start_line
        and inner.end_line <= outer.end_line
        and (outer.start_line, outer.end_line) != (inner.start_line, inner.end_line)
    )


def _symbol_chunks(
    path: str, lines: Sequence[str], sym: Symbol, members: list[Symbol], index: _LinePartsIndex
) -> list[Chunk]:
    end = min(sym.end_line, len(lines))
    start = max(1, sym.start_line)
    sig_doc = "\n".join(x for x in (sym.signature, sym.doc) if x)
    if sym.kind in HEADER_KINDS:
        kind = "header"
        if members:
            end = max(start, min(m.start_line for m in members) - 1)
        member_sigs = [m.signature or m.name for m in members[:MAX_MEMBER_SIGNATURES]]
        if member_sigs:
            sig_doc = sig_doc + "\n" + "\n".join(member_sigs)
        spans = _windows(start, min(end, start + MAX_SYMBOL_LINES - 1), MAX_SYMBOL_LINES, 0)
    else:
        kind = "symbol"
        spans = _windows(start, end, MAX_SYMBOL_LINES, SYMBOL_OVERLAP)
    chunks = []
    for part, (lo, hi) in enumerate(spans):
        body = _slice(lines, lo, hi)
        chunks.append(
            Chunk(
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


def _module_chunks(
    path: str, lines: Sequence[str], covered: list[bool], language: str, index: _LinePartsIndex
) -> list[Chunk]:
    chunks: list[Chunk] = []
    run_start: int | None = None
    for lineno in range(1, len(lines) + 2):
        free = lineno <= len(lines) and not covered[lineno - 1]
        if free and run_start is None:
            run_start = lineno
        elif not free and run_start is not None:
            run_end = lineno - 1
            windows = _windows(run_start, run_end, MAX_SYMBOL_LINES, SYMBOL_OVERLAP)
            chunks.extend(_window_chunks(path, lines, windows, "M", "module", language, index))
            run_start = None
    return chunks


def chunk_code(path: str, text: str, symbols: Iterable[Symbol], language: str) -> list[Chunk]:
    """Symbol-boundary chunks plus module-level chunks for the lines no symbol chunk covers."""
    lines = text.splitlines()
    index = _LinePartsIndex(text)
    syms = sorted(symbols, key=lambda s: (s.start_line, -s.end_line))
    covered = [False] * len(lines)
    chunks: list[Chunk] = []
    for i, sym in enumerate(syms):
        if sym.kind not in BODY_KINDS and sym.kind not in HEADER_KINDS:
            continue
        members = []
        if sym.kind in HEADER_KINDS:
            # sorted by start line: members are the following symbols that start inside this one
            for other in syms[i + 1 :]:
                if other.start_line > sym.end_line:
                    break
                if _contains(sym, other):
                    members.append(other)
        made = _symbol_chunks(path, lines, sym, members, index)
        for chunk in made:
            for i in range(chunk.start_line - 1, min(chunk.end_line, len(lines))):
                covered[i] = True
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
