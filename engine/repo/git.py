"""Every git command the engine runs goes through here.

Owns ``run`` (one git command in a repository, never raising for a missing git or a timeout),
``output`` (its stdout as text when it succeeded), ``version`` and ``BlobReader`` (many blobs
through one ``git cat-file --batch`` process). Callers decide what a failure means (the semantic
diff raises ``DiffError``, discovery walks the tree instead). Ground floor: imports nothing of
the engine; never reads configuration, never writes the repository on its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

# The default wait for one git command: enough for `git status` or `ls-files` on a large tree.
GIT_TIMEOUT_S = 60.0


def _command(root: str | os.PathLike[str], args: tuple[str, ...], no_optional_locks: bool) -> list[str]:
    # --no-optional-locks: a read (git status) never refreshes and rewrites the user's .git/index.
    lead = ["git", "--no-optional-locks"] if no_optional_locks else ["git"]
    return [*lead, "-C", os.fspath(root), *args]


def call(
    root: str | os.PathLike[str],
    *args: str,
    timeout: float | None = GIT_TIMEOUT_S,
    no_optional_locks: bool = False,
) -> subprocess.CompletedProcess[bytes]:
    """``git -C root args...``, output captured as bytes; raises ``OSError`` or ``TimeoutExpired``."""
    return subprocess.run(
        _command(root, args, no_optional_locks), capture_output=True, timeout=timeout, check=False
    )


def run(
    root: str | os.PathLike[str],
    *args: str,
    timeout: float | None = GIT_TIMEOUT_S,
    no_optional_locks: bool = False,
) -> subprocess.CompletedProcess[bytes] | None:
    """``call``, but None when git could not run or timed out."""
    try:
        return call(root, *args, timeout=timeout, no_optional_locks=no_optional_locks)
    except (OSError, subprocess.TimeoutExpired):
        return None


def call_text(
    root: str | os.PathLike[str], *args: str, timeout: float | None = GIT_TIMEOUT_S
) -> subprocess.CompletedProcess[str]:
    """``git -C root args...`` with text output; raises ``OSError`` or ``TimeoutExpired``."""
    return subprocess.run(
        _command(root, args, False), capture_output=True, text=True, timeout=timeout, check=False
    )


def output(root: str | os.PathLike[str], *args: str, timeout: float | None = GIT_TIMEOUT_S) -> str | None:
    """Stripped stdout of a git command that succeeded; None when it failed or could not run."""
    proc = run(root, *args, timeout=timeout)
    if proc is None or proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def list_files(root: str | os.PathLike[str], *, timeout: float | None = GIT_TIMEOUT_S) -> list[str] | None:
    """Tracked and untracked, not ignored files (``ls-files --cached --others --exclude-standard``),
    sorted; None outside a work tree or when git failed."""
    proc = run(root, "ls-files", "-z", "--cached", "--others", "--exclude-standard", timeout=timeout)
    if proc is None or proc.returncode != 0:
        return None
    names = proc.stdout.decode("utf-8", errors="surrogateescape").split("\0")
    return sorted({n for n in names if n})


# What git says when it refuses a repository owned by another user (git 2.35.2+, CVE-2022-24765):
# a mounted volume, a checkout made with sudo, a tarball extracted as root.
OWNERSHIP_REFUSAL = "dubious ownership"


def refuses_owner(root: str | os.PathLike[str]) -> bool:
    """Whether git refuses to work in ``root`` because another user owns the repository."""
    proc = run(root, "rev-parse", "--git-dir")
    return proc is not None and proc.returncode != 0 and OWNERSHIP_REFUSAL.encode() in proc.stderr


def safe_directory_fix(root: str | os.PathLike[str]) -> str:
    """The command that tells git to trust ``root`` although another user owns it."""
    return f"git config --global --add safe.directory {os.fspath(root)}"


def version() -> str | None:
    """``git --version`` (e.g. ``git version 2.43.0``); None when git is not on PATH."""
    git = shutil.which("git")
    if git is None:
        return None
    try:
        proc = subprocess.run(
            [git, "--version"], capture_output=True, text=True, check=False, timeout=GIT_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.strip()


class BlobReader:
    """Reads many blobs through one ``git cat-file --batch`` process; ``close`` when done."""

    def __init__(self, root: Path, timeout: float = GIT_TIMEOUT_S) -> None:
        self._timeout = timeout
        self._proc = subprocess.Popen(
            ["git", "-C", str(root), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )

    def read(self, commit: str, path: str) -> bytes | None:
        """The blob ``commit:path`` (``commit`` "" reads the staged blob); None when there is none."""
        assert self._proc.stdin is not None and self._proc.stdout is not None
        if "\n" in path:
            return None
        self._proc.stdin.write(f"{commit}:{path}\n".encode("utf-8", "surrogateescape"))
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode("utf-8", "replace").split()
        if len(header) < 3 or header[-1] == "missing" or header[1] != "blob":
            return None
        size = int(header[2])
        data = self._proc.stdout.read(size)
        self._proc.stdout.read(1)  # the newline after each object
        return data

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        self._proc.wait(timeout=self._timeout)
        if self._proc.stdout is not None:
            self._proc.stdout.close()
