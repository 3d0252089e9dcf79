"""Shared by the review tests: commit a change to a real repository and run the rules on it."""

from __future__ import annotations

from pathlib import Path

from engine.review.findings import Finding
from engine.review.rules import run_rules
from engine.semantic.diff import analyze_commit
from tests.conftest import git


def commit_and_review(root: Path, files: dict[str, str | None]) -> list[Finding]:
    """Write ``files`` (None deletes one), commit them, and return the rules' findings on HEAD."""
    for rel, text in files.items():
        path = root / rel
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "change")
    return run_rules(analyze_commit(root, "HEAD"))
