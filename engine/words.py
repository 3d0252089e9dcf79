"""Counted nouns in the text a user reads: "1 hunk", "2 hunks", never "1 hunk(s)".

Owns ``plural`` (a number and its noun) and ``noun_for`` (the noun alone, for phrasing such as
"unknown parameters: a, b"). Ground floor: imports nothing of the engine. Human text only: JSON
fields and values never go through it.
"""

from __future__ import annotations


def noun_for(count: int, noun: str, plural_noun: str | None = None) -> str:
    """``noun`` when ``count`` is exactly 1, else its plural (``plural_noun``, or ``noun + "s"``).

    Irregular plurals are given explicitly ("match" → "matches", "entry" → "entries"): there is
    no guessing rule to be wrong about.
    """
    if count == 1:
        return noun
    return plural_noun if plural_noun is not None else noun + "s"


def plural(count: int, noun: str, plural_noun: str | None = None, *, grouped: bool = False) -> str:
    """``count`` and its noun: ``plural(1, "hunk")`` is "1 hunk", ``plural(0, "hunk")`` "0 hunks";
    ``grouped`` writes the number with thousands separators ("1,248 symbols")."""
    number = f"{count:,}" if grouped else str(count)
    return f"{number} {noun_for(count, noun, plural_noun)}"
