"""Which editor `e` starts, and how it is told the line: argv building only, no process.

``+LINE`` goes only to editors known to take it. VS Code and its forks get
``--goto file:line`` and ``--wait`` (without it they return at once, and the app would
re-read a file the user has not saved yet). With no editor set, the app says how to set
one instead of guessing. It must not import textual.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

from engine.errors import SemforaError, UsageError

# Editors that open ``+LINE FILE`` at that line.
PLUS_LINE_EDITORS = frozenset({"vi", "vim", "nvim", "gvim", "view", "nano", "emacs", "emacsclient"})
# VS Code and forks: ``--goto FILE:LINE``; they need ``--wait`` to block until the tab is closed.
GOTO_EDITORS = frozenset({"code", "code-insiders", "codium", "vscodium", "cursor"})
# Editors that take ``FILE:LINE``; the value is the flag that makes them block, if they need one.
COLON_EDITORS: dict[str, str | None] = {"subl": "--wait", "zed": "--wait", "hx": None, "helix": None}


class NoEditor(UsageError):
    """Neither $VISUAL nor $EDITOR names an editor."""

    code = "NO_EDITOR"


class EditorFailed(SemforaError):
    """The editor exited with a non-zero status (vim's `:cq`, a crash): what it saved is not staged."""

    code = "EDITOR_FAILED"


def chosen_editor(environ: Mapping[str, str] | None = None) -> str:
    env = os.environ if environ is None else environ
    editor = (env.get("VISUAL") or env.get("EDITOR") or "").strip()
    if not editor:
        raise NoEditor(
            "no editor is set: $VISUAL and $EDITOR are both empty",
            hint="set one before starting semfora, e.g. `export EDITOR=nano` or `export EDITOR='code --wait'`",
        )
    return editor


def editor_command(editor: str, path: Path, line: int) -> list[str]:
    """The argv that opens ``path`` at ``line`` (1-based) in ``editor`` (a shell-quoted command)."""
    argv = shlex.split(editor)
    if not argv:
        raise NoEditor(f"the editor command {editor!r} is empty")
    name = Path(argv[0]).name.removesuffix(".exe")
    line = max(line, 1)
    if name in PLUS_LINE_EDITORS:
        return [*argv, f"+{line}", str(path)]
    if name in GOTO_EDITORS:
        wait = [] if {"--wait", "-w"} & set(argv[1:]) else ["--wait"]
        return [*argv, *wait, "--goto", f"{path}:{line}"]
    if name in COLON_EDITORS:
        flag = COLON_EDITORS[name]
        wait = [flag] if flag and flag not in argv[1:] and "-w" not in argv[1:] else []
        return [*argv, *wait, f"{path}:{line}"]
    return [*argv, str(path)]
