"""How CLI commands print: JSON documents, one-line errors, and TTY detection.

Errors go to stderr as ``error[CODE]: message``; with ``--json`` they become
``{"ok": false, "error_code": ..., "error_message": ...}`` on stdout.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from engine.errors import SemforaError


def print_json(payload: Any) -> None:
    sys.stdout.write(json.dumps(payload, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def report_error(err: SemforaError, *, as_json: bool) -> int:
    if as_json:
        print_json(err.to_json())
    else:
        line = f"error[{err.code}]: {err.message}"
        if err.hint:
            line += f" ({err.hint})"
        sys.stderr.write(line.replace("\n", " ") + "\n")
    return err.exit_code


def warn(message: str) -> None:
    sys.stderr.write(f"warning: {message}\n")


def is_tty() -> bool:
    return sys.stdout.isatty()
