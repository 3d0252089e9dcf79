"""Entry point of the `semfora` command: parse arguments and dispatch.

The parser below is the command-line contract of ../shared/BRIEF.md; other
tools depend on its names, flags and exit codes, so add to it but never rename.
Command modules are imported lazily, after parsing.
"""

from __future__ import annotations

import argparse
import importlib
import sqlite3
import sys
from collections.abc import Callable, Sequence

from engine.errors import EXIT_USAGE, SemforaError, UsageError

# command name -> module under semfora_cli.commands that implements it
COMMANDS: dict[str, str] = {
    "index": "engine_cmds",
    "overview": "engine_cmds",
    "symbol": "engine_cmds",
    "callers": "engine_cmds",
    "languages": "engine_cmds",
    "search": "search_cmds",
    "cache": "search_cmds",
    "metrics": "search_cmds",
    "context": "orchestrator_cmds",
    "ask": "orchestrator_cmds",
    "edits": "edits_cmds",
    "diff": "review_cmds",
    "ci": "review_cmds",
    "mcp": "mcp_cmd",
    "doctor": "doctor_cmd",
    "config": "config_cmd",
    "trust": "trust_cmd",
}


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors exit 2 with our one-line error format."""

    def error(self, message: str) -> None:  # type: ignore[override]
        argv = sys.argv[1:]
        # `--json`, `--output json` or `--output=json`; not a query or task that reads "json".
        as_json = (
            "--json" in argv
            or "--output=json" in argv
            or ("--output", "json") in zip(argv, argv[1:], strict=False)
        )
        from semfora_cli.output import report_error

        hint = None
        missing = message.rsplit("required: ", 1)[-1] if "arguments are required: " in message else ""
        dashed = [a for a in argv if a.startswith("-") and a != "--" and not a.startswith("--")]
        if missing in ("query", "task", "name") and dashed:
            # `semfora search -x`: a query that starts with a dash was read as an unknown flag.
            hint = f"a {missing} that starts with '-' goes after '--': {self.prog} -- {dashed[0]}"
        report_error(UsageError(f"{self.prog}: {message}", hint=hint), as_json=as_json)
        raise SystemExit(EXIT_USAGE)


def _int_in(low: int, high: int | None, what: str) -> Callable[[str], int]:
    """An argparse type: an integer in [low, high], else a usage error naming the range."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a whole number, not {text!r}") from None
        if value < low or (high is not None and value > high):
            allowed = f"between {low} and {high}" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"{what} must be {allowed}, not {value}")
        return value

    return parse


def _budget(p: argparse.ArgumentParser) -> None:
    """``--budget``: the range is budget.context_tokens's own, so a flag and a config agree."""
    from engine.config import BudgetSettings

    field = BudgetSettings.model_fields["context_tokens"]
    low = int(next(m.ge for m in field.metadata if hasattr(m, "ge")))
    high = int(next(m.le for m in field.metadata if hasattr(m, "le")))
    p.add_argument(
        "--budget",
        type=_int_in(low, high, "--budget"),
        default=None,
        help=f"context budget in tokens, {low}-{high} (default: budget.context_tokens)",
    )


def _path(p: argparse.ArgumentParser) -> None:
    p.add_argument("--path", default=None, help="repository root (default: current directory)")


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON instead of text")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="semfora",
        description="A terminal code-editing assistant that understands your repository first.\n"
        "Run `semfora [PATH]` to open the app, or one of the commands below.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version="semfora 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    p = sub.add_parser("index", help="build or refresh the repository index")
    _path(p)
    p.add_argument("--rebuild", action="store_true", help="discard the index and build it anew")
    p.add_argument("--no-vectors", action="store_true", help="skip the vector index")
    p.add_argument(
        "--paths",
        action="store_true",
        help="also list every changed, deleted and skipped path, a line each (with --json: as lists); by default only counts",
    )
    _json(p)

    p = sub.add_parser("overview", help="print the bounded repository overview")
    _path(p)
    p.add_argument("--format", choices=["toon", "json"], default=None, help="output format (default: toon)")
    p.add_argument("--json", action="store_true", help="print JSON instead of TOON (same as --format json)")

    p = sub.add_parser("search", help="search code: hybrid, full-text, vector or symbols")
    p.add_argument("query", help="what to look for")
    _path(p)
    p.add_argument(
        "--mode",
        choices=["hybrid", "fts", "vector", "symbols"],
        default="hybrid",
        help="which index to search",
    )
    p.add_argument("--limit", type=int, default=10, help="maximum number of results, 1-200")
    p.add_argument("--expand", action="store_true", help="expand the query with a local LLM")
    p.add_argument("--rerank", action="store_true", help="rerank with a local LLM")
    _json(p)

    p = sub.add_parser("symbol", help="show a symbol by name or id")
    p.add_argument("name_or_id", help="a symbol name, qualified name (`Class.method`) or id")
    _path(p)
    p.add_argument("--source", action="store_true", help="include the source text")
    _json(p)

    p = sub.add_parser("callers", help="walk the callers of a symbol")
    p.add_argument("symbol", help="a symbol name, qualified name (`Class.method`) or id")
    _path(p)
    p.add_argument("--depth", type=int, default=1, help="how many levels of callers to walk, 1-6")
    _json(p)

    p = sub.add_parser("languages", help="list supported languages and their level")
    _json(p)

    p = sub.add_parser("context", help="print the context pack for a task (never calls an LLM)")
    p.add_argument("task", help="the task in plain words")
    _path(p)
    _budget(p)
    _json(p)

    p = sub.add_parser("ask", help="ask the model; stream the answer and stage its edits")
    p.add_argument("task", help="the task in plain words")
    _path(p)
    p.add_argument("--model", default=None, help="model to use (default: llm.model / SEMFORA_MODEL)")
    _budget(p)
    g = p.add_mutually_exclusive_group()
    g.add_argument("--stage", action="store_true", help="stage proposed edits (default)")
    g.add_argument("--apply", action="store_true", help="stage, accept and commit proposed edits")
    p.add_argument("--resume", action="store_true", help="continue the last session")
    _json(p)

    p = sub.add_parser("edits", help="review and commit staged edits")
    p.add_argument(
        "action",
        help="what to do",
        choices=[
            "list",
            "show",
            "stage",
            "accept",
            "reject",
            "toggle",
            "commit",
            "rollback",
            "undo",
            "rebase",
        ],
    )
    p.add_argument(
        "target",
        nargs="?",
        default=None,
        help="FILE for stage (from the current directory, else the repository), hunk ID or 'all' for accept/reject",
    )
    _path(p)
    p.add_argument("--all", action="store_true", help="with commit: accept every pending hunk first")
    p.add_argument("--force", action="store_true", help="with undo: revert even if files changed since")
    p.add_argument("--message", default=None, help="with commit: the git commit message")
    _json(p)

    p = sub.add_parser("diff", help="semantic diff between refs (TARGET may be WORKING)")
    p.add_argument(
        "base", nargs="?", default=None, help="base ref (default HEAD); A...B diffs B against the merge base"
    )
    p.add_argument("target", nargs="?", default=None, help="target ref, WORKING or STAGED (default WORKING)")
    _path(p)
    p.add_argument(
        "--format",
        choices=["toon", "json", "text"],
        default=None,
        help="output format (default: text on a terminal, TOON when piped)",
    )
    _json(p)

    p = sub.add_parser("ci", help="review a pull request or a commit for CI")
    p.add_argument(
        "--mode", choices=["pr", "commit"], required=True, help="review a pull request or one commit"
    )
    p.add_argument(
        "--base", default=None, help="with --mode pr: the branch the PR merges into (or the range BASE..HEAD)"
    )
    p.add_argument("--head", default=None, help="with --mode pr: the PR's head (default HEAD)")
    p.add_argument(
        "--commit",
        default=None,
        help=(
            "with --mode commit: the commit to review (default HEAD; STAGED = the index, for pre-commit "
            "hooks; WORKING = everything not yet committed)"
        ),
    )
    p.add_argument(
        "--output",
        choices=["json", "text", "sarif", "github"],
        default="text",
        help="report format (sarif: SARIF 2.1.0 for code scanning; github: GitHub Actions annotations)",
    )
    p.add_argument("--json", action="store_true", help="print JSON (the same as --output json)")
    p.add_argument(
        "--fail-on",
        choices=["low", "medium", "high"],
        default="high",
        help="lowest finding severity that requests changes",
    )
    p.add_argument("--model", default=None, help="model for the review (required to work once named)")
    p.add_argument("--no-model", action="store_true", help="run the deterministic rules only")
    p.add_argument(
        "--intent", default=None, help="what the change is meant to do (PR title/description), for the model"
    )
    _path(p)

    p = sub.add_parser("mcp", help="serve the engine tools over MCP (stdio)")
    _path(p)
    p.add_argument(
        "--wait",
        type=_int_in(0, 3600, "--wait"),
        default=25,
        metavar="SECONDS",
        help="how long a call waits for an index being built (or for a long call before it) before "
        "it answers INDEX_BUILDING (or SERVER_BUSY); a call with a progress token waits until its turn",
    )

    p = sub.add_parser("doctor", help="check the installation, services and index")
    _path(p)
    p.add_argument("--no-network", action="store_true", help="skip the service checks")
    _json(p)

    p = sub.add_parser("config", help="print the effective configuration and where each value came from")
    _path(p)
    _json(p)

    p = sub.add_parser("trust", help="trust this repository's .semfora.toml (commands, wider reads)")
    _path(p)
    p.add_argument("--revoke", action="store_true", help="stop trusting it")
    _json(p)

    p = sub.add_parser("cache", help="inspect or clear cache.db")
    p.add_argument("action", choices=["stats", "clear"], help="what to do")
    _path(p)
    _json(p)

    p = sub.add_parser("metrics", help="print daily aggregates of search metrics")
    _path(p)
    p.add_argument(
        "--days", type=_int_in(1, None, "--days"), default=14, help="how many days back (at least 1)"
    )
    _json(p)

    return parser


def _tui_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="semfora", description="Open the semfora app on a repository.")
    p.add_argument("path", nargs="?", default=None, help="the repository (default: current directory)")
    # `--path P` as every command takes it: `semfora --path ~/repo` was "unrecognized arguments".
    p.add_argument("--path", dest="path_option", default=None, help="the repository, as the commands take it")
    p.add_argument("--model", default=None, help="model to use (default: llm.model / SEMFORA_MODEL)")
    _budget(p)
    p.add_argument("--resume", action="store_true", help="continue the last session")
    return p


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe whose reader has closed it (``semfora search ... | head``)."""
    import select

    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that closed our stdout ends it quietly with exit 0, like `cat`."""
    try:
        return _main(argv)
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # a broken pipe to something else (a child process) is a real error
        from semfora_cli.output import quiet_stdout

        quiet_stdout()
        return 0


def _main(argv: Sequence[str] | None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    first = args_list[0] if args_list else None
    # Anything but a command name or the parser's own flags opens the app: `semfora --resume`
    # and `semfora --model M` need no PATH (issue 12, item 10).
    if first is None or (first not in COMMANDS and first not in ("-h", "--help", "--version")):
        tui = _tui_parser()
        args = tui.parse_args(args_list)
        if args.path_option is not None:
            if args.path is not None and args.path != args.path_option:
                tui.error(f"two repositories given: {args.path} and --path {args.path_option}")
            args.path = args.path_option
        from semfora_tui.launch import run_app

        return run_app(args)
    parser = build_parser()
    args = parser.parse_args(args_list)
    if args.command is None:
        parser.print_help()
        return 0
    from engine.quarantine import add_listener
    from semfora_cli.output import show_log_warnings, warn

    add_listener(warn)  # a damaged state file set aside is said once, as a warning line
    show_log_warnings()  # and so is anything the engine logs at WARNING
    import engine.config

    # An untrusted .semfora.toml is said like every other warning of the command line.
    engine.config.notice_sink = lambda message: warn(f"[UNTRUSTED_CONFIG] {message}")
    module = importlib.import_module(f"semfora_cli.commands.{COMMANDS[args.command]}")
    as_json = bool(getattr(args, "json", False)) or getattr(args, "output", None) == "json"
    try:
        return int(module.run(args) or 0)
    except SemforaError as err:
        from semfora_cli.output import report_error

        return report_error(err, as_json=as_json)
    except (OSError, sqlite3.OperationalError) as exc:
        # A full disk (the index's cache or the repository) was a traceback from wherever it
        # struck; it is the machine's set-up, said as such.
        from engine.errors import disk_full_error
        from semfora_cli.output import report_error

        full = disk_full_error(exc)
        if full is None:
            raise
        return report_error(full, as_json=as_json)
    except KeyboardInterrupt:
        sys.stderr.write("interrupted\n")
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
