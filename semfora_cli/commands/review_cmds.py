"""`semfora diff` and `semfora ci`: print a semantic diff or a CI review, and map the verdict to an exit code.

The work happens behind the front door (``engine.api``: the semantic diff and the CI review);
this module only picks the
output format (text, JSON, SARIF, GitHub annotations: the report's own forms) and the exit code (ci: 0 approved, 1 changes requested or blocked). What it prints
is redacted: a signature with a default password must not land in a CI log.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from typing import TextIO

from engine.errors import EXIT_OK, EXIT_PROBLEM
from engine.policy.redaction import redact, redact_json, redact_quoted
from engine.repo.layout import find_repo_root
from semfora_cli.output import one_format, print_json

# A review this long in silence looks hung in a CI log: past this many seconds the command says
# what it is doing, on stderr (stdout stays the report)...
PROGRESS_AFTER_S = 2.0
# ...at each new phase, and within a phase no more often than this.
PROGRESS_EVERY_S = 5.0


class StderrProgress:
    """``progress(phase, done, total)`` as log lines: ``semfora ci: reading changed files
    1200/6809 (12 s)``. A short run prints nothing; a long one is never silent for long."""

    def __init__(
        self, command: str, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._command = command
        self._stream = stream
        self._clock = clock
        self._start = clock()
        self._phase: str | None = None
        self._said_at = 0.0

    def __call__(self, phase: str, done: int, total: int) -> None:
        now = self._clock()
        if now - self._start < PROGRESS_AFTER_S:
            return
        # ``running the review rules (security-logic)`` and ``(public-api)`` are steps of one
        # phase: eleven rules in a second were eleven log lines.
        key = phase.split(" (", 1)[0]
        if key == self._phase and now - self._said_at < PROGRESS_EVERY_S:
            return
        self._phase, self._said_at = key, now
        count = f" {done}/{total}" if total else ""
        stream = self._stream or sys.stderr
        stream.write(f"semfora {self._command}: {phase}{count} ({now - self._start:.0f} s)\n")
        stream.flush()


def _run_diff(args: argparse.Namespace) -> int:
    from engine.api import semantic_diff, without_secret_content
    from engine.config import load_settings

    root = find_repo_root(args.path)
    settings = load_settings(root).settings
    found = semantic_diff(
        root,
        args.base,
        args.target,
        max_file_bytes=settings.index.max_file_bytes,
        progress=StderrProgress("diff"),
    )
    # A secret file is listed, never shown: its symbols' signatures carry its values.
    diff = without_secret_content(found, settings.edits.deny)
    one_format(args.json, args.format)
    fmt = "json" if args.json else (args.format or ("text" if sys.stdout.isatty() else "toon"))
    if fmt == "json":
        print_json(redact_json(diff.to_json()))
    elif fmt == "toon":
        # TOON quotes a signature (password=\"...\"): redact inside its escaped strings too.
        sys.stdout.write(redact_quoted(diff.to_toon()) + "\n")
    else:
        sys.stdout.write(redact(diff.to_text()) + "\n")
    return EXIT_OK


def _run_ci(args: argparse.Namespace) -> int:
    from engine.api import ci_review

    # ``--output text`` is the default, so only another format conflicts with ``--json``.
    one_format(getattr(args, "json", False), None if args.output == "text" else args.output, "--output")
    report = ci_review(
        args.path,
        args.mode,
        base=args.base,
        head=args.head,
        commit=args.commit,
        fail_on=args.fail_on,
        model=args.model,
        use_model=not getattr(args, "no_model", False),
        intent=getattr(args, "intent", None),
        progress=StderrProgress("ci"),
    )
    if args.output == "json" or getattr(args, "json", False):
        print_json(redact_json(report.to_json()))
    elif args.output == "sarif":
        print_json(redact_json(report.to_sarif()))
    elif args.output == "github":
        sys.stdout.write(redact(report.to_github()) + "\n")
    else:
        sys.stdout.write(redact(report.to_text()) + "\n")
    return EXIT_OK if report.status == "approved" else EXIT_PROBLEM


def run(args: argparse.Namespace) -> int:
    if args.command == "diff":
        return _run_diff(args)
    return _run_ci(args)
