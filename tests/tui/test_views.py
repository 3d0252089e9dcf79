"""Invariants of the pure rendering helpers: the budget bar and where long replies are split."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from semfora_tui.views import PRIORITIES, PackItemView, PackView, files_from_session
from semfora_tui.widgets.budget_pane import BAR_CELLS, budget_bar
from semfora_tui.widgets.reply import _paragraph_break

COLOURS = dict.fromkeys(PRIORITIES, "#ffffff")

items = st.lists(
    st.builds(
        PackItemView,
        kind=st.sampled_from(["symbol", "source", "overview"]),
        name=st.text(max_size=5),
        tokens=st.integers(min_value=0, max_value=50_000),
        priority=st.sampled_from(PRIORITIES),
        reason=st.just(""),
    ),
    max_size=30,
)


@given(items, st.integers(min_value=0, max_value=200_000))
def test_budget_bar_is_always_exactly_its_width(pack_items: list[PackItemView], budget: int) -> None:
    total = sum(i.tokens for i in pack_items)
    pack = PackView("t", "general", budget, total, tuple(pack_items))
    bar = budget_bar(pack, COLOURS)
    assert bar.cell_len == BAR_CELLS
    used = BAR_CELLS - bar.plain.count("░")
    if total == 0:
        assert used == 0
    present = {i.priority for i in pack_items if i.tokens}
    if len(present) <= BAR_CELLS and total:
        assert used >= min(len(present), BAR_CELLS)  # every present priority stays visible


@given(
    st.lists(st.sampled_from(["text\n", "\n", "```\n", "x = 1\n", "- item\n"]), max_size=60),
    st.integers(min_value=0, max_value=200),
)
def test_a_reply_is_only_split_at_a_blank_line_outside_code(parts: list[str], start: int) -> None:
    text = "".join(parts)
    start = min(start, len(text))
    cut = _paragraph_break(text, start)
    if cut is None:
        return
    assert cut >= start + 2
    assert text[cut - 2 : cut] == "\n\n"
    fences = sum(1 for line in text[:cut].splitlines() if line.lstrip().startswith("```"))
    assert fences % 2 == 0


def test_engine_flags_become_readable_text() -> None:
    from engine.edits.hunks import Hunk
    from engine.edits.session import StagedFile

    hunk = Hunk(
        id="h1",
        path="x.py",
        state="accepted",
        old_start=3,
        old_count=1,
        new_start=3,
        new_count=2,
        old_lines=("a",),
        new_lines=("b", "c"),
        conflict=True,
        syntax_error="line 3: unexpected indent",
    )
    (view,) = files_from_session([StagedFile(path="x.py", kind="modify", hunks=(hunk,), stale=True)])
    assert view.added == 0 and view.removed == 0  # a conflict's lines are never written
    assert view.conflict == "changed on disk since it was staged (/rebase re-applies its hunks)"
    assert view.hunks[0].conflict is not None and "no longer fits the file" in view.hunks[0].conflict
    assert view.hunks[0].syntax_error == "line 3: unexpected indent"
    assert view.hunks[0].start_line == 3
    assert view.hunks[0].lines == ("-a", "+b", "+c")
    assert view.count("accepted") == 1


EDIT_REPLY = "Here is the change.\n\napp/x.py\n<<<<<<< SEARCH\n    a = 1\n=======\n    a = 2\n>>>>>>> REPLACE\n\nDone.\n"
# The same reply as the chat shows it: the change as a coloured diff, no conflict markers.
EDIT_SHOWN = "Here is the change.\n\napp/x.py\n```diff\n-    a = 1\n+    a = 2\n```\n\nDone.\n"
# Every shape a reply takes: the model fences its blocks itself, quotes code, creates a file,
# replaces a symbol, writes two blocks in one fence.
REPLIES = {
    EDIT_REPLY: EDIT_SHOWN,
    "```python\napp/x.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\nok\n": (
        "app/x.py\n```diff\n-a\n+b\n```\nok\n"
    ),
    "Run:\n```bash\nmake test\n```\n": "Run:\n```bash\nmake test\n```\n",
    "```python\ndef f():\n    return '=======' \n```\n": "```python\ndef f():\n    return '=======' \n```\n",
    "docs/release notes.md\n<<<<<<< SEARCH\n=======\n# Notes\n>>>>>>> REPLACE\n": (
        "docs/release notes.md\n```diff\n@@ new file @@\n+# Notes\n```\n"
    ),
    "x.py\n<<<<<<< SYMBOL Box.size\n    def size(self):\n        return 2\n>>>>>>> REPLACE\n": (
        "x.py\n```diff\n@@ new definition of Box.size @@\n+    def size(self):\n+        return 2\n```\n"
    ),
    "```\na.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\nb.py\n<<<<<<< SEARCH\nc\n=======\n>>>>>>> REPLACE\n```\n": (
        "a.py\n```diff\n-a\n+b\n```\nb.py\n```diff\n-c\n```\n"
    ),
    # A long block is folded past FOLD_AFTER lines a side: one line counts the rest.
    "big.py\n<<<<<<< SEARCH\n=======\n"
    + "".join(f"x{i} = {i}\n" for i in range(30))
    + ">>>>>>> REPLACE\nok\n": (
        "big.py\n```diff\n@@ new file @@\n"
        + "".join(f"+x{i} = {i}\n" for i in range(24))
        + "@@ 6 more lines folded (F2 shows all) @@\n```\nok\n"
    ),
    "a.py\n<<<<<<< SEARCH\n" + "old\n" * 25 + "=======\nnew\n>>>>>>> REPLACE\n": (
        "a.py\n```diff\n" + "-old\n" * 24 + "@@ 1 more line folded (F2 shows all) @@\n+new\n```\n"
    ),
}


def test_edit_blocks_show_as_diffs_without_conflict_markers() -> None:
    from semfora_tui.widgets.reply import EditBlockFencer

    for reply, shown in REPLIES.items():
        fencer = EditBlockFencer()
        assert fencer.feed(reply) + fencer.flush() == shown, reply


@given(st.sampled_from(sorted(REPLIES)), st.lists(st.integers(min_value=1, max_value=200), max_size=12))
def test_edit_blocks_show_the_same_however_the_stream_is_cut(reply: str, cuts: list[int]) -> None:
    from semfora_tui.widgets.reply import EditBlockFencer

    fencer = EditBlockFencer()
    points = sorted({cut for cut in cuts if cut < len(reply)})
    pieces = [reply[a:b] for a, b in zip([0, *points], [*points, len(reply)], strict=True)]
    assert "".join(fencer.feed(p) for p in pieces) + fencer.flush() == REPLIES[reply]


def test_a_block_cut_off_mid_stream_is_closed() -> None:
    from semfora_tui.widgets.reply import EditBlockFencer

    fencer = EditBlockFencer()
    assert fencer.feed("x.py\n<<<<<<< SEARCH\na\n==") + fencer.flush() == "x.py\n```diff\n-a\n-==\n```\n"
    fencer = EditBlockFencer()
    assert fencer.feed("```python\nx = 1\n") + fencer.flush() == "```python\nx = 1\n"


def test_engine_hints_that_name_command_line_flags_read_as_app_commands() -> None:
    """A hint shown in the app must not send the user to a flag the app has no place for."""
    import ast

    from semfora_tui.chat_text import in_app

    engine = Path(__file__).resolve().parents[2] / "engine"
    hints: list[str] = []
    for source in engine.rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            value = node.value if isinstance(node, ast.keyword) and node.arg == "hint" else None
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                hints.append(value.value)
    flagged = [h for h in hints if re.search(r"--(model|budget|path)\b", h)]
    assert len(flagged) >= 5, flagged  # the scan finds the hints it is about
    for hint in flagged:
        shown = in_app(hint)
        assert not re.search(r"--(model|budget|path)\b", shown), (hint, shown)
        assert shown.count("`") % 2 == 0, shown  # every code span is closed
