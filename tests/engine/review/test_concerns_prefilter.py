"""The catalogue's literal prefilter (a pattern whose leading literal is absent is not run) never
changes what the security-logic rule finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.review.concerns import CONCERNS, _hits, _leading_literal

PATTERNS = tuple(sorted({p for c in CONCERNS for p in (*c.strong, *c.weak)}))
# Words of the catalogue itself, spelled in any case, so generated texts do match patterns.
WORDS = sorted({w for p in PATTERNS if (w := _leading_literal(p))} | {"inspect.", "import ", "os.path"})
TOKENS = st.one_of(
    st.sampled_from(WORDS).map(str.upper),
    st.sampled_from(WORDS),
    st.sampled_from([" ", "_", ".", "(", ")", "=", "'", '"', "\n", "-", "s", "ex", "{x}", "%s", "+"]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, max_size=40).map("".join))
def test_prefiltered_hits_equal_plain_hits(text: str) -> None:
    lowered = text.lower() if text.isascii() else None
    for concern in CONCERNS:
        for patterns in (concern.strong, concern.weak):
            assert _hits(patterns, text, None, lowered) == _hits(patterns, text)


def test_leading_literals_are_required_prefixes() -> None:
    assert _leading_literal(r"(?<!inspect\.)(?<!import )\bsignature(?!\s*\()\w*") == "signature"
    assert _leading_literal(r"\bexecv?p?e?\b\s*\(") == "exec"  # the optional letters are not required
    assert _leading_literal(r"\bapi_?key\b") == "api"
    assert _leading_literal(r"\bjwt\b|\bjws\b|\bjwk\b") is None  # no single literal
    assert _leading_literal(r"\bx?html_?escape\b") is None
    assert _leading_literal(r"\b\w*limit\w*") is None
