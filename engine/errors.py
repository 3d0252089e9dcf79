"""Typed errors and warnings shared by every layer of the engine.

Each error has a stable ``code`` (documented in docs/errors.md) and the process
exit code the CLI uses for it. Errors are raised where the problem is detected;
the CLI and the UI only turn them into messages. ``EngineWarning`` is the one type of
"something the user should know that did not stop the command" (a damaged index rebuilt, vectors
off), delivered through a ``WarningSink``; its codes are documented in docs/errors.md too.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

EXIT_OK = 0
EXIT_PROBLEM = 1
EXIT_USAGE = 2
EXIT_UNAVAILABLE = 3


@dataclass(frozen=True)
class EngineWarning:
    """Something the user should know that did not stop the command: a stable code and a sentence."""

    code: str
    message: str


# Where a layer reports an ``EngineWarning`` (the CLI prints ``warning: ...``, the app shows a note).
WarningSink = Callable[[EngineWarning], None]


class SemforaError(Exception):
    """Base class: a problem with a stable code and a one-line message."""

    code: str = "SEMFORA_ERROR"
    exit_code: int = EXIT_PROBLEM
    # The context pack of the turn this error ended (set by the orchestrator once the pack was
    # built): a face shows what the failed turn sent, not the pack of the turn before it.
    context_pack: object | None = None

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.hint = hint

    def to_json(self) -> dict[str, object]:
        payload: dict[str, object] = {
            "ok": False,
            "error_code": self.code,
            "error_message": self.message,
        }
        if self.hint:
            payload["hint"] = self.hint
        return payload

    def __str__(self) -> str:
        return self.message


class UsageError(SemforaError):
    """Bad flags, bad arguments or bad input from the user (exit 2)."""

    code = "USAGE"
    exit_code = EXIT_USAGE


class PathError(UsageError):
    """A path that does not exist or is not usable as a repository (exit 2)."""

    code = "PATH_NOT_FOUND"


class PathTooBroad(PathError):
    """A directory too broad to index: the file system root or a home directory that is not a
    git work tree (exit 2). An MCP client started from ``/`` walked the whole disk."""

    code = "PATH_TOO_BROAD"


class SandboxError(SemforaError):
    """A path that resolves outside the repository root or onto a protected file."""

    code = "PATH_OUTSIDE_REPO"
    exit_code = EXIT_USAGE


# The path policy's refusals (raised by engine.policy's read and write sandboxes and by
# engine.repo when a root cannot be resolved). All exit 2: the path given was the problem.


class PathDenied(SandboxError):
    """A path outside the root, through a symlink escape, inside .git, or malformed (exit 2)."""

    code = "PATH_OUTSIDE_REPO"


class SecretPathDenied(SandboxError):
    """A path on the deny-list (.env, keys, credentials): never read for a model, never written."""

    code = "SECRET_PATH_DENIED"


class SymlinkLoop(PathDenied):
    """A path that goes round a loop of symbolic links (exit 2)."""

    code = "SYMLINK_LOOP"


class PathTooLong(PathDenied):
    """A path, or one of its names, longer than the file system accepts (exit 2)."""

    code = "PATH_TOO_LONG"


class NotFoundError(SemforaError):
    """A symbol, file, session or id that the engine does not know (exit 1)."""

    code = "NOT_FOUND"


class ServiceUnavailable(SemforaError):
    """A needed external service (model, Ollama, Chroma) is unavailable (exit 3)."""

    code = "SERVICE_UNAVAILABLE"
    exit_code = EXIT_UNAVAILABLE


class ConfigError(SemforaError):
    """The configuration file or an environment variable is invalid (exit 2)."""

    code = "CONFIG_INVALID"
    exit_code = EXIT_USAGE


class EmbeddingUnavailable(ConfigError):
    """The configured embedding provider cannot run here (missing model or package) (exit 2).

    Raised by the embedding providers (``engine.index.embeddings``) and the light runtime they
    load (``engine.index.minilm``); it lives here so neither imports the other for it."""

    code = "EMBEDDING_UNAVAILABLE"


class CacheDirUnwritable(UsageError):
    """semfora's cache directory cannot be created or written (read-only file system, permissions).

    Exit 2: the set-up is the problem, as with an invalid configuration."""

    code = "CACHE_DIR_UNWRITABLE"


class DiskFull(SemforaError):
    """A write failed for want of space: SQLite's "database or disk is full", ``ENOSPC`` or a
    quota (``EDQUOT``). Exit 2: the machine's set-up is the problem. SQLite rolls the index back
    to its last complete state, so nothing half-written is kept."""

    code = "DISK_FULL"
    exit_code = EXIT_USAGE


def disk_full_error(exc: BaseException) -> DiskFull | None:
    """``exc`` as a ``DiskFull`` when it is a write that failed for want of space, else None."""
    import errno

    # sqlite3's "database or disk is full" (SQLITE_FULL), told by its module rather than imported:
    # the semantic floor, which imports this module, never loads a database driver.
    if type(exc).__module__ == "sqlite3" and type(exc).__name__ == "OperationalError":
        full = "disk is full" in str(exc)
    else:
        full = isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
    if not full:
        return None
    where = getattr(exc, "filename", None)
    return DiskFull(
        f"no space left on the device{f' writing {where}' if where else ''} ({exc})",
        hint="free some space, or set XDG_CACHE_HOME to a directory on another disk (the index "
        "lives there; `semfora doctor` shows where); the index keeps its last complete state",
    )


class IndexError_(SemforaError):
    """The index is missing, locked or corrupt."""

    code = "INDEX_ERROR"


class LockBusy(SemforaError):
    """Another semfora process holds the lock this operation needs."""

    code = "LOCK_BUSY"
