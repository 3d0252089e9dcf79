"""Text the app writes for people (chat Markdown, Textual markup), built so it cannot be misread.

Owns quoting (paths such as ``__init__.py`` in code spans, ``|`` escaped in table cells,
``[ARG]`` shown as written instead of read as a style tag), error lines with hints that
point to in-app actions instead of the command line, and the fence language of a file.
Pure functions on strings; it must not import textual.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.errors import SemforaError

# Hints written for the command line, and what does the same thing inside the app.
# Order matters: the longer command comes first so `semfora index --rebuild` is not
# rewritten as `/index` followed by a stray ` --rebuild`.
APP_HINTS: tuple[tuple[str, str], ...] = (
    ("`semfora edits list` shows the ids", "`/preview` lists the staged hunks; each id follows `#`"),
    ("use `semfora edits undo --force` to revert anyway", "`/undo --force` reverts anyway"),
    ("run `semfora edits rebase` to re-apply the staged hunks", "`/rebase` (or `b` in review) re-applies"),
    ("`semfora edits rebase`", "`/rebase`"),
    ("`semfora edits undo --force`", "`/undo --force`"),
    ("`semfora edits list`", "`/preview`"),
    ("`semfora index --rebuild`", "`/index --rebuild`"),
    ("`semfora index`", "`/index`"),
    ("run `git init` or pass --path", "`/diff` needs a git repository: run `git init` here"),
    (
        "lower --budget (budget.context_tokens) or start a new session",
        "lower the budget with `/budget N`, or restart semfora for a new session",
    ),
    ("lower --budget (budget.context_tokens)", "lower the budget with `/budget N`"),
    ("with --model or llm.model", "with `/model NAME`"),
)
# A model named on the command line (`--model ollama/qwen2.5-coder:7b`) is `/model NAME` in the app.
_MODEL_FLAG = re.compile(r"--model ([\w.:/-]*\w)")

_FENCE_LANGUAGE = {".py": "python", ".js": "javascript", ".ts": "typescript", ".go": "go", ".rs": "rust"}


def code(text: str) -> str:
    """``text`` as an inline code span, whatever backticks it contains (CommonMark rule)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def cell(text: str) -> str:
    """Text for one Markdown table cell: ``|`` escaped and no line breaks."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def literal(text: str) -> str:
    """``text`` for a Textual markup string, shown exactly as written.

    Rich's and Textual's own ``escape`` leave ``[BASE]`` alone (they only escape lowercase,
    tag-like brackets), yet Textual's markup parser drops it; escape every bracket.
    """
    return text.replace("[", "\\[")


def in_app(text: str) -> str:
    """Rewrite command-line hints into the app's own actions."""
    for cli, app in APP_HINTS:
        text = text.replace(cli, app)
    return _MODEL_FLAG.sub(r"`/model \1`", text)


def error_markdown(err: SemforaError) -> str:
    text = f"**error[{err.code}]**: {in_app(err.message)}"
    if err.hint and err.hint not in err.message:
        text += f"  \n_{in_app(err.hint)}_"
    return text


def plain_text(markdown: str) -> str:
    """A note's Markdown as plain text, for a toast: no code-span backticks, no emphasis marks,
    no hard-break spaces."""
    text = re.sub(r"(`+) ?(.*?) ?\1", r"\2", markdown)
    text = re.sub(r"\*\*(.+?)\*\*", r"\1", text)
    text = re.sub(r"(?m)^_(.+)_$", r"\1", text)
    return re.sub(r" {2}\n", "\n", text)


def fence_language(file: str) -> str:
    return _FENCE_LANGUAGE.get(Path(file).suffix, "")
