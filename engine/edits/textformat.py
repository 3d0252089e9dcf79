"""How a file's bytes map to the text an edit works on, and back.

Edits see LF-only text without a BOM; ``TextFormat`` remembers the BOM, the line
ending and the final newline so that writing restores them exactly. No disk I/O.
"""

from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass
from typing import Any

UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class TextFormat:
    """The byte-level conventions of one file."""

    bom: bool = False
    newline: str = "\n"
    final_newline: bool = True
    # For a file that mixes CRLF and LF: each original line's ending in order, "r" for CRLF and
    # "n" for LF. Empty when the file uses one ending throughout (``newline``).
    endings: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TextFormat:
        return cls(
            bool(data.get("bom")),
            str(data.get("newline", "\n")),
            bool(data.get("final_newline", True)),
            str(data.get("endings", "")),
        )


def sha256_bytes(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def decode(data: bytes) -> tuple[str, TextFormat]:
    """Bytes (already checked to be UTF-8 text) → LF text and its format."""
    bom = data.startswith(UTF8_BOM)
    text = data[len(UTF8_BOM) :].decode("utf-8") if bom else data.decode("utf-8")
    crlf = text.count("\r\n")
    lone_lf = text.count("\n") - crlf
    newline = "\r\n" if crlf > lone_lf else "\n"
    endings = ""
    if crlf and lone_lf:  # mixed: remember every line's own ending
        endings = "".join("r" if line.endswith("\r") else "n" for line in text.split("\n")[:-1])
    text = text.replace("\r\n", "\n")
    final = text.endswith("\n") or text == ""
    return text, TextFormat(bom=bom, newline=newline, final_newline=final, endings=endings)


def conform(text: str, fmt: TextFormat) -> str:
    """Give ``text`` (LF) the file's final-newline convention."""
    text = text.replace("\r\n", "\n")
    if not text:
        return text
    if fmt.final_newline and not text.endswith("\n"):
        return text + "\n"
    if not fmt.final_newline:
        return text[:-1] if text.endswith("\n") else text
    return text


def encode(text: str, fmt: TextFormat, original: str | None = None) -> bytes:
    """LF text → bytes with the file's BOM and line endings.

    For a file with mixed endings, ``original`` (the LF text ``fmt`` was decoded with) lets
    every line kept or edited in place keep its own ending; only new lines take the majority one.
    """
    body = text.replace("\r\n", "\n")
    if fmt.endings and original is not None and original.count("\n") == len(fmt.endings):
        body = _with_original_endings(body, original, fmt)
    elif fmt.newline == "\r\n":
        body = body.replace("\n", "\r\n")
    raw = body.encode("utf-8")
    return UTF8_BOM + raw if fmt.bom else raw


def _with_original_endings(body: str, original: str, fmt: TextFormat) -> str:
    old, new = original.split("\n"), body.split("\n")
    ends = [fmt.newline] * (len(new) - 1)
    for i, j in _line_pairs(old, new):
        if i < len(fmt.endings) and j < len(ends):
            ends[j] = "\r\n" if fmt.endings[i] == "r" else "\n"
    return "".join(line + end for line, end in zip(new, ends, strict=False)) + new[-1]


def _line_pairs(old: list[str], new: list[str]) -> list[tuple[int, int]]:
    """Which old line each new line is (kept, or changed in place), like a diff would pair them.

    The common head and tail pair first, so that among identical lines (blank ones, braces) an
    insertion or deletion shifts nothing around it; the middle is matched by difflib.
    """
    from difflib import SequenceMatcher

    shortest = min(len(old), len(new))
    head = 0
    while head < shortest and old[head] == new[head]:
        head += 1
    tail = 0
    while tail < shortest - head and old[-1 - tail] == new[-1 - tail]:
        tail += 1
    pairs = [(i, i) for i in range(head)]
    pairs += [(len(old) - 1 - k, len(new) - 1 - k) for k in range(tail)]
    middle_old, middle_new = old[head : len(old) - tail], new[head : len(new) - tail]
    # autojunk off: repeated lines must still pair up with themselves.
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, middle_old, middle_new, autojunk=False).get_opcodes():
        if tag in ("equal", "replace"):  # a replaced line keeps its place's ending
            pairs += [(head + i, head + j) for i, j in zip(range(i1, i2), range(j1, j2), strict=False)]
    return pairs
