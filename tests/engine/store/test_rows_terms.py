"""The words a symbol is found by (``identifier_parts``): the split a user's search relies on."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.store.rows import identifier_parts


def _piecewise(name: str) -> list[str]:
    """The definition: split at every run of non-[A-Za-z0-9], then at case changes and digits."""
    camel = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
    return [p.lower() for chunk in re.split(r"[^A-Za-z0-9]+", name) for p in camel.findall(chunk)]


def test_identifier_words_of_common_shapes() -> None:
    assert identifier_parts("getUserByID") == ["get", "user", "by", "id"]
    assert identifier_parts("HTTPServer_v2.parseURLs") == ["http", "server", "v", "2", "parse", "ur", "ls"]
    assert identifier_parts("__init__") == ["init"]
    assert identifier_parts("x\u0663y") == ["x", "y"]  # a non-ASCII digit separates, it is no word
    assert identifier_parts("") == []


@settings(max_examples=500, deadline=None)
@given(
    st.text(alphabet=st.sampled_from("aBcZ09_.-$ \u00e9\u0663\u0130\u212a"), max_size=24)
    | st.text(max_size=16)
)
def test_identifier_words_match_the_piecewise_split(name: str) -> None:
    assert identifier_parts(name) == _piecewise(name)
