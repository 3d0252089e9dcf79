"""Only exact markers delimit edit blocks (issue 13, item 8).

A Markdown/RST underline of 5-9 "=" is content, a doubled divider or a malformed marker fails
the whole reply (never a silently dropped block or a literal "=======" written into code), and a
reply starting with a byte-order mark is read like any other.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.edits import EditSession
from engine.edits.protocol import EditBlockError, apply_blocks, parse_blocks
from engine.repo.layout import RepoLayout

OPEN_SEARCH, DIVIDER, CLOSE = "<<<<<<< SEARCH", "=======", ">>>>>>> REPLACE"

MARKERS = {OPEN_SEARCH, DIVIDER, CLOSE}
# Lines that stress the marker rules: underlines of every length, conflict-marker look-alikes.
TRICKY_LINES = ["=" * n for n in range(3, 13) if n != 7] + [
    "  ======  ",
    "<<<<<<< HEAD",
    ">>>>>>> feature",
    "a = b == c",
    "# =======",
    "<<<",
    ">>> REPLACEMENT text",
    "",
]
content_line = st.one_of(
    st.sampled_from(TRICKY_LINES),
    st.text(alphabet="ab =<>#\t-", max_size=20),
).filter(lambda line: line.strip() not in MARKERS and "SEARCH" not in line and "SYMBOL" not in line)
content = st.lists(content_line, min_size=1, max_size=8)


def _block(path: str, search: list[str], replace: list[str]) -> str:
    return "\n".join([path, OPEN_SEARCH, *search, DIVIDER, *replace, CLOSE]) + "\n"


@settings(max_examples=200, deadline=None)
@given(search=content, replace=content, bom=st.booleans(), crlf=st.booleans())
@example(search=["Title", "====="], replace=["Title", "========="], bom=False, crlf=False)
@example(search=["x"], replace=["y"], bom=True, crlf=False)
def test_content_between_exact_markers_round_trips(search, replace, bom, crlf) -> None:
    reply = "Here is the change.\n\n" + _block("README.md", search, replace)
    if crlf:
        reply = reply.replace("\n", "\r\n")
    if bom:
        reply = "\ufeff" + reply
    (block,) = parse_blocks(reply)
    assert block.path == "README.md"
    assert block.search == "".join(line + "\n" for line in search)
    assert block.replace == "".join(line + "\n" for line in replace)


@settings(max_examples=100, deadline=None)
@given(
    count=st.integers(min_value=2, max_value=14).filter(lambda n: n != 7),
    which=st.sampled_from(["open", "close", "symbol"]),
    good_first=st.booleans(),
)
def test_a_malformed_marker_fails_the_whole_reply(count, which, good_first) -> None:
    """`<<<<<<<<<< SEARCH` (10) is never dropped while the rest of the reply stages."""
    good = _block("a.py", ["x = 1"], ["x = 2"])
    if which == "open":
        bad = "\n".join(["b.py", "<" * count + " SEARCH", "y = 1", DIVIDER, "y = 2", CLOSE]) + "\n"
    elif which == "symbol":
        bad = "\n".join(["b.py", "<" * count + " SYMBOL f", "def f(): pass", CLOSE]) + "\n"
    else:
        bad = "\n".join(["b.py", OPEN_SEARCH, "y = 1", DIVIDER, "y = 2", ">" * count + " REPLACE"]) + "\n"
    reply = good + "\n" + bad if good_first else bad + "\n" + good
    with pytest.raises(EditBlockError) as info:
        parse_blocks(reply)
    failure = next(f for f in info.value.failures if f.reason == "malformed_marker")
    assert "is not a marker" in failure.message
    assert ("<" * count if which != "close" else ">" * count) in failure.nearest  # the reply's own lines


@settings(max_examples=50, deadline=None)
@given(before=content, after=content)
def test_a_doubled_divider_fails_with_the_nearest_lines(before, after) -> None:
    reply = "\n".join(["a.py", OPEN_SEARCH, *before, DIVIDER, DIVIDER, *after, CLOSE]) + "\n"
    with pytest.raises(EditBlockError) as info:
        parse_blocks(reply)
    (failure,) = info.value.failures
    assert failure.reason == "ambiguous_divider" and DIVIDER in failure.nearest
    assert "Your reply around there" in info.value.retry_prompt()


@pytest.mark.parametrize("underline", ["=====", "======", "========", "========="])
def test_a_readme_underline_is_staged_and_committed_as_content(make_repo, underline) -> None:
    """The issue's scrambled README: an underline inside SEARCH was taken for the divider."""
    readme = f"Intro\n{underline}\n\nSome text.\n"
    root = make_repo({"README.md": readme})
    reply = _block(
        "README.md", ["Intro", underline, "", "Some text."], ["Intro", underline, "", "Better text."]
    )
    session = EditSession.load_or_create(RepoLayout.for_path(root))
    session.stage_blocks(reply)
    assert session.commit(all=True).committed
    assert (root / "README.md").read_text() == f"Intro\n{underline}\n\nBetter text.\n"


def test_a_bom_reply_applies(tmp_path: Path) -> None:
    blocks = parse_blocks("\ufeffa.py\n" + _block("a.py", ["x = 1"], ["x = 2"]).split("\n", 1)[1])
    assert apply_blocks(tmp_path, blocks, {"a.py": "x = 1\n"}.get) == {"a.py": "x = 2\n"}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=content)
def test_equals_lines_inside_a_symbol_block_are_content(body) -> None:
    reply = "\n".join(["a.py", "<<<<<<< SYMBOL f", "def f():", *("    " + b for b in body), CLOSE]) + "\n"
    (block,) = parse_blocks(reply)
    assert block.kind == "symbol" and block.replace.count("\n") == len(body) + 1
