"""Undo: multi-level, exact, for created, deleted and untracked files, in git repos and plain dirs."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from engine.edits import EditSession, undo
from engine.edits.errors import NothingToUndo, UndoRefused
from engine.edits.writer import history_records
from engine.repo.layout import RepoLayout
from tests.conftest import ROOT


def _commit_content(layout: RepoLayout, path: str, text: str) -> None:
    s = EditSession.load_or_create(layout)
    s.stage_content(path, text)
    assert s.commit(all=True).committed


@pytest.mark.parametrize("git_init", [True, False])
def test_multi_level_undo_restores_each_state_exactly(make_repo, git_init: bool) -> None:
    root = make_repo({"f.txt": "v0\n", "gone.txt": "keep me\n"}, git_init=git_init)
    (root / "untracked.txt").write_bytes(b"\xef\xbb\xbfu0\r\n")
    os.chmod(root / "untracked.txt", 0o640)
    layout = RepoLayout.for_path(root)
    _commit_content(layout, "f.txt", "v1\n")
    _commit_content(layout, "untracked.txt", "u1\n")
    s = EditSession.load_or_create(layout)
    s.stage_content("made/here.txt", "new file\n")
    s.stage_delete("gone.txt")
    s.commit(all=True)
    _commit_content(layout, "f.txt", "v2\n")
    assert len(history_records(layout)) == 4

    assert undo(layout).files == ("f.txt",)
    assert (root / "f.txt").read_text() == "v1\n"
    result = undo(layout)
    assert set(result.files) == {"made/here.txt", "gone.txt"} and result.remaining == 2
    assert not (root / "made").exists() and (root / "gone.txt").read_text() == "keep me\n"
    undo(layout)
    assert (root / "untracked.txt").read_bytes() == b"\xef\xbb\xbfu0\r\n"
    assert stat.S_IMODE((root / "untracked.txt").stat().st_mode) == 0o640
    undo(layout)
    assert (root / "f.txt").read_text() == "v0\n"
    with pytest.raises(NothingToUndo):
        undo(layout)


def test_undo_refuses_after_a_later_change_unless_forced(make_repo) -> None:
    root = make_repo({"f.txt": "v0\n"})
    layout = RepoLayout.for_path(root)
    _commit_content(layout, "f.txt", "v1\n")
    (root / "f.txt").write_text("user edit\n")
    with pytest.raises(UndoRefused) as info:
        undo(layout)
    assert info.value.paths == ("f.txt",)
    assert (root / "f.txt").read_text() == "user edit\n"
    assert undo(layout, force=True).forced == ("f.txt",)
    assert (root / "f.txt").read_text() == "v0\n"


def test_undo_history_survives_a_restart(make_repo) -> None:
    root = make_repo({"f.txt": "v0\n"})
    _commit_content(RepoLayout.for_path(root), "f.txt", "v1\n")
    code = (
        "from engine.repo.layout import RepoLayout\nfrom engine.edits import undo\n"
        f"print(undo(RepoLayout.for_path({str(root)!r})).files)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert (root / "f.txt").read_text() == "v0\n"


def test_undo_after_a_deleted_file_was_recreated_needs_force(make_repo) -> None:
    root = make_repo({"f.txt": "v0\n"})
    layout = RepoLayout.for_path(root)
    s = EditSession.load_or_create(layout)
    s.stage_delete("f.txt")
    s.commit(all=True)
    (root / "f.txt").write_text("recreated\n")
    with pytest.raises(UndoRefused):
        undo(layout)
    undo(layout, force=True)
    assert (root / "f.txt").read_text() == "v0\n"
