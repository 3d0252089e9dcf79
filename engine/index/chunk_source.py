"""A chunk's text, read back from its file and checked against the hash stored with the chunk.

index.db keeps no copy of the source: a chunk row names its file and lines, and this module
is the one place that turns those into text (for snippets, reranking and embeddings). A file
that changed since it was indexed yields no text for its stale chunks rather than wrong text.
The index cut its chunks from the file's redacted text, so a chunk that holds a secret (or what
looks like one) is handed back masked, exactly as it was indexed, never raw.
Owns ``read_source``, the single file read of the text index, which resolves each path and
keeps it inside the repository. It never writes and never opens a database.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from engine.index.chunking import lines_text, source_lines, text_hash
from engine.policy.redaction import redact

log = logging.getLogger("semfora.index.chunk_source")

# Bytes inspected for a NUL to call a file binary (discovery uses the same sniff).
BINARY_SNIFF_BYTES = 8192


class ChunkSpan(Protocol):
    """What locating a chunk's text needs (``fts.ChunkRow`` has it)."""

    @property
    def chunk_id(self) -> str: ...
    @property
    def file(self) -> str: ...
    @property
    def start_line(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def text_hash(self) -> int: ...


def read_source(root: Path, rel: str, real_dirs: dict[str, bool] | None = None) -> str | None:
    """The text of the repository file ``rel`` (UTF-8, bad bytes replaced), or None.

    None when the path leaves the repository (through ``..`` or a symlink), cannot be read,
    or is binary. ``real_dirs`` (one dict per batch of reads) remembers which directories
    were checked, so a batch resolves each directory once instead of every path component
    of every file.
    """
    base = os.path.realpath(root)
    full = os.path.join(base, rel)
    parent, _sep, _name = full.rpartition(os.sep)
    inside = real_dirs.get(parent) if real_dirs is not None else None
    if inside is None:
        real = os.path.realpath(parent)
        inside = real == base or real.startswith(base + os.sep)
        if real_dirs is not None:
            real_dirs[parent] = inside
    if not inside or os.path.islink(full):
        log.warning("not reading %s: it resolves outside the repository", rel)
        return None
    try:
        with open(full, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        # Deleted since it was indexed: ordinary, and the caller says so (search: INDEX_STALE).
        log.info("cannot read %s: it was deleted", rel)
        return None
    except OSError as exc:
        log.warning("cannot read %s: %s", rel, exc.strerror)
        return None
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return None
    from engine.repo.text import decode_source

    return decode_source(data).text


def chunk_texts(root: Path, rows: Iterable[ChunkSpan]) -> dict[str, str]:
    """``chunk_id -> text`` for every chunk whose lines still hash to what was indexed.

    Each file is read once however many of its chunks are asked for; a chunk whose file
    changed (or vanished) since it was indexed is left out. A chunk whose raw lines do not
    match is tried once more against the file's redacted text: a chunk with a masked secret
    matches there and comes back masked (before, it came back as nothing, so it was never
    embedded, rescored or shown, and that is where auth and key-handling code lives).
    """
    by_file: dict[str, list[ChunkSpan]] = {}
    for row in rows:
        by_file.setdefault(row.file, []).append(row)
    out: dict[str, str] = {}
    real_dirs: dict[str, bool] = {}
    for file, spans in by_file.items():
        text = read_source(root, file, real_dirs)
        if text is None:
            continue
        lines = source_lines(text)
        masked: list[str] | None = None  # the redacted file's lines, made at most once per file
        for span in spans:
            body = lines_text(lines, span.start_line, span.end_line)
            if text_hash(body) != span.text_hash:
                if masked is None:
                    masked = source_lines(redact(text))
                body = lines_text(masked, span.start_line, span.end_line)
                if text_hash(body) != span.text_hash:
                    continue
            out[span.chunk_id] = body
    return out


def chunk_text(root: Path, row: ChunkSpan) -> str | None:
    """The text of one chunk from its file, or None when the file no longer holds it."""
    return chunk_texts(root, [row]).get(row.chunk_id)
