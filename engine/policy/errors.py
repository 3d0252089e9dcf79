"""Typed refusals of the path policy, each with a stable code listed in docs/errors.md.

Raised by the read and write sandboxes where the problem is detected; the CLI prints them as
``error[CODE]``, the MCP server as an error whose ``data.error_code`` is the code. All exit 2:
the path given was the problem.
"""

from __future__ import annotations

from engine.errors import SandboxError


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
