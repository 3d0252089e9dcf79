"""Cut files into retrieval chunks: symbol-boundary chunks for code, line windows for prose.

Owns the chunk model (stable ids, line ranges, content hashes) and identifier
splitting. It reads no files and opens no databases: callers pass text and symbols.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

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

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*[A-Za-z0-9_]|[A-Za-z_]")
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


def split_identifier(word: str) -> list[str]:
    """``getUserById`` -> get user by id; ``should_strip_auth`` and ``kebab-case`` split too."""
    out: list[str] = []
    for piece in re.split(r"[_\-\s.]+", word):
        if piece:
            out.extend(m.group(0).lower() for m in _CAMEL.finditer(piece))
    return out


def identifier_parts(text: str) -> str:
    """The split parts of every compound identifier in ``text``, deduplicated, space-joined.

    Only identifiers that actually split (camelCase, snake_case, kebab-case) contribute;
    plain words are already indexed by the body column.
    """
    seen: dict[str, None] = {}
    for match in _IDENT.finditer(text):
        word = match.group(0)
        parts = split_identifier(word)
        if len(parts) > 1:
            for part in parts:
                seen.setdefault(part, None)
    return " ".join(seen)


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
    chunks = []
    for lo, hi in _windows(1, len(lines), PROSE_WINDOW, PROSE_OVERLAP):
        body = _slice(lines, lo, hi)
        if not body.strip():
            continue
        chunks.append(
            Chunk(
                id=chunk_id(path, f"L{lo}", 0),
                file=path,
                start_line=lo,
                end_line=hi,
                kind="prose",
                language=language,
                content_hash=content_hash(body),
                text=body,
                name=PurePosixPath(path).stem,
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


def _symbol_chunks(path: str, lines: Sequence[str], sym: Symbol, members: list[Symbol]) -> list[Chunk]:
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
            )
        )
    return chunks


def _module_chunks(path: str, lines: Sequence[str], covered: list[bool], language: str) -> list[Chunk]:
    chunks: list[Chunk] = []
    run_start: int | None = None
    for lineno in range(1, len(lines) + 2):
        free = lineno <= len(lines) and not covered[lineno - 1]
        if free and run_start is None:
            run_start = lineno
        elif not free and run_start is not None:
            run_end = lineno - 1
            for lo, hi in _windows(run_start, run_end, MAX_SYMBOL_LINES, SYMBOL_OVERLAP):
                body = _slice(lines, lo, hi)
                if not body.strip():
                    continue
                chunks.append(
                    Chunk(
                        id=chunk_id(path, f"M{lo}", 0),
                        file=path,
                        start_line=lo,
                        end_line=hi,
                        kind="module",
                        language=language,
                        content_hash=content_hash(body),
                        text=body,
                        name=PurePosixPath(path).stem,
                    )
                )
            run_start = None
    return chunks


def chunk_code(path: str, text: str, symbols: Iterable[Symbol], language: str) -> list[Chunk]:
    """Symbol-boundary chunks plus module-level chunks for the lines no symbol chunk covers."""
    lines = text.splitlines()
    syms = sorted(symbols, key=lambda s: (s.start_line, -s.end_line))
    covered = [False] * len(lines)
    chunks: list[Chunk] = []
    for sym in syms:
        if sym.kind not in BODY_KINDS and sym.kind not in HEADER_KINDS:
            continue
        members = [m for m in syms if _contains(sym, m)] if sym.kind in HEADER_KINDS else []
        made = _symbol_chunks(path, lines, sym, members)
        for chunk in made:
            for i in range(chunk.start_line - 1, min(chunk.end_line, len(lines))):
                covered[i] = True
        chunks.extend(made)
    chunks.extend(_module_chunks(path, lines, covered, language))
    chunks.sort(key=lambda c: (c.start_line, c.end_line, c.id))
    return chunks


def chunk_file(path: str, text: str, symbols: Iterable[Symbol] = (), language: str = "text") -> list[Chunk]:
    """Chunk one file: prose/config by windows, anything else by symbols and leftovers."""
    if is_prose(path):
        return chunk_prose(path, text, language if language != "text" else _prose_language(path))
    return chunk_code(path, text, symbols, language)


def _prose_language(path: str) -> str:
    suffix = PurePosixPath(path).suffix.lower().lstrip(".")
    return {"md": "markdown", "markdown": "markdown", "yml": "yaml"}.get(suffix, suffix or "text")
