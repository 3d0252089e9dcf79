"""Prompt assembly: cached stable prefix, the two edit block kinds, NEED parsing."""

from __future__ import annotations

from engine.orchestrator.budget import ContextItem, Priority
from engine.orchestrator.prompts import (
    OVERVIEW_ID,
    SYSTEM_PROMPT,
    parse_need,
    stable_prefix,
    task_message,
)


def test_system_prompt_names_both_block_kinds_and_need() -> None:
    assert "<<<<<<< SEARCH" in SYSTEM_PROMPT and "<<<<<<< SYMBOL" in SYSTEM_PROMPT
    assert ">>>>>>> REPLACE" in SYSTEM_PROMPT and "NEED:" in SYSTEM_PROMPT


def test_prefix_is_cached_and_task_items_are_not() -> None:
    items = [
        ContextItem(OVERVIEW_ID, "overview", "repo: demo", 3, Priority.CRITICAL, "overview"),
        ContextItem(
            "s1",
            "source",
            "def f(): pass",
            4,
            Priority.CRITICAL,
            "fts rank 1 for 'f'",
            file="a.py",
            symbol="f",
            start_line=1,
            end_line=1,
        ),
    ]
    blocks = stable_prefix(items)
    assert all(b.cache for b in blocks) and "repo: demo" in blocks[1].text
    message = task_message("fix f", items, "edit")
    assert "a.py:1-1" in message and "repo: demo" not in message
    # Search ranks are for the user's budget pane; the model is told how items relate.
    assert "fts rank" not in message
    related = ContextItem(
        "s2", "summary", "def g(): ...", 4, Priority.HIGH, "fts rank 3 for 'f'; callee of `f`"
    )
    assert "### summary (callee of `f`)" in task_message("fix f", [related], "edit")
    assert message.rstrip().endswith("fix f")


def test_parse_need_variants() -> None:
    need = parse_need("I need more.\nNEED:\n- Session.request\n- `src/app.py`\n- symbol: helper_fn\n\nthanks")
    assert need is not None
    assert need.symbols == ("Session.request", "helper_fn") and need.files == ("src/app.py",)
    inline = parse_need("NEED: Foo.bar, lib/util.js")
    assert inline is not None and inline.symbols == ("Foo.bar",) and inline.files == ("lib/util.js",)
    assert parse_need("No need for more context.") is None
    labelled = parse_need("NEED: symbols: Foo.bar\nfiles: lib/util.js")
    assert labelled is not None and labelled.symbols == ("Foo.bar",) and labelled.files == ("lib/util.js",)
    prose = parse_need("NEED: Foo.bar\nThen I can answer.")  # prose after an inline list is not names
    assert prose is not None and prose.symbols == ("Foo.bar",) and prose.files == ()
    assert parse_need("a.py\n<<<<<<< SEARCH\nNEED: x\n=======\ny\n>>>>>>> REPLACE") is None
    many = parse_need("NEED: " + ", ".join(f"s{i}" for i in range(20)))
    assert many is not None and len(many.symbols) == 6
