"""`semfora index | overview | symbol | callers | languages`: the semantic engine on the command line.

Thin wrappers over the front door ``engine.api``: parse flags, print text or the
JSON shapes of BRIEF's contract, show a progress bar only on a terminal. Errors are
raised as ``SemforaError``s and printed by ``cli.main``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any, TypeVar

from engine import api
from engine.api import MAX_GRAPH_DEPTH
from engine.errors import NotFoundError, UsageError
from engine.policy.redaction import redact, redact_json
from engine.words import plural
from semfora_cli.output import engine_warning as _warn
from semfora_cli.output import is_tty, one_format, print_json
from semfora_cli.output import warn as _warn_text

EXIT_INTERRUPTED = 130
# Lists in the index report that `index --json` prints only with --paths.
PATH_LISTS = ("changed_paths", "deleted_paths", "skipped_files")


def run(args: argparse.Namespace) -> int:
    handler = {
        "index": _index,
        "overview": _overview,
        "symbol": _symbol,
        "callers": _callers,
        "languages": _languages,
    }[args.command]
    return handler(args)


# Width of the phase column: the longest phase name ("resolving calls"). A wider fixed column
# pushed the counts off an 80-column terminal once a phase name ran long.
PHASE_COLUMN = 15
# Below this many columns the bar and the ETA are left out: phase, counts and rate need about 40.
NARROW_TERMINAL = 60


# The bars are redrawn at most this often (seconds), from the progress calls themselves.
BAR_REFRESH_S = 0.1


class _Bar:
    """A rich progress bar per phase on stderr (done/total, rate, ETA), created only on a terminal.

    The bar column shrinks to what the terminal leaves, so the counts stay visible when narrow. It
    is redrawn by the progress calls, not by rich's refresh thread: a cold build resolves calls in
    forked workers only when this process runs no other thread (forking copies a thread's locks), so
    with that thread a terminal's `semfora index` resolved boost's 462k calls in one process.
    """

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        console = Console(stderr=True)
        phase = TextColumn(f"{{task.description:<{PHASE_COLUMN}}}")
        rate = TextColumn("{task.fields[rate]:>7}")
        # Too narrow for a bar and an ETA beside the counts: keep what says how far it got.
        narrow = console.width < NARROW_TERMINAL
        columns = (
            (phase, MofNCompleteColumn(), rate)
            if narrow
            else (phase, BarColumn(bar_width=None), MofNCompleteColumn(), rate, TimeRemainingColumn())
        )
        self.progress = Progress(*columns, console=console, transient=True, auto_refresh=False)
        self.tasks: dict[str, Any] = {}
        self.drawn = 0.0

    def __enter__(self) -> _Bar:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def __call__(self, message: str, done: int, total: int) -> None:
        task = self.tasks.get(message)
        if task is None:
            task = self.tasks[message] = self.progress.add_task(message, total=max(total, 1), rate="")
        elapsed = self.progress.tasks[task].elapsed or 0.0
        # Files, chunks or call sites: the phase says which, so the rate is per second of it
        # (a tenth below 10/s: the write phase's steps read "0/s" as whole numbers).
        per_s = done / elapsed if elapsed > 0.2 else None
        rate = "" if per_s is None else f"{per_s:,.0f}/s" if per_s >= 10 else f"{per_s:.1f}/s"
        self.progress.update(task, completed=done, total=max(total, 1), rate=rate)
        now = time.monotonic()
        if now - self.drawn >= BAR_REFRESH_S or done >= total:
            self.drawn = now
            self.progress.refresh()


def _index(args: argparse.Namespace) -> int:
    engine = api.Engine.open(args.path, on_warning=_warn)
    with engine:
        bar: AbstractContextManager[Any] = _Bar() if (is_tty() and not args.json) else nullcontext(None)
        report = None
        try:
            with bar as progress:
                report = engine.index(rebuild=args.rebuild, progress=progress)
                vectors = None
                if not args.no_vectors:
                    vectors = api.build_vectors(engine.layout, engine.settings, progress=progress)
        except KeyboardInterrupt:
            # A bare "interrupted" left the user wondering what state the index was left in.
            sys.stderr.write(f"interrupted: {_interrupted_state(report is not None, args.rebuild)}\n")
            return EXIT_INTERRUPTED
    if args.json:
        payload = report.to_json()
        if not args.paths:
            # Counts only: on a big repository the lists are megabytes on one line.
            for key in PATH_LISTS:
                payload.pop(key, None)
        if vectors is None:  # what the index holds all the same: a script can tell what it has
            vectors = api.skipped_vectors(engine.layout, engine.settings)
        payload["vectors"] = {
            "enabled": vectors.enabled,
            "provider": vectors.provider,
            "reason": vectors.reason,
            "embedded": vectors.embedded,
            "missing": vectors.missing,
            "pending": vectors.pending,
            "current": vectors.current,
            "total": vectors.total,
            "store": vectors.store,
            "message": vectors.message,
        }
        print_json(redact_json(payload))  # the vectors' reason may name a URL with its password
        return 0
    for line in [] if args.paths else _skipped_lines(report.skipped_files):  # --paths lists each below
        sys.stderr.write(line + "\n")
    vec = ""
    if vectors is not None:
        # A build that stopped part way says what is left (the message on stderr says why and what next).
        left = f", {vectors.pending:,} not yet" if vectors.pending else ""
        vec = (
            # Its own time: on a big tree embedding takes minutes after files took seconds.
            f"; vectors: {vectors.embedded:,} embedded{left} in {vectors.seconds:.2f}s ({vectors.provider})"
            if vectors.enabled
            else f"; vectors off ({redact(vectors.reason)})"  # "not reachable at http://u:PASSWORD@host"
        )
        if vectors.enabled and vectors.message:
            sys.stderr.write(f"vectors: {redact(vectors.message)}\n")
    print(
        f"indexed {plural(report.files, 'file', grouped=True)} ({report.changed:,} changed, "
        f"{report.added:,} added, {report.deleted:,} deleted, {report.renamed:,} renamed, "
        f"{report.skipped:,} skipped), {plural(report.symbols, 'symbol', grouped=True)}, "
        # Every call site (the JSON's "edges"); the overview's call_edges are those resolved to a definition.
        f"{plural(report.edges, 'call site', grouped=True)} in {report.seconds:.2f}s{vec}"
    )
    if args.paths:  # every path, one a line (it was listed with --json only, and ignored without)
        for path in report.changed_paths:
            print(f"changed  {path}")
        for path in report.deleted_paths:
            print(f"deleted  {path}")
        for skipped in report.skipped_files:
            print(f"skipped  {skipped.path}  ({skipped.reason})")
    return 0


def _interrupted_state(text_index_saved: bool, rebuild: bool) -> str:
    """What a Ctrl-C during `semfora index` left: the text index commits once, at its end."""
    if text_index_saved:
        return "the index is saved; the vectors embedded so far are kept, `semfora index` embeds the rest"
    if rebuild:
        return "the rebuild was not finished; `semfora index` builds the index"
    return "the index is as it was before this run; `semfora index` brings it up to date"


# Skipped files are said one line per reason, naming this many paths: a repository with 14
# credential modules printed 14 lines on every `semfora index`, changed files or not.
SKIPPED_PATHS_NAMED = 3
# Reasons said at most; the rest are counted (`index --paths` lists every path).
SKIPPED_REASONS_SAID = 10


def _skipped_lines(skipped: Any) -> list[str]:
    """``skipped PATH: REASON`` for a reason one file has, else ``skipped N files (a, b, c and N
    more): REASON``; symlinks to targets inside the repository are not news and are left out."""
    by_reason: dict[str, list[str]] = {}
    for s in skipped:
        if not s.reason.startswith("symlink (its target"):
            by_reason.setdefault(s.reason, []).append(s.path)
    lines = []
    for reason, paths in list(by_reason.items())[:SKIPPED_REASONS_SAID]:
        if len(paths) == 1:
            lines.append(f"skipped {paths[0]}: {reason}")
            continue
        named = ", ".join(paths[:SKIPPED_PATHS_NAMED])
        more = f" and {len(paths) - SKIPPED_PATHS_NAMED:,} more" if len(paths) > SKIPPED_PATHS_NAMED else ""
        lines.append(f"skipped {len(paths):,} files ({named}{more}): {reason}")
    rest = sum(len(paths) for paths in list(by_reason.values())[SKIPPED_REASONS_SAID:])
    if rest:
        lines.append(f"... and {plural(rest, 'more skipped file')}")
    if any(len(paths) > SKIPPED_PATHS_NAMED for paths in by_reason.values()) or rest:
        lines.append("(`semfora index --paths` lists every skipped path)")
    return lines


def _overview(args: argparse.Namespace) -> int:
    one_format(args.json, args.format)
    with api.Engine.open(args.path, on_warning=_warn) as engine:
        result = api.get_repo_overview(engine)
    if args.format == "json" or args.json:
        print_json(result.to_json())
    else:
        sys.stdout.write(result.toon.rstrip("\n") + "\n")
    return 0


Found = TypeVar("Found")


# A lookup that failed with one of these may only show that the index is behind the files.
MISS_CODES = frozenset({"SYMBOL_NOT_FOUND", "FILE_NOT_FOUND", "FILE_UNREADABLE"})


def _fresh_on_miss(
    engine: api.Engine,
    lookup: Callable[[], Found],
    exact: Callable[[Found], bool],
    files: Callable[[Found], list[str]],
) -> Found:
    """``lookup()``, asked again after an incremental index run when it missed (no symbol of that
    name, or its file gone) or answered from files changed since the index was built, and the
    run changed something. `symbol` and `callers` answer from the index as it is (fast): a
    function added a minute ago was 'no symbol named ...', a deleted one was still listed."""
    try:
        found = lookup()
    except NotFoundError as err:
        if err.code not in MISS_CODES or not _index_moved(engine):
            raise
        return lookup()
    if exact(found) and not _files_changed(engine, files(found)):
        return found
    return lookup() if _index_moved(engine) else found


def _files_changed(engine: api.Engine, files: list[str]) -> bool:
    """Whether any of ``files`` differs (size or time) from what the index read, or is gone."""
    conn = engine.store().connection()
    for rel in dict.fromkeys(files):
        row = conn.execute("SELECT size, mtime_ns FROM files WHERE path = ?", (rel,)).fetchone()
        try:
            stat = (engine.layout.root / rel).stat()
        except OSError:
            return True
        if row is None or (stat.st_size, stat.st_mtime_ns) != (row[0], row[1]):
            return True
    return False


def _index_moved(engine: api.Engine) -> bool:
    """Bring the index up to date (not waiting for another writer); did any file change?"""
    busy = api.index_busy_note(engine)
    if busy is not None:
        _warn_text(f"{busy}; a symbol added since the last index run is not in it yet")
        return False
    api.refresh_index(
        engine, refresh=True, busy_wait=0, on_busy=lambda why: _warn_text(f"index not refreshed ({why})")
    )
    report = engine.last_report
    return report is not None and report.changed + report.added + report.deleted + report.renamed > 0


def _symbol(args: argparse.Namespace) -> int:
    with api.Engine.open(args.path, on_warning=_warn) as engine:
        found = _fresh_on_miss(
            engine,
            lambda: api.find_symbols(engine, args.name_or_id, with_source=args.source),
            lambda found: found.exact,
            lambda found: [s.file for s in found.symbols],
        )
    if args.json:
        print_json(found.to_json())
        return 0
    if not found.exact:
        # A near name is printed like an exact one: say which it is before the list.
        print(f"no symbol named {args.name_or_id!r}; the nearest names:", file=sys.stderr)
    for i, sym in enumerate(found.symbols):
        print(
            f"{sym.qualified_name}  {sym.kind}  {sym.file}:{sym.start_line}-{sym.end_line}  "
            f"risk={sym.risk}  id={sym.id}"
        )
        if sym.signature:
            print(f"  {sym.signature}")
        if sym.doc:
            print(f"  {sym.doc}")
        if sym.risk_reasons:
            print(f"  risk: {', '.join(sym.risk_reasons)}")
        if found.sources is not None:
            if found.source_notes and found.source_notes[i]:
                print(f"note: {found.source_notes[i]}", file=sys.stderr)
            print(found.sources[i])
    if found.exact and found.total > len(found.symbols):
        print(
            f"{len(found.symbols)} of {found.total:,} symbols named {args.name_or_id!r} shown; "
            "a qualified name (Class.method) or an id narrows it",
            file=sys.stderr,
        )
    return 0


def _callers(args: argparse.Namespace) -> int:
    if args.depth < 1 or args.depth > MAX_GRAPH_DEPTH:
        raise UsageError(f"--depth must be between 1 and {MAX_GRAPH_DEPTH}, not {args.depth}")
    with api.Engine.open(args.path, on_warning=_warn) as engine:
        graph = _fresh_on_miss(
            engine,
            lambda: api.get_callers(engine, args.symbol, args.depth).data,
            lambda _: True,
            lambda graph: [graph.symbol.file, *(n.file for n in graph.callers or ())],
        )
        unresolved = api.unresolved_calls(engine, graph.symbol)
        # Several symbols share the name: say which one this is, as `symbol` lists them all and
        # the MCP tools say it (`callers send` walked Client.send without a word of AsyncClient.send).
        others, total = api.also_named(engine, args.symbol, graph.symbol.id)
    sym = graph.symbol
    nodes = graph.callers or ()
    names = {n.symbol_id: n.name for n in nodes if n.symbol_id}
    rows: list[dict[str, Any]] = [
        {
            "id": n.symbol_id,
            "name": n.name,
            "file": n.file,
            "line": n.line,
            "depth": n.depth,
            "via": n.via,
            # Which caller one level up this one calls (depth 2 and deeper).
            "parent_id": n.parent_id,
            "parent": names.get(n.parent_id) if n.parent_id else None,
        }
        for n in nodes
    ]
    if args.json:
        print_json(
            {
                "symbol": sym.to_json(),
                "depth": args.depth,
                "callers": rows,
                "unresolved_calls": unresolved,
                **({"also_named": others} if others else {}),
            }
        )
        return 0
    if others:
        sys.stderr.write(api.name_note(args.symbol, sym.qualified_name, others, total))
    print(f"{sym.qualified_name}  {sym.file}:{sym.start_line}")
    if not rows:
        print("  (no callers found)")
    children: dict[str | None, list[dict[str, Any]]] = {}
    for r in rows:
        children.setdefault(r["parent_id"], []).append(r)

    def show(parent: str | None) -> None:
        # Each deeper caller is printed under the caller it calls, indented by depth.
        for r in children.get(parent, []):
            print(f"{'  ' * r['depth']}{r['name']}  {r['file']}:{r['line']}  [{r['via']}]")
            if r["id"]:
                show(r["id"])

    show(None)
    if unresolved:
        # The listed callers are the calls tied to this definition; these may call it too.
        method = sym.kind == "method"
        call = f".{sym.name}()" if method else f"{sym.name}()"
        why = " (receiver of unknown type)" if method else ""
        calls = plural(unresolved, f"call of {call}", f"calls of {call}", grouped=True)
        print(f"  ... and {calls} not tied to any definition{why}, which may call it too")
    return 0


def _languages(args: argparse.Namespace) -> int:
    result = api.list_languages()
    if args.json:
        print_json(result.to_json())
        return 0
    for lang in result.data.languages:
        print(f"{lang.name:<14} {lang.level:<12} {' '.join(lang.extensions)}")
    return 0
