"""Counted nouns read as English: "1 hunk", "2 hunks", "0 hunks", never "hunk(s)"."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.words import noun_for, plural

NOUNS = st.sampled_from(["hunk", "file", "symbol change", "pending hunk", "finding"])


@given(st.integers(min_value=-(10**9), max_value=10**9), NOUNS)
def test_the_number_comes_first_and_only_one_is_singular(n: int, noun: str) -> None:
    text = plural(n, noun)
    assert text.startswith(f"{n} ")
    assert text.endswith(noun) == (n == 1)
    assert text == (f"{n} {noun}" if n == 1 else f"{n} {noun}s")
    assert "(s)" not in text


@given(st.integers(min_value=0, max_value=10**6))
def test_an_irregular_plural_is_used_as_given(n: int) -> None:
    assert plural(n, "match", "matches") == (f"{n} match" if n == 1 else f"{n} matches")
    assert plural(n, "edit retry", "edit retries").endswith("retry" if n == 1 else "retries")


def test_the_words_a_user_reads() -> None:
    assert plural(1, "hunk") == "1 hunk"
    assert plural(2, "hunk") == "2 hunks"
    assert plural(0, "file") == "0 files"
    assert plural(1, "symbol change") == "1 symbol change"
    assert plural(3, "symbol change") == "3 symbol changes"
    assert plural(2, "entry", "entries") == "2 entries"
    assert plural(1248, "symbol", grouped=True) == "1,248 symbols"
    assert plural(1, "file", grouped=True) == "1 file"
    assert noun_for(1, "parameter") == "parameter"
    assert noun_for(2, "parameter") == "parameters"
