"""What may follow a successful edit commit: a git commit of exactly its files, lint and tests.

Both are opt-in through settings (``git.auto_commit``, ``edits.lint_cmd``,
``edits.test_cmd``). Failures here are reported, never raised: the edit commit
itself has already landed and stays.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.repo import git

# A lint or test command that runs longer than this is stopped and reported as timed out.
CHECK_TIMEOUT_SECONDS = 900
# Characters of a check's combined output kept for the report (its tail matters most).
CHECK_OUTPUT_TAIL = 4000


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one post-commit command."""

    name: str
    command: str
    exit_code: int
    output: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass(frozen=True)
class GitCommitResult:
    sha: str | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _git(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return git.call_text(root, *args, timeout=None)


def git_commit_paths(root: Path, paths: Sequence[str], message: str) -> GitCommitResult:
    """Commit exactly ``paths`` (additions, changes, deletions), leaving the user's other changes alone.

    ``git commit --only`` commits just the named paths even when other changes
    are staged in the index; those stay staged afterwards.
    """
    if not paths:
        return GitCommitResult(None, "no files to commit")
    if _git(root, "rev-parse", "--git-dir").returncode != 0:
        return GitCommitResult(None, "not a git repository")
    added = _git(root, "add", "-A", "--", *paths)
    if added.returncode != 0:
        return GitCommitResult(None, added.stderr.strip() or "git add failed")
    done = _git(root, "commit", "--only", "-q", "-m", message, "--", *paths)
    if done.returncode != 0:
        return GitCommitResult(None, (done.stderr or done.stdout).strip() or "git commit failed")
    sha = _git(root, "rev-parse", "HEAD").stdout.strip()
    return GitCommitResult(sha or None)


def run_check(root: Path, name: str, command: str) -> CheckResult:
    """Run one configured command in the repository root and keep the tail of its output."""
    try:
        proc = subprocess.run(
            shlex.split(command),
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
            timeout=CHECK_TIMEOUT_SECONDS,
            env=dict(os.environ),
        )
    except FileNotFoundError as exc:
        return CheckResult(name, command, 127, f"command not found: {exc.filename}")
    except subprocess.TimeoutExpired:
        return CheckResult(name, command, 124, f"timed out after {CHECK_TIMEOUT_SECONDS}s")
    output = (proc.stdout + proc.stderr)[-CHECK_OUTPUT_TAIL:]
    return CheckResult(name, command, proc.returncode, output)
