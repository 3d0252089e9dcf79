"""Typed errors of the edit layer, each with a stable code listed in docs/edits.md.

Raised where the problem is detected (sandbox, protocol, writer, session); the
CLI and the TUI only turn them into messages. No I/O happens here.
"""

from __future__ import annotations

from engine.errors import EXIT_USAGE, NotFoundError, SemforaError

# The path refusals belong to the one path policy (reads and writes share them).
from engine.errors import PathDenied as PathDenied
from engine.errors import PathTooLong as PathTooLong
from engine.errors import SecretPathDenied as SecretPathDenied
from engine.errors import SymlinkLoop as SymlinkLoop


class FileRefused(SemforaError):
    """A binary, non-UTF-8 or oversized file that the edit layer will not touch (exit 1)."""

    code = "FILE_REFUSED"


class EditConflict(SemforaError):
    """Files changed on disk after they were staged; commit refuses until a rebase (exit 1)."""

    code = "EDIT_CONFLICT"

    def __init__(
        self, message: str, *, paths: tuple[str, ...] = (), code: str | None = None, hint: str | None = None
    ) -> None:
        super().__init__(message, code=code, hint=hint)
        self.paths = paths

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload["paths"] = list(self.paths)
        return payload


class HunkNotFound(NotFoundError):
    """A hunk id or file path that the pending session does not contain (exit 1)."""

    code = "HUNK_NOT_FOUND"


class NothingToUndo(NotFoundError):
    """The undo history is empty (exit 1)."""

    code = "NOTHING_TO_UNDO"


class UndoRefused(SemforaError):
    """Files changed after the commit being undone; `undo --force` overrides (exit 1)."""

    code = "UNDO_REFUSED"

    def __init__(self, message: str, *, paths: tuple[str, ...] = (), hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.paths = paths

    def to_json(self) -> dict[str, object]:
        payload = super().to_json()
        payload["paths"] = list(self.paths)
        return payload


class EditWriteFailed(SemforaError):
    """Writing a commit failed (disk full, permissions); every file was rolled back (exit 1)."""

    code = "EDIT_WRITE_FAILED"


class SessionCorrupt(SemforaError):
    """The persisted session file cannot be read; it is set aside, never silently dropped (exit 2)."""

    code = "EDIT_SESSION_CORRUPT"
    exit_code = EXIT_USAGE


class NoEditBlocks(SemforaError):
    """The staged text holds no SEARCH/REPLACE or SYMBOL block at all (exit 2)."""

    code = "NO_EDIT_BLOCKS"
    exit_code = EXIT_USAGE


class CheckFailed(SemforaError):
    """A lint or test command run after a commit failed; the commit itself stays (exit 1)."""

    code = "CHECK_FAILED"


class JournalCorrupt(SemforaError):
    """An interrupted commit's journal cannot be read, so it cannot be rolled back (exit 1)."""

    code = "EDIT_JOURNAL_CORRUPT"


class HistoryCorrupt(SemforaError):
    """An undo record cannot be read, so that change set cannot be undone (exit 1)."""

    code = "EDIT_HISTORY_CORRUPT"
