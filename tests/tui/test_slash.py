"""The slash-command table: parsing, completion and the closest-match suggestion."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from semfora_tui import slash

ISSUE_COMMANDS = {
    "search",
    "symbol",
    "overview",
    "diff",
    "edit",
    "preview",
    "review",
    "accept",
    "reject",
    "commit",
    "rollback",
    "undo",
    "rebase",
    "status",
    "context",
    "budget",
    "model",
    "theme",
    "index",
    "resume",
    "clear",
    "cost",
    "help",
    "quit",
}


def test_every_command_of_the_issue_is_in_the_table() -> None:
    assert {c.name for c in slash.COMMANDS} == ISSUE_COMMANDS


def test_every_command_has_a_handler_and_every_handler_a_command() -> None:
    from semfora_tui.commands import registered

    assert registered() == {c.name for c in slash.COMMANDS}


def test_every_handler_is_found_after_the_review_keys_loaded_their_module_alone() -> None:
    # A fresh interpreter: in this process every handler module is loaded already. The review
    # keys (c, u, x, e) import `review` directly; a slash command afterwards once found only its
    # handlers, and `/cost` crashed the app with KeyError.
    import subprocess
    import sys

    script = (
        "import semfora_tui.commands.review\n"
        "from semfora_tui import slash\n"
        "from semfora_tui.commands import handler_for\n"
        "for c in slash.COMMANDS:\n"
        "    handler_for(c.name)\n"
        "print('all found')\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.strip() == "all found", proc.stderr[-2000:]


def test_parse_keeps_arguments_and_raw_rest() -> None:
    parsed = slash.parse('/search "parse config" now')
    assert parsed.name == "search"
    assert parsed.args == ("parse config", "now")
    assert parsed.rest == '"parse config" now'


@pytest.mark.parametrize(
    ("typo", "expected"),
    [("hlep", "help"), ("comit", "commit"), ("serch", "search"), ("thme", "theme"), ("sta", "status")],
)
def test_unknown_command_suggests_the_closest(typo: str, expected: str) -> None:
    with pytest.raises(slash.UnknownCommand) as info:
        slash.parse(f"/{typo} x")
    assert info.value.suggestion == expected
    assert f"/{expected}" in str(info.value)
    assert info.value.code == "UNKNOWN_COMMAND"


def test_nonsense_gets_no_suggestion_but_a_pointer_to_help() -> None:
    with pytest.raises(slash.UnknownCommand) as info:
        slash.parse("/zzzzzzzz")
    assert info.value.suggestion is None
    assert "/help" in str(info.value)


@given(st.sampled_from(sorted(ISSUE_COMMANDS)), st.integers(min_value=1, max_value=8))
def test_any_prefix_completes_to_commands_starting_with_it(name: str, cut: int) -> None:
    prefix = name[:cut]
    names = [c.name for c in slash.completions("/" + prefix)]
    assert name in names
    assert all(n.startswith(prefix) for n in names)


@given(st.sampled_from(sorted(ISSUE_COMMANDS)))
def test_a_real_name_is_its_own_closest_match(name: str) -> None:
    assert slash.parse(f"/{name}").name == name
    assert slash.closest(name) == name
