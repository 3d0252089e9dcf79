"""Commands that read the code: /search, /symbol, /overview, /diff and /context.

None of them calls a model or changes anything; each runs its engine call in a job and
writes the answer in the chat (paths in code spans, wide tables as tables that do not wrap).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.table import Table
from rich.text import Text

from engine.errors import NotFoundError, UsageError
from engine.words import plural
from semfora_tui.chat_text import code, fence_language
from semfora_tui.commands import command
from semfora_tui.screens.picker import PickerScreen, PickItem, filter_items
from semfora_tui.slash import ParsedCommand
from semfora_tui.views import PackItemView, PackView

if TYPE_CHECKING:
    from engine.api import SearchHit, SemanticDiff, SourceView, SymbolDetail, SymbolView
    from semfora_tui.screens.main import MainScreen

# Results listed by /search.
SEARCH_LIMIT = 30
# Width of /context's reason column: longer reasons end in "…" (the budget pane has them whole).
REASON_CELLS = 48
# The narrowest reason column /context puts beside the names; with less room, reasons go under them.
REASON_MIN_CELLS = 24


@command("search")
async def search(screen: MainScreen, cmd: ParsedCommand) -> None:
    if not cmd.rest:
        raise UsageError("/search needs a query, e.g. /search parse config")
    query = cmd.rest

    def job() -> tuple[list[SearchHit], list[str]]:
        warnings: list[str] = []  # e.g. vectors unavailable: said once, under the results
        return screen.bridge.search(query, limit=SEARCH_LIMIT, on_warning=warnings.append), warnings

    async def show(found: tuple[list[SearchHit], list[str]]) -> None:
        hits, warnings = found
        await _show_search(screen, query, hits)
        for warning in warnings:
            await screen.note(f"_{warning}_")

    screen.run_job(job, show)


async def _show_search(screen: MainScreen, query: str, hits: list[SearchHit]) -> None:
    if not hits:
        await screen.note(f"No results for _{query}_.")
        return
    items: list[PickItem] = []
    lines: list[str] = []
    for hit in hits:
        symbol = hit.symbol or ""
        start = hit.start_line or 1
        end = hit.end_line or start
        items.append(
            PickItem(
                f"{hit.file}:{start}  {symbol}  ({hit.score:.3f})", f"{hit.file}\t{symbol}\t{start}\t{end}"
            )
        )
        lines.append(f"- {code(f'{hit.file}:{start}')} {code(symbol) if symbol else ''}")
    await screen.note(f"**{plural(len(hits), 'result')}** for _{query}_:\n" + "\n".join(lines))

    def chosen(item: PickItem | None) -> None:
        if item is not None:
            file, symbol, start, end = item.value.split("\t")
            open_result(screen, file, symbol, int(start), int(end))

    screen.app.push_screen(
        PickerScreen(f"/search {query}", lambda typed: filter_items(items, typed), items=items), chosen
    )


def open_result(screen: MainScreen, file: str, symbol: str, start: int, end: int) -> None:
    """Show the symbol's source (or the hit's lines) in the chat."""
    bridge = screen.bridge

    def job() -> str:
        source: SourceView | None = None
        if symbol:
            try:
                source = bridge.symbol_source(symbol)
            except NotFoundError:
                source = None  # the index moved on since the search; show the hit's own lines
        return _source_markdown(source, file) if source else _file_lines(bridge.root, file, start, end)

    screen.run_job(job, screen.note)


def _file_lines(root: Path, file: str, start: int, end: int) -> str:
    target = (root / file).resolve()
    if not target.is_relative_to(root):
        raise UsageError(f"{file} is outside the repository")
    lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
    body = "\n".join(lines[start - 1 : max(end, start)])
    return f"{code(f'{file}:{start}-{end}')}\n\n```{fence_language(file)}\n{body}\n```"


def _source_markdown(source: SourceView, file: str) -> str:
    file = source.file or file
    where = f"{file}:{source.start_line}-{source.end_line}"
    return f"{code(source.symbol)} — {code(where)}\n\n```{fence_language(file)}\n{source.source}\n```"


@command("symbol")
async def symbol(screen: MainScreen, cmd: ParsedCommand) -> None:
    if not cmd.rest:
        raise UsageError("/symbol needs a name or id, e.g. /symbol Config.load")
    name = cmd.rest

    async def show(found: tuple[SymbolDetail, tuple[SymbolView, ...]]) -> None:
        detail, others = found
        await screen.note(_others_markdown(name, detail, others) + _symbols_markdown(name, [detail]))

    screen.run_job(lambda: screen.bridge.symbols(name), show)


# How many other symbols of the same name `/symbol` lists before "and N more".
MAX_OTHERS_LISTED = 8


def _others_markdown(name: str, detail: SymbolDetail, others: tuple[SymbolView, ...]) -> str:
    """Say that ``name`` is ambiguous, which symbol is shown, and how to ask for another."""
    if not others:
        return ""
    shown = detail.symbol.qualified_name or detail.symbol.name
    listed = ", ".join(
        f"{code(o.qualified_name or o.name)} ({code(f'{o.file}:{o.start_line}')})"
        for o in others[:MAX_OTHERS_LISTED]
    )
    more = f" and {len(others) - MAX_OTHERS_LISTED} more" if len(others) > MAX_OTHERS_LISTED else ""
    return (
        f"{plural(len(others) + 1, 'symbol')} are named {code(name)}; this is {code(shown)}. "
        f"Others: {listed}{more}. `/symbol` with a qualified name shows one of them.\n\n"
    )


def _symbols_markdown(name: str, found: list[SymbolDetail]) -> str:
    blocks: list[str] = []
    for detail in found:
        sym = detail.symbol
        qualified = sym.qualified_name or sym.name or name
        where = f"{sym.file}:{sym.start_line}-{sym.end_line}"
        lines = [
            f"### {code(qualified)} ({sym.kind})",
            f"{code(where)} · risk {sym.risk}",
        ]
        if sym.doc:
            lines.append(f"_{sym.doc}_")
        lines.append(f"```\n{sym.signature or qualified}\n```")
        calls = ", ".join(code(c.name) for c in detail.calls[:12])
        callers = ", ".join(
            f"{code(c.name)} ({code(c.file + ':' + str(c.line))})" for c in detail.callers[:8]
        )
        if calls:
            lines.append(f"**calls:** {calls}")
        if callers:
            lines.append(f"**called by:** {callers}")
        blocks.append("\n\n".join(lines))
    return "\n\n".join(blocks)


@command("overview")
async def overview(screen: MainScreen, _cmd: ParsedCommand) -> None:
    screen.run_job(screen.bridge.overview, lambda ov: screen.note(overview_markdown(ov.data)))


# The overview lists up to 50 modules for the model; the chat shows the largest first, this many.
OVERVIEW_MODULES_SHOWN = 12


def overview_markdown(data: Mapping[str, Any]) -> str:
    """The repository overview for a person: sentences and lists, not the model's TOON table."""
    totals = data.get("totals") or {}
    risk = data.get("risk") or {}
    name = data.get("project") or data.get("repo") or "this repository"
    languages = ", ".join(
        f"{lang['name']} ({plural(int(lang['files']), 'file', grouped=True)})"
        for lang in data.get("languages") or ()
    )
    lines = [
        f"**Repository overview: {name}**",
        "",
        f"{plural(int(totals.get('files', 0)), 'file', grouped=True)}, "
        f"{plural(int(totals.get('lines', 0)), 'line', grouped=True)}, "
        f"{plural(int(totals.get('symbols', 0)), 'symbol', grouped=True)} and "
        f"{plural(int(totals.get('call_edges', 0)), 'call site', grouped=True)}"
        + (f"; {languages}." if languages else "."),
        f"Risk: {int(risk.get('high', 0)):,} high and {int(risk.get('medium', 0)):,} medium symbols.",
    ]
    if data.get("frameworks"):
        lines.append("Frameworks: " + ", ".join(code(str(f)) for f in data["frameworks"]) + ".")
    modules = list(data.get("modules") or ())
    if modules:
        lines += ["", f"**Modules** ({len(modules)}, largest first)", ""]
        for m in modules[:OVERVIEW_MODULES_SHOWN]:
            purpose = f": {m['purpose']}" if m.get("purpose") else ""
            counts = f"{plural(int(m['files']), 'file', grouped=True)}, {plural(int(m['symbols']), 'symbol', grouped=True)}"
            lines.append(f"- {code(str(m['name']))} ({counts}){purpose}")
        if len(modules) > OVERVIEW_MODULES_SHOWN:
            lines.append(f"- … and {plural(len(modules) - OVERVIEW_MODULES_SHOWN, 'more module')}")
    if data.get("entry_points"):
        lines += ["", "**Entry points**", ""]
        lines += [
            f"- {code(str(e['name']))} ({e['kind']}): {code(str(e['where']))}" for e in data["entry_points"]
        ]
    if data.get("hubs"):
        lines += ["", "**Most called**", ""]
        lines += [
            f"- {code(str(h['symbol']))} in {code(str(h['file']))}: {plural(int(h['callers']), 'caller', grouped=True)}"
            for h in data["hubs"]
        ]
    if data.get("dependencies"):
        lines += ["", "**Dependencies between modules**", ""]
        lines += [
            f"- {code(str(d['from']))} → {code(str(d['to']))}: {plural(int(d['imports']), 'import', grouped=True)}"
            for d in data["dependencies"]
        ]
    return "\n".join(lines)


@command("diff")
async def diff(screen: MainScreen, cmd: ParsedCommand) -> None:
    base = cmd.args[0] if cmd.args else None
    target = cmd.args[1] if len(cmd.args) > 1 else None

    async def show(result: SemanticDiff) -> None:
        await screen.note(f"**Semantic diff**\n\n```\n{result.to_text()}\n```")

    screen.run_job(lambda: screen.bridge.semantic_diff(base, target), show)


@command("context")
async def context(screen: MainScreen, cmd: ParsedCommand) -> None:
    if cmd.rest:
        task = cmd.rest

        async def show(pack: PackView) -> None:
            await show_context(screen, pack)

        screen.run_job(lambda: screen.bridge.context(task), show)
        return
    if screen.last_pack is None:
        await screen.note("No context pack yet. `/context TASK` builds one without calling a model.")
        return
    await show_context(screen, screen.last_pack)


class PackTable:
    """The pack's items laid out for the width the chat has: a table of one line each (kind,
    tokens, priority, name, reason) when every name fits whole beside a readable reason; else
    each item's name on a line of its own, its kind, tokens, priority and reason under it. Names
    are what a user looks for: at 120 columns the table cut them to 12 characters ("AsyncClient.…")."""

    def __init__(self, items: tuple[PackItemView, ...]) -> None:
        self.items = items

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self._table(options.max_width)

    def _table(self, width: int) -> Table | Group:
        columns = [
            [title, *(value(i) for i in self.items)]
            for title, value in (
                ("kind", lambda i: i.kind),
                ("tokens", lambda i: f"{i.tokens:,}"),
                ("priority", lambda i: i.priority),
                ("name", lambda i: i.name),
            )
        ]
        cells = sum(max(cell_len(c) for c in column) + 2 for column in columns)  # padding (0, 1)
        if cells + REASON_MIN_CELLS + 2 > width:
            return Group(*(self._item(item) for item in self.items))
        table = Table(expand=True, box=None, padding=(0, 1), header_style="bold")
        table.add_column("kind", no_wrap=True)
        table.add_column("tokens", justify="right", no_wrap=True)
        table.add_column("priority", no_wrap=True)
        table.add_column("name", no_wrap=True)
        table.add_column("reason", no_wrap=True, overflow="ellipsis", ratio=1, max_width=REASON_CELLS)
        for item in self.items:
            table.add_row(item.kind, f"{item.tokens:,}", item.priority, item.name, item.reason)
        return table

    @staticmethod
    def _item(item: PackItemView) -> Group:
        details = Text(
            f"  {item.kind} · {item.tokens:,} tokens · {item.priority} · {item.reason}",
            style="dim",
            no_wrap=True,
            overflow="ellipsis",
        )
        return Group(Text(item.name, style="bold", overflow="fold"), details)


async def show_context(screen: MainScreen, pack: PackView) -> None:
    """The pack as a table that fits the chat (see ``PackTable``); the transcript gets it as text."""
    screen.last_pack = pack
    screen.budget_pane.show_pack(pack)
    await screen.note(
        f"**Context pack** for _{pack.task}_ — intent `{pack.intent}`, {pack.total_tokens:,} of "
        f"{pack.budget:,} tokens, {len(pack.items)} items"
    )
    plain = ["kind | name | tokens | priority | reason"]
    for item in pack.items:
        plain.append(f"{item.kind} | {item.name} | {item.tokens:,} | {item.priority} | {item.reason}")
    await screen.chat.add_table(PackTable(pack.items), "\n".join(plain))
    for warning in pack.warnings:  # e.g. vectors unavailable: said under the pack it affected
        await screen.note(f"_{warning}_")
