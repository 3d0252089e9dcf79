"""How CLI commands print: JSON documents, one-line errors, and TTY detection.

Errors go to stderr as ``error[CODE]: message``; with ``--json`` they become
``{"ok": false, "error_code": ..., "error_message": ...}`` on stdout.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any

from engine.errors import EngineWarning, SemforaError, UsageError
from engine.policy.redaction import redact, redact_json


def print_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def report_error(err: SemforaError, *, as_json: bool) -> int:
    # Errors and warnings are masked: they name configured URLs (`Ollama is not reachable at
    # http://user:PASSWORD@host`), and these lines end up in CI logs and bug reports.
    if as_json:
        print_json(redact_json(err.to_json()))
    else:
        line = f"error[{err.code}]: {err.message}"
        if err.hint:
            line += f" ({err.hint})"
        sys.stderr.write(redact(line.replace("\n", " ")) + "\n")
    return err.exit_code


def one_format(as_json: bool, chosen: str | None, option: str = "--format") -> None:
    """``--json`` with another format chosen asks for two: a usage error, before any work.
    (``ci --output sarif --json`` printed JSON, and the SARIF upload then failed on it;
    ``overview --json --format toon`` printed JSON without a word.)"""
    if as_json and chosen not in (None, "json"):
        raise UsageError(
            f"--json and {option} {chosen} ask for two formats; keep one (--json is {option} json)"
        )


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {redact(message)}\n")


def engine_warning(w: EngineWarning) -> None:
    """An engine's ``on_warning`` sink: ``warning: [CODE] message`` (a damaged index rebuilt...)."""
    warn(f"[{w.code}] {w.message}")


class _WarningLines(logging.Handler):
    """Engine log records of WARNING and above, printed as ``warning: ...`` lines, each once.

    Without it Python's last-resort handler printed them bare ("cannot read x.py: No such
    file"), unlike every other warning, and once per chunk that asked: three times for one file.
    """

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self._seen: set[str] = set()
        self._seen_lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except (TypeError, ValueError):  # a malformed %-format in someone's log call
            text = str(record.msg)
        with self._seen_lock:
            if text in self._seen:
                return
            self._seen.add(text)
        warn(text.replace("\n", " "))


def show_log_warnings() -> None:
    """Route WARNING+ log records to stderr as one-time ``warning:`` lines (the commands, not the app)."""
    root = logging.getLogger()
    if not any(isinstance(h, _WarningLines) for h in root.handlers):
        root.addHandler(_WarningLines())


def is_tty() -> bool:
    return sys.stdout.isatty()


def quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
    except (OSError, ValueError):
        return
    finally:
        os.close(devnull)
