"""Slash-command handlers: one async function per command of ``semfora_tui.slash``.

``slash.py`` owns the names, usage lines and parsing; this package owns what each command
does. A handler takes the main screen and the parsed command, asks the engine through the
screen's jobs (never on the UI thread) and writes its result in the chat. Handlers never
move the keyboard focus, except `/review`, whose job it is. Modules load on first use.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from semfora_tui.slash import ParsedCommand

if TYPE_CHECKING:
    from semfora_tui.screens.main import MainScreen

Handler = Callable[["MainScreen", ParsedCommand], Awaitable[None]]
_HANDLERS: dict[str, Handler] = {}


def command(name: str) -> Callable[[Handler], Handler]:
    """Register the decorated function as the handler of `/name`."""

    def register(handler: Handler) -> Handler:
        _HANDLERS[name] = handler
        return handler

    return register


def handler_for(name: str) -> Handler:
    # Every module, every time (a no-op once loaded): the review keys load `review` alone, so
    # "some handlers are registered" does not mean all of them are.
    from semfora_tui.commands import code, review, session  # noqa: F401 - they register themselves

    return _HANDLERS[name]


def registered() -> frozenset[str]:
    """Every command name with a handler (a test checks it matches the slash table)."""
    handler_for("help")
    return frozenset(_HANDLERS)
