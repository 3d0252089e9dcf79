"""The command palette provider: every slash command, searchable with ctrl+p.

Commands that need an argument put `/name ` into the prompt for the user to
finish; the others run at once. Usage lines are escaped: `[BASE]` is an argument,
not Rich markup. It asks the main screen to act and does nothing itself.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

from semfora_tui import slash
from semfora_tui.chat_text import literal

if TYPE_CHECKING:
    from semfora_tui.app import SemforaApp

# Commands that cannot run without an argument: the palette pre-fills the prompt instead.
NEEDS_ARGUMENT = frozenset({"search", "symbol", "budget", "edit"})


class SlashCommandProvider(Provider):
    """Offers the slash-command table to the command palette."""

    @property
    def semfora(self) -> SemforaApp:
        return cast("SemforaApp", self.app)

    def _callback(self, command: slash.SlashCommand) -> Callable[[], object]:
        main = self.semfora.main
        if command.name in NEEDS_ARGUMENT:
            return partial(main.prefill_prompt, f"/{command.name} ")
        return partial(main.run_slash, f"/{command.name}")

    async def discover(self) -> Hits:
        for command in slash.COMMANDS:
            yield DiscoveryHit(
                f"/{command.name}", self._callback(command), help=literal(f"{command.usage} — {command.help}")
            )

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for command in slash.COMMANDS:
            label = f"/{command.name}"
            score = matcher.match(f"{label} {command.help}")
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(label),
                    self._callback(command),
                    help=literal(f"{command.usage} — {command.help}"),
                )
