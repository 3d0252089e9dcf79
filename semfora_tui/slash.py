"""The slash commands of the app: their names, usage lines and parsing.

Owns the one table of commands shared by the prompt's completion, the command
palette and `/help`. It parses text into a command; it must not run anything
(``semfora_tui.commands`` holds what each command does).
"""

from __future__ import annotations

import difflib
import shlex
from dataclasses import dataclass

from engine.errors import UsageError


class UnknownCommand(UsageError):
    """A slash command that does not exist; ``suggestion`` is the closest real one."""

    code = "UNKNOWN_COMMAND"

    def __init__(self, name: str, suggestion: str | None) -> None:
        hint = f"did you mean /{suggestion}?" if suggestion else "type /help for the list"
        super().__init__(f"unknown command /{name}; {hint}", hint=hint)
        self.name = name
        self.suggestion = suggestion


@dataclass(frozen=True)
class SlashCommand:
    name: str
    usage: str
    help: str


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("search", "/search QUERY", "search the code; results open the symbol or its source"),
    SlashCommand("symbol", "/symbol NAME", "show one symbol"),
    SlashCommand("overview", "/overview", "show the repository overview"),
    SlashCommand("diff", "/diff [BASE] [TARGET]", "semantic diff between refs (TARGET may be WORKING)"),
    SlashCommand(
        "edit",
        "/edit TASK | /edit --from FILE",
        "ask for edits and stage them, or stage edit blocks from a file",
    ),
    SlashCommand("preview", "/preview", "list the staged changes"),
    SlashCommand("review", "/review", "review the staged changes from the keyboard (esc returns)"),
    SlashCommand(
        "accept",
        "/accept [HUNK|FILE|all]",
        "accept the selected hunk, one by id, a file's, or all (asks first)",
    ),
    SlashCommand(
        "reject", "/reject [HUNK|FILE|all]", "reject the selected hunk, one by id, a file's, or all"
    ),
    SlashCommand("commit", "/commit", "commit the accepted hunks of the staged session"),
    SlashCommand("rollback", "/rollback", "discard the pending session"),
    SlashCommand(
        "undo", "/undo [--force]", "revert the last commit (--force: even if its files changed since)"
    ),
    SlashCommand("rebase", "/rebase", "re-apply the staged hunks onto files changed on disk"),
    SlashCommand("status", "/status", "memory, index and budget state"),
    SlashCommand("context", "/context [TASK]", "the last context pack in full (or build one for TASK)"),
    SlashCommand("budget", "/budget N", "set the context budget in tokens"),
    SlashCommand("model", "/model [NAME]", "show or switch the model"),
    SlashCommand("theme", "/theme [NAME]", "switch theme (saved in config.toml)"),
    SlashCommand("index", "/index [--rebuild]", "re-index the repository"),
    SlashCommand("resume", "/resume", "continue the last session"),
    SlashCommand("clear", "/clear", "clear the chat"),
    SlashCommand("cost", "/cost", "show usage and cost"),
    SlashCommand("help", "/help", "list the commands"),
    SlashCommand("quit", "/quit", "exit semfora"),
)
BY_NAME: dict[str, SlashCommand] = {c.name: c for c in COMMANDS}


@dataclass(frozen=True)
class ParsedCommand:
    name: str
    args: tuple[str, ...]
    rest: str  # the raw text after the command name, for free-text arguments


def is_command(text: str) -> bool:
    return text.lstrip().startswith("/")


def closest(name: str) -> str | None:
    """The closest real command to a mistyped one, by prefix first, then by similarity."""
    prefixed = [c.name for c in COMMANDS if c.name.startswith(name)] if name else []
    if prefixed:
        return prefixed[0]
    matches = difflib.get_close_matches(name, BY_NAME, n=1, cutoff=0.5)
    return matches[0] if matches else None


def completions(prefix: str) -> list[SlashCommand]:
    """Commands whose name starts with what follows the slash."""
    word = prefix.lstrip().removeprefix("/")
    return [c for c in COMMANDS if c.name.startswith(word)]


def parse(text: str) -> ParsedCommand:
    """Split `/name args...` into its parts; unknown names raise with a suggestion."""
    body = text.strip().removeprefix("/")
    name, _, rest = body.partition(" ")
    name = name.lower()
    if name not in BY_NAME:
        raise UnknownCommand(name, closest(name))
    rest = rest.strip()
    try:
        args = tuple(shlex.split(rest))
    except ValueError:
        args = tuple(rest.split())
    return ParsedCommand(name, args, rest)
