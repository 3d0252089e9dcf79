"""How a source file's bytes become the text semfora shows: UTF-8, else the encoding the file
declares (a PEP 263 ``# -*- coding: latin-1 -*-`` line), else UTF-8 with each bad byte as U+FFFD
and a count of them, so that a reply can say its text is not the file's exact characters.

Owns decoding only; reading files (and the sandbox around it) belongs to ``engine.policy``.
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass

# PEP 263: a coding declaration on line 1 or 2 (Emacs and Vim spellings alike).
_CODING = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


@dataclass(frozen=True)
class DecodedText:
    """``text`` decoded from ``encoding``; ``undecodable`` bytes were not valid in it (U+FFFD each)."""

    text: str
    encoding: str = "utf-8"
    undecodable: int = 0

    def note(self, path: str) -> str:
        """One line for a reply that shows this text, or ``""`` when it is the file's own UTF-8."""
        if self.undecodable:
            return (
                f"{path} is not valid UTF-8: {self.undecodable:,} byte"
                f"{'' if self.undecodable == 1 else 's'} shown as U+FFFD (the file itself is unchanged)"
            )
        if self.encoding != "utf-8":
            return f"{path} is encoded as {self.encoding} (its coding declaration); shown here as Unicode"
        return ""


def declared_encoding(data: bytes) -> str | None:
    """The codec a file's coding declaration names (first two lines), if Python knows it."""
    for line in data.split(b"\n", 2)[:2]:
        found = _CODING.match(line)
        if found:
            try:
                return codecs.lookup(found.group(1).decode("ascii")).name
            except (LookupError, UnicodeDecodeError):
                return None
    return None


def decode_source(data: bytes) -> DecodedText:
    """``data`` as text: UTF-8, else its declared encoding (when that keeps every line break),
    else UTF-8 with the bad bytes replaced and counted."""
    try:
        return DecodedText(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    encoding = declared_encoding(data)
    if encoding is not None and encoding not in ("utf-8", "utf-8-sig"):
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            text = ""
        if text and text.count("\n") == data.count(b"\n"):
            return DecodedText(text, encoding)
    text = data.decode("utf-8", errors="replace")
    # Each bad byte sequence is one U+FFFD; the file's own U+FFFD characters are not among them.
    bad = text.count("\ufffd") - data.count("\ufffd".encode())
    return DecodedText(text, "utf-8", max(bad, 1))


def as_utf8(data: bytes) -> bytes:
    """``data`` re-encoded as UTF-8 when it declares another encoding that decodes it, so a parser
    that reads UTF-8 sees its characters; otherwise ``data`` itself."""
    decoded = decode_source(data)
    return decoded.text.encode("utf-8") if decoded.encoding != "utf-8" else data
