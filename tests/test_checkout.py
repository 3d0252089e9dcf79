"""What the repository's own files do for a developer's checkout."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT, git


def test_a_virtualenv_linked_into_a_checkout_is_ignored_like_a_real_one(tmp_path: Path) -> None:
    """A second worktree that links `.venv` to the first one's committed the link (`.venv/` matches
    only a directory), and checking that commit out replaced the first worktree's environment."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    git(repo, "init", "-q")
    shutil.copy(ROOT / ".gitignore", repo / ".gitignore")
    (repo / "shared-env").mkdir()
    (repo / ".venv").symlink_to(repo / "shared-env")
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "--", ".venv"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    assert status.stdout == "", status.stdout
