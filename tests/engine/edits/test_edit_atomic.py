"""Atomic commit: real SIGKILLs at every step, a simulated full disk, and two committers at once."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from engine.edits import EditSession, recover
from engine.edits.errors import EditWriteFailed
from engine.edits.faults import FAULT_ENV, reset_fault_counts
from engine.edits.writer import history_records
from engine.repo.layout import RepoLayout
from tests.conftest import SEMFORA, run_semfora

OLD = {
    "a.py": b"def a():\n    return 1\n",
    "b.txt": b"\xef\xbb\xbfone\r\ntwo\r\n",
    "d.txt": b"to be deleted\n",
}
NEW = {
    "a.py": b"def a():\n    return 2\n",
    "b.txt": b"\xef\xbb\xbfone\r\nTWO\r\n",
    "new/dir/c.txt": b"created\n",
    "d.txt": None,
}
# The change set writes 3 temp files, backs up 3 originals and replaces/deletes 4 targets.
MATRIX = (
    [("after_tmp", n) for n in (1, 2, 3)]
    + [("after_journal", 1)]
    + [("after_backup", n) for n in (1, 2, 3)]
    + [("after_replace", n) for n in (1, 2, 3, 4)]
    + [("after_fsync", 1), ("after_complete", 1)]
)


def _snapshot(root: Path) -> dict[str, bytes | None]:
    return {rel: (root / rel).read_bytes() if (root / rel).exists() else None for rel in NEW}


def _stage(root: Path) -> EditSession:
    s = EditSession.load_or_create(RepoLayout.for_path(root))
    s.stage_blocks(
        "a.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
        "b.txt\n<<<<<<< SEARCH\ntwo\n=======\nTWO\n>>>>>>> REPLACE\n"
        "new/dir/c.txt\n<<<<<<< SEARCH\n=======\ncreated\n>>>>>>> REPLACE\n"
    )
    s.stage_delete("d.txt")
    s.accept_all()
    return s


def _litter(root: Path) -> list[str]:
    return [p.name for p in root.rglob("*") if ".semfora-" in p.name]


@pytest.fixture
def staged(make_repo) -> Path:
    root = make_repo({k: v for k, v in OLD.items()})
    _stage(root)
    return root


@pytest.mark.parametrize(("point", "nth"), MATRIX, ids=[f"{p}:{n}" for p, n in MATRIX])
def test_sigkill_at_each_step_leaves_all_old_or_all_new(staged: Path, point: str, nth: int) -> None:
    root = staged
    proc = run_semfora("edits", "commit", cwd=root, env={FAULT_ENV: f"{point}:{nth}"})
    assert proc.returncode == -9, proc.stderr
    on_disk = _snapshot(root)
    old_view = {rel: OLD.get(rel) for rel in NEW}
    for rel, data in on_disk.items():
        assert data in (old_view[rel], NEW[rel]), f"{rel} is half-written"
    report = recover(RepoLayout.for_path(root))
    after = _snapshot(root)
    if point == "after_complete":
        assert after == NEW
        assert len(history_records(RepoLayout.for_path(root))) == 1
        # the session never heard that its commit landed: a rebase sees the hunks already on disk
        session = EditSession.load_or_create(RepoLayout.for_path(root))
        report = session.rebase()
        assert len(report.already_applied) == 2 and report.conflicts == ()
        assert sorted(report.dropped) == ["d.txt", "new/dir/c.txt"]
        assert session.is_empty
    else:
        assert report is not None and "rolling back" in report.message
        assert after == old_view
        assert not (root / "new").exists()
        assert history_records(RepoLayout.for_path(root)) == []
        # the session survived the crash: committing again works
        assert EditSession.load_or_create(RepoLayout.for_path(root)).commit().committed
        assert _snapshot(root) == NEW
    assert _litter(root) == []


def test_cli_says_so_when_it_recovers(staged: Path) -> None:
    killed = run_semfora("edits", "commit", cwd=staged, env={FAULT_ENV: "after_replace:2"})
    assert killed.returncode == -9
    listing = run_semfora("edits", "list", cwd=staged)
    assert listing.returncode == 0
    assert "recovered 1 interrupted commit" in listing.stderr and "a.py" in listing.stderr
    assert _snapshot(staged) == {rel: OLD.get(rel) for rel in NEW}


@pytest.mark.parametrize("spec", ["enospc@after_tmp:2", "enospc@after_backup:1", "enospc@after_replace:3"])
def test_disk_full_rolls_back_in_process(staged: Path, monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv(FAULT_ENV, spec)
    reset_fault_counts()
    session = EditSession.load_or_create(RepoLayout.for_path(staged))
    with pytest.raises(EditWriteFailed) as info:
        session.commit()
    assert "No space left" in info.value.message and "left as it was" in info.value.message
    assert _snapshot(staged) == {rel: OLD.get(rel) for rel in NEW}
    assert _litter(staged) == [] and not (staged / "new").exists()
    layout = RepoLayout.for_path(staged)
    assert history_records(layout) == []
    assert not list((layout.edits_dir / "journal").iterdir())
    monkeypatch.delenv(FAULT_ENV)
    assert EditSession.load_or_create(layout).commit().committed
    assert _snapshot(staged) == NEW


def test_two_concurrent_committers_are_serialised(staged: Path) -> None:
    env = {FAULT_ENV: "sleep@after_backup:1"}
    first = subprocess.Popen(
        [SEMFORA, "edits", "commit", "--json"],
        cwd=staged,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    lock = RepoLayout.for_path(staged).edits_dir / "commit.lock"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (
        lock.exists() and lock.read_text().split()[:1] == [str(first.pid)]
    ):
        time.sleep(0.02)
    impatient = run_semfora("edits", "commit", cwd=staged, env={"SEMFORA_EDITS__LOCK_TIMEOUT": "0.2"})
    patient = run_semfora("edits", "commit", "--json", cwd=staged)
    out, err = first.communicate(timeout=30)
    assert first.returncode == 0, err
    assert impatient.returncode == 1
    assert "error[LOCK_BUSY]" in impatient.stderr and f"pid {first.pid}" in impatient.stderr
    assert patient.returncode == 0, patient.stderr
    assert '"committed": false' in patient.stdout
    assert '"committed": true' in out
    assert _snapshot(staged) == NEW
    digest = hashlib.sha256((staged / "a.py").read_bytes()).hexdigest()
    assert digest == hashlib.sha256(NEW["a.py"]).hexdigest()
    assert len(history_records(RepoLayout.for_path(staged))) == 1
