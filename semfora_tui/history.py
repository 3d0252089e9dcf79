"""The prompt's history on disk: one JSON line per submitted prompt, per repository.

Owns reading, appending and trimming ``prompt_history.jsonl`` in the repository's
cache directory. Prompts that look like they hold a secret are never written. It
must not import textual; a history it cannot read or write only costs the history.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

log = logging.getLogger("semfora.tui.history")

HISTORY_FILE = "prompt_history.jsonl"
# Entries recalled with up/down; the file is trimmed back to this when it grows to twice as many.
HISTORY_LIMIT = 500


class PromptHistory:
    """Append-only history file; appends from two open apps interleave without losing lines."""

    def __init__(self, path: Path, *, enabled: bool = True, limit: int = HISTORY_LIMIT) -> None:
        self.path = path
        self.enabled = enabled
        self.limit = limit
        self._last: str | None = None

    def load(self) -> list[str]:
        """The last ``limit`` prompts, oldest first (empty when disabled, absent or unreadable)."""
        if not self.enabled:
            return []
        try:
            lines = self.path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return []
        except (OSError, UnicodeDecodeError) as exc:
            log.warning("prompt history unreadable (%s); starting without it", exc)
            return []
        entries: list[str] = []
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue  # a torn last line from a killed process
            if isinstance(value, str) and value.strip():
                entries.append(value)
        if len(lines) >= 2 * self.limit:
            self._rewrite(entries[-self.limit :])
        self._last = entries[-1] if entries else None
        return entries[-self.limit :]

    def add(self, text: str) -> bool:
        """Remember ``text``; returns False when it was not written (disabled, secret, I/O error)."""
        if not self.enabled or not text.strip() or text == self._last:
            return False
        from engine.policy.redaction import contains_secret

        if contains_secret(text):
            return False
        line = json.dumps(text, ensure_ascii=False) + "\n"
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # One O_APPEND write per entry: lines from two processes never interleave mid-line.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line.encode("utf-8"))
            finally:
                os.close(fd)
        except OSError as exc:
            log.warning("prompt history not saved (%s)", exc)
            return False
        self._last = text
        return True

    def _rewrite(self, entries: list[str]) -> None:
        tmp = self.path.with_name(self.path.name + f".{os.getpid()}.tmp")
        try:
            tmp.write_text(
                "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in entries), encoding="utf-8"
            )
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            log.warning("prompt history not trimmed (%s)", exc)
