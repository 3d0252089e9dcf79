"""The edit flow from the shell as a demanding user meets it: `semfora edits stage/commit/undo`
with new files, paths with spaces, and undo over hunks still staged."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_semfora

REPO = {"app.py": "def f():\n    return 1\n", "docs/index.md": "# Docs\n"}


def _stage(root: Path, tmp_path: Path, reply: str) -> tuple[int, dict, str]:
    path = tmp_path / "reply.txt"
    path.write_text(reply, encoding="utf-8")
    proc = run_semfora("edits", "stage", str(path), "--json", "--path", str(root))
    return proc.returncode, json.loads(proc.stdout or "{}"), proc.stderr


def test_a_new_file_whose_path_has_spaces_is_created(make_repo, tmp_path: Path) -> None:
    """A reply creating `docs/release notes.md` failed with 'no file path before the block'."""
    root = make_repo(REPO)
    reply = (
        "I'll add release notes.\n\ndocs/release notes.md\n```\n<<<<<<< SEARCH\n=======\n# Release notes\n"
        ">>>>>>> REPLACE\n```\n\n`notes/the plan.md`\n<<<<<<< SEARCH\n=======\nplan\n>>>>>>> REPLACE\n"
    )
    code, payload, err = _stage(root, tmp_path, reply)
    assert code == 0, err
    assert payload["staged_files"] == ["docs/release notes.md", "notes/the plan.md"]
    assert run_semfora("edits", "commit", "--all", "--path", str(root)).returncode == 0
    assert (root / "docs/release notes.md").read_text() == "# Release notes\n"
    assert (root / "notes/the plan.md").read_text() == "plan\n"


def test_a_sentence_above_a_new_file_block_is_not_taken_for_its_path(make_repo, tmp_path: Path) -> None:
    """Prose right above a block names no file; the error says how to write a path with spaces."""
    root = make_repo(REPO)
    code, payload, _err = _stage(
        root, tmp_path, "Create setup.py\n<<<<<<< SEARCH\n=======\nx = 1\n>>>>>>> REPLACE\n"
    )
    assert code == 1
    assert payload["error_code"] == "EDIT_BLOCK_FAILED"
    assert "in backticks" in payload["failures"][0]["message"]
    assert not (root / "Create setup.py").exists()
