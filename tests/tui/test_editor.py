"""Which editor `e` starts and how it is told the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from semfora_tui.editor import NoEditor, chosen_editor, editor_command

FILE = Path("/cache/proposed/app/config.py")


@pytest.mark.parametrize("editor", ["vi", "vim", "nvim", "/usr/bin/nano", "emacs -nw", "emacsclient -t"])
def test_editors_that_take_plus_line_get_it(editor: str) -> None:
    argv = editor_command(editor, FILE, 12)
    assert argv[-2:] == ["+12", str(FILE)]
    assert argv[: len(editor.split())] == editor.split()


@pytest.mark.parametrize(
    ("editor", "expected"),
    [
        ("code --wait", ["code", "--wait", "--goto", f"{FILE}:12"]),
        ("code", ["code", "--wait", "--goto", f"{FILE}:12"]),  # without --wait it returns at once
        ("codium -w", ["codium", "-w", "--goto", f"{FILE}:12"]),
        ("subl", ["subl", "--wait", f"{FILE}:12"]),
        ("hx", ["hx", f"{FILE}:12"]),
    ],
)
def test_gui_editors_get_their_own_line_syntax(editor: str, expected: list[str]) -> None:
    assert editor_command(editor, FILE, 12) == expected


def test_an_unknown_editor_gets_the_file_only() -> None:
    assert editor_command("'/opt/my editor/ed' --flag", FILE, 12) == [
        "/opt/my editor/ed",
        "--flag",
        str(FILE),
    ]


def test_no_editor_is_a_clear_error_not_a_guess() -> None:
    with pytest.raises(NoEditor) as info:
        chosen_editor({})
    assert info.value.code == "NO_EDITOR" and "EDITOR" in str(info.value.hint)
    assert chosen_editor({"VISUAL": "", "EDITOR": "nano"}) == "nano"
    assert chosen_editor({"VISUAL": "vim", "EDITOR": "nano"}) == "vim"
