"""The context-budget pane: what went into the model and what it cost.

Renders a ``PackView`` as a bar split by priority plus a table of the items,
and the usage and cost of the last turn and of the session. Display only.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from semfora_tui.theming import SEMFORA_VARIABLE_DEFAULTS
from semfora_tui.views import PRIORITIES, PackView, TurnCost

# Width of the budget bar in cells; a narrower pane gets a shorter bar (the figure after it stays).
BAR_CELLS = 40
MIN_BAR_CELLS = 10


def budget_bar(pack: PackView, colours: dict[str, str], cells: int = BAR_CELLS) -> Text:
    """A bar of ``cells`` cells: one coloured run per priority, the rest is free budget."""
    budget = max(pack.budget, pack.total_tokens, 1)
    text = Text(no_wrap=True)
    used = 0
    for priority, tokens in pack.tokens_by_priority().items():
        width = round(tokens * cells / budget)
        if tokens and not width:
            width = 1  # a priority that is present stays visible
        width = min(width, cells - used)
        text.append("█" * width, style=Style(color=colours[priority]))
        used += width
    text.append("░" * (cells - used), style="dim")
    return text


class BudgetPane(Vertical):
    """Tokens used against the budget, the items of the pack, and cost."""

    can_focus = False

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pack: PackView | None = None
        self.turn = TurnCost()
        self.session_cost = 0.0
        self.budget = 0
        self.no_pack = "no context pack yet"  # what the bar says while there is no pack to show
        self.turn_failed = False  # the last turn failed: its usage is not known

    def compose(self) -> ComposeResult:
        yield Static(id="budget-bar")
        yield Static(id="budget-legend")
        yield DataTable(id="budget-table", cursor_type="row", zebra_stripes=True)
        yield Static(id="budget-cost")

    def on_mount(self) -> None:
        table = self.query_one("#budget-table", DataTable)
        # Numbers first: a name with its path fills a 60-column pane, and the columns after it
        # would only be seen by scrolling sideways.
        table.add_columns("tokens", "priority", "kind", "name", "reason")
        self.watch(self.app, "theme", lambda _theme: self._render_all(), init=False)
        self._render_all()

    def _colours(self) -> dict[str, str]:
        variables = getattr(self.app, "theme_variables", {}) or {}
        return {
            p: variables.get(f"semfora-priority-{p}") or SEMFORA_VARIABLE_DEFAULTS[f"semfora-priority-{p}"]
            for p in PRIORITIES
        }

    def show_pack(self, pack: PackView) -> None:
        self.pack = pack
        self.budget = pack.budget or self.budget
        table = self.query_one("#budget-table", DataTable)
        table.clear()
        colours = self._colours()
        for item in pack.items:
            table.add_row(
                Text(f"{item.tokens:,}", justify="right"),
                Text(item.priority, style=Style(color=colours.get(item.priority, colours["low"]))),
                item.kind,
                item.name,
                item.reason,
            )
        self._render_all()

    def on_resize(self) -> None:
        self._render_all()  # the legend's entries are laid out for the width

    def show_no_pack(self, why: str) -> None:
        """No pack to show, and ``why`` (the last turn failed before it had one)."""
        self.pack = None
        self.no_pack = why
        self.query_one("#budget-table", DataTable).clear()
        self._render_all()

    def show_cost(self, turn: TurnCost, session_cost: float, *, failed: bool = False) -> None:
        self.turn = turn
        self.session_cost = session_cost
        self.turn_failed = failed
        self._render_all()

    def set_budget(self, budget: int) -> None:
        self.budget = budget
        self._render_all()

    def _render_all(self) -> None:
        if not self.is_mounted:
            return
        colours = self._colours()
        bar = self.query_one("#budget-bar", Static)
        legend = self.query_one("#budget-legend", Static)
        if self.pack is None:
            bar.update(Text(f"budget {self.budget:,} tokens · {self.no_pack}", style="dim"))
            legend.update("")
        else:
            shown = PackView(
                self.pack.task, self.pack.intent, self.budget, self.pack.total_tokens, self.pack.items
            )
            figure = f" {self.pack.total_tokens:,}/{self.budget:,}"
            # The figure first: at 80 columns a 40-cell bar pushed it off the pane.
            width = bar.size.width or self.size.width or BAR_CELLS + len(figure)
            line = budget_bar(shown, colours, max(MIN_BAR_CELLS, min(BAR_CELLS, width - len(figure))))
            line.append(figure)
            bar.update(line)
            entries = []
            for priority, tokens in self.pack.tokens_by_priority().items():
                entry = Text("■ ", style=Style(color=colours[priority]))
                entry.append(f"{priority} {tokens:,}")
                entries.append(entry)
            entries.append(Text(f"intent {self.pack.intent}", style="italic"))
            legend.update(_lines_of(entries, legend.size.width or self.size.width))
        turn = Text("turn ", style="bold")
        if self.turn_failed:
            turn.append("failed (no usage reported)")
        else:
            turn.append(
                f"{self.turn.input_tokens:,} in / {self.turn.output_tokens:,} out · ${self.turn.cost:.4f}"
            )
        session = Text("session ", style="bold")
        session.append(f"${self.session_cost:.4f}")
        cost = self.query_one("#budget-cost", Static)
        cost.update(_lines_of([turn, session], cost.size.width or self.size.width, gap="   "))


# Spaces between two entries of the legend on one line.
LEGEND_GAP = "  "


def _lines_of(entries: list[Text], width: int, *, gap: str = LEGEND_GAP) -> Text:
    """``entries`` on as many lines of ``width`` cells as they need, never one cut in two (at
    130 columns the one-line legend lost its last entries to an ellipsis, at 80 the cost line
    its session figure)."""
    out = Text(no_wrap=True, overflow="ellipsis")
    used = 0
    for entry in entries:
        if used and used + len(gap) + entry.cell_len > width:
            out.append("\n")
            used = 0
        elif used:
            out.append(gap)
            used += len(gap)
        out.append_text(entry)
        used += entry.cell_len
    return out
