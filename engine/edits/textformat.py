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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TextFormat:
        return cls(
            bool(data.get("bom")), str(data.get("newline", "\n")), bool(data.get("final_newline", True))
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
    text = text.replace("\r\n", "\n")
    final = text.endswith("\n") or text == ""
    return text, TextFormat(bom=bom, newline=newline, final_newline=final)


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


def encode(text: str, fmt: TextFormat) -> bytes:
    """LF text → bytes with the file's BOM and line endings."""
    body = text.replace("\r\n", "\n")
    if fmt.newline == "\r\n":
        body = body.replace("\n", "\r\n")
    raw = body.encode("utf-8")
    return UTF8_BOM + raw if fmt.bom else raw
