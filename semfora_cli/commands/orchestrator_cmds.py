"""`semfora context` (the pack, never a model call) and `semfora ask` (one headless turn).

Owns argument handling and printing only; every decision is the orchestrator's, reached
through the front door (``engine.api``).
`ask` checks for a usable model before anything else, so a missing key costs nothing.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from engine import api
from engine.config import Settings, load_settings
from engine.errors import EXIT_OK, EXIT_PROBLEM, UsageError
from engine.repo.layout import RepoLayout
from engine.words import plural
from semfora_cli.output import engine_warning, print_json, quiet_stdout, warn

EXIT_INTERRUPTED = 130
# How often the main thread wakes while a turn streams, so Ctrl-C is noticed promptly.
JOIN_POLL_SECONDS = 0.1


def _settings(layout: RepoLayout, args: argparse.Namespace) -> Settings:
    overrides: dict[str, Any] = {"budget.context_tokens": getattr(args, "budget", None)}
    if getattr(args, "model", None):
        overrides["llm.model"] = args.model
    return load_settings(layout.root, overrides=overrides).settings


def _ensure_index(engine: api.Engine, quiet: bool, *, refresh: bool = False) -> None:
    """Build the index the first time. ``refresh`` also brings it up to date (incremental).

    `context` uses the index as it is, so it stays fast; `ask` refreshes it first (well under a
    second when little changed), because stale line numbers would make SEARCH blocks miss.
    While another process writes an index that exists, neither waits for it (`ask` sat out
    the writer's whole run): both answer from the index as it is and say so, as `search` does.
    """
    busy = api.index_busy_note(engine)
    if busy is not None:
        warn(busy)
        return

    def first() -> None:
        if not quiet:
            warn("the index is empty: building it now")

    api.refresh_index(
        engine,
        refresh=refresh,
        on_first=first,
        on_busy=lambda why: warn(f"index not refreshed ({why}); answering from the index as it is"),
        busy_wait=0,
    )


def run(args: argparse.Namespace) -> int:
    if not args.task.strip():
        # Before anything that costs: an empty task would still be sent (and billed).
        raise UsageError(
            f"{args.command} needs a task: say what you want done", hint='e.g. semfora ask "explain X"'
        )
    if args.command == "context":
        return run_context(args)
    return run_ask(args)


def run_context(args: argparse.Namespace) -> int:
    api.prefer_query_service()  # one pack per process: the shared service holds chromadb and the model
    layout = RepoLayout.for_path(args.path)
    settings = _settings(layout, args)
    with api.Engine(layout, settings, on_warning=engine_warning) as engine:
        _ensure_index(engine, quiet=args.json)
        orch = engine.orchestrator()
        pack = orch.build_context(args.task, settings.budget.context_tokens)
        if args.json:
            print_json(pack.to_json())
            return EXIT_OK
        sys.stdout.write(orch.render(pack))
        sys.stdout.write(
            f"\n-- intent {pack.intent} ({pack.intent_rule}); {plural(len(pack.items), 'item')}, "
            f"{pack.total_tokens:,}/{pack.budget:,} tokens\n"
        )
        for item in pack.items:
            where = (
                f"{item.file}:{item.start_line}-{item.end_line}"
                if item.file and item.start_line
                else (item.file or "")
            )
            sys.stdout.write(
                f"   {item.priority.label:<8} {item.kind:<8} {item.tokens:>6}  "
                f"{item.symbol or ''} {where}  [{item.reason}]\n"
            )
        for note in pack.notes:
            sys.stdout.write(f"   note: {note}\n")
        return EXIT_OK


def _usage_line(result: api.TurnResult) -> str:
    u = result.usage
    return (
        f"-- {result.model}: input {u.input_tokens:,} (cache write {u.cache_creation_input_tokens:,}, "
        f"cache read {u.cache_read_input_tokens:,}), output {u.output_tokens:,} tokens; "
        f"cost ${result.cost:.4f}; context {result.pack.total_tokens:,}/{result.pack.budget:,} tokens; "
        f"run {result.run_id}"
    )


def _applied_line(result: api.TurnResult) -> str:
    """What `--apply` wrote: every hunk the commit took, those staged before this turn included
    (it said "applied 1 hunk in a.py" while it also wrote an earlier turn's hunks to b.py)."""
    commit = result.commit
    line = f"-- applied {plural(commit.hunks, 'hunk')} in {', '.join(commit.files)}"
    earlier = commit.hunks - result.hunks
    if earlier > 0:
        line += f" ({earlier} of them staged before this turn)"
    return line


def run_ask(args: argparse.Namespace) -> int:
    # One turn per process, like `context`: the shared service holds chromadb and the model, for
    # the pack's search and for turn memory.
    api.prefer_query_service()
    layout = RepoLayout.for_path(args.path)
    settings = _settings(layout, args)
    reasoner = api.make_reasoner(settings, args.model)  # ModelUnavailable (exit 3) before any work
    engine = api.Engine(layout, settings, on_warning=engine_warning)
    try:
        _ensure_index(engine, quiet=args.json, refresh=True)
        # Its own orchestrator, not the engine's: the turn runs on a worker thread.
        orch = api.open_orchestrator(layout, settings, reasoner, resume=args.resume)
    finally:
        engine.close()
    cancel = threading.Event()
    done = threading.Event()
    box: dict[str, Any] = {}
    mid_line = threading.Event()  # the reply printed so far does not end with a newline

    def on_text(text: str) -> None:
        if not args.json and text:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except BrokenPipeError:
                # The reader left (`semfora ask ... | head`): the turn goes on to stage its edits
                # (it is paid for) with nothing more printed; it ended with nothing staged.
                quiet_stdout()
            mid_line.clear() if text.endswith("\n") else mid_line.set()

    def end_reply_line() -> None:
        # A status or error line after a reply that stopped mid-line (a NEED block, a cut
        # stream) was glued to it on a terminal ("src/app.pysemfora: the model asked ..."),
        # and the next reply ran on from there.
        if mid_line.is_set():
            sys.stdout.write("\n")
            sys.stdout.flush()
            mid_line.clear()

    def on_status(message: str) -> None:
        # On stderr, so retries and progress show with --json and in a pipe, and never mix
        # into the reply on stdout.
        end_reply_line()
        sys.stderr.write(f"semfora: {message}\n")
        sys.stderr.flush()

    def work() -> None:
        try:
            box["result"] = orch.run_turn(
                args.task,
                on_text=on_text,
                cancel=cancel,
                stage=True,
                apply=args.apply,
                budget=settings.budget.context_tokens,
                on_status=on_status,
            )
        except BaseException as exc:  # handed to the main thread, which re-raises it
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="semfora-ask", daemon=True)
    worker.start()
    # Waits on an Event, not Thread.join: a join that Ctrl-C interrupts can leave the thread
    # looking finished while it still runs (CPython), and the turn's result was then missing.
    try:
        while not done.wait(JOIN_POLL_SECONDS):
            pass
    except KeyboardInterrupt:
        cancel.set()
        end_reply_line()
        sys.stderr.write("semfora: cancelling the turn (Ctrl-C again to quit at once)\n")
        sys.stderr.flush()
        done.wait()  # a second Ctrl-C ends the command here ("interrupted", exit 130)
    finally:
        orch.close()
    if "error" in box:
        end_reply_line()
        raise box["error"]
    result = box["result"]
    if args.json:
        print_json(result.to_json())
    else:
        sys.stdout.write("\n\n")
        if result.outcome == "applied":
            sys.stdout.write(_applied_line(result) + "\n")
        elif result.edits_staged:
            sys.stdout.write(
                f"-- staged {plural(result.hunks, 'hunk')} in {', '.join(result.edits_staged)}"
                "; review with `semfora edits list`\n"
            )
        for error in result.errors:
            sys.stdout.write(f"-- problem: {error}\n")
        for warning in result.pack.warnings:
            # What was off while the pack was built (vectors, say): the answer rests on a poorer
            # pack. `context` and the app said so; `ask` printed only the budget note.
            sys.stdout.write(f"-- note: {warning}\n")
        for check in getattr(result.commit, "checks", ()):
            if not check.ok and check.output.strip():
                sys.stdout.write(f"-- {check.name} ({check.command}) output:\n{check.output.rstrip()}\n")
        sys.stdout.write(_usage_line(result) + "\n")
    if result.outcome == "cancelled":
        return EXIT_INTERRUPTED
    if not result.ok:
        return EXIT_PROBLEM
    return EXIT_OK
