"""The prompt history file: trimmed when it grows, torn lines skipped, two writers interleave."""

from __future__ import annotations

import json
from pathlib import Path

from semfora_tui.history import PromptHistory


def test_a_long_history_is_trimmed_and_a_torn_line_skipped(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(f"prompt {i}") + "\n" for i in range(25)) + '"torn', encoding="utf-8")
    history = PromptHistory(path, limit=10)
    assert history.load() == [f"prompt {i}" for i in range(15, 25)]
    assert len(path.read_text(encoding="utf-8").splitlines()) == 10  # rewritten to the limit
    assert history.add("next") and history.load()[-1] == "next"


def test_two_open_apps_both_keep_their_prompts(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    first, second = PromptHistory(path), PromptHistory(path)
    first.add("from the first")
    second.add("from the second")
    first.add("first again")
    assert PromptHistory(path).load() == ["from the first", "from the second", "first again"]
