"""EditSession: staging, hunk review, persistence, formats, conflicts, rebase and post-commit steps."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from engine.config import Settings
from engine.edits import EditBlockError, EditSession
from engine.edits.errors import EditConflict, FileRefused, HunkNotFound
from engine.repo.layout import RepoLayout
from tests.conftest import git

TEN = "".join(f"line {i}\n" for i in range(1, 31))


def _session(root: Path, settings: Settings | None = None) -> EditSession:
    return EditSession.load_or_create(RepoLayout.for_path(root), settings)


def _two_hunk_edit(text: str) -> str:
    return text.replace("line 2\n", "line two\n").replace("line 25\n", "line twenty-five\n")


def test_nothing_reaches_disk_until_accepted_and_committed(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    change = s.stage_content("f.txt", _two_hunk_edit(TEN))
    assert change is not None and len(change.hunks) == 2 and change.pending == 2
    assert (root / "f.txt").read_text() == TEN
    result = s.commit()
    assert not result.committed and "nothing accepted" in result.message
    assert (root / "f.txt").read_text() == TEN


def test_partial_accept_commits_only_accepted_hunks_and_keeps_the_rest(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    first, second = s.stage_content("f.txt", _two_hunk_edit(TEN)).hunks
    s.accept(first.id)
    s.reject(second.id)
    assert "+line two" in s.preview() and "twenty-five" not in s.preview()
    result = s.commit()
    assert result.committed and result.files == ("f.txt",) and result.hunks == 1
    assert (root / "f.txt").read_text() == TEN.replace("line 2\n", "line two\n")
    [left] = _session(root).hunks()
    assert left.id == second.id and left.state == "rejected"
    assert _session(root).toggle(second.id) == "accepted"
    _session(root).commit()
    assert (root / "f.txt").read_text() == _two_hunk_edit(TEN)
    assert _session(root).is_empty


def test_restart_shows_the_pending_session_unchanged(make_repo) -> None:
    root = make_repo({"f.txt": TEN, "g.txt": "g\n"})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    s.stage_delete("g.txt")
    s.accept(s.hunks()[0].id)
    before = s.to_json()
    after = _session(root).to_json()
    assert after == before
    assert [f["kind"] for f in after["files"]] == ["modify", "delete"]


def test_restaging_merges_and_keeps_ids_and_states_of_untouched_hunks(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    h1, h2 = s.stage_content("f.txt", _two_hunk_edit(TEN)).hunks
    s.accept(h1.id)
    s.reject(h2.id)
    s.stage_blocks("f.txt\n<<<<<<< SEARCH\nline 14\n=======\nline fourteen\n>>>>>>> REPLACE\n")
    hunks = {h.id: h.state for h in _session(root).hunks()}
    assert hunks[h1.id] == "accepted" and hunks[h2.id] == "rejected"
    assert len(hunks) == 3 and list(hunks.values()).count("pending") == 1


def test_accept_file_reject_file_and_id_prefixes(make_repo) -> None:
    root = make_repo({"f.txt": TEN, "g.txt": "a\n"})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    s.stage_content("g.txt", "b\n")
    assert s.accept_file("f.txt") == 2
    g = s.files()[1].hunks[0]
    assert s.accept(g.id[:5]) == "accepted"
    assert s.reject_file("g.txt") == 1
    with pytest.raises(HunkNotFound):
        s.accept("zzzzzzzz")
    with pytest.raises(HunkNotFound) as short:
        s.accept(g.id[:3])  # a real id's start, too short to count: say so, not "no such hunk"
    assert "too short: give at least 4 characters" in short.value.message
    with pytest.raises(HunkNotFound):
        s.accept_file("nope.txt")


def test_crlf_bom_final_newline_and_mode_are_preserved(make_repo) -> None:
    crlf_bom = b"\xef\xbb\xbfa = 1\r\nb = 2\r\nc = 3\r\n"
    no_final = b"x = 1\ny = 2"
    root = make_repo({"w.py": crlf_bom, "n.py": no_final, "run.sh": "#!/bin/sh\necho hi\n"})
    os.chmod(root / "run.sh", 0o751)
    s = _session(root)
    s.stage_blocks(
        "w.py\n<<<<<<< SEARCH\nb = 2\n=======\nb = 20\n>>>>>>> REPLACE\n"
        "n.py\n<<<<<<< SEARCH\ny = 2\n=======\ny = 20\n>>>>>>> REPLACE\n"
        "run.sh\n<<<<<<< SEARCH\necho hi\n=======\necho bye\n>>>>>>> REPLACE\n"
    )
    s.commit(all=True)
    assert (root / "w.py").read_bytes() == b"\xef\xbb\xbfa = 1\r\nb = 20\r\nc = 3\r\n"
    assert (root / "n.py").read_bytes() == b"x = 1\ny = 20"
    assert stat.S_IMODE((root / "run.sh").stat().st_mode) == 0o751
    assert (root / "run.sh").read_text() == "#!/bin/sh\necho bye\n"
    # a whole-content stage of a CRLF file written with LF keeps CRLF and no-final-newline
    s.stage_content("n.py", "x = 1\ny = 3\n")
    s.commit(all=True)
    assert (root / "n.py").read_bytes() == b"x = 1\ny = 3"


def test_create_and_delete_files(make_repo) -> None:
    root = make_repo({"old.txt": "bye\n"})
    s = _session(root)
    s.stage_blocks("pkg/sub/new.py\n<<<<<<< SEARCH\n=======\nprint('hi')\n>>>>>>> REPLACE\n")
    s.stage_delete("old.txt")
    kinds = {f.path: f.kind for f in s.files()}
    assert kinds == {"pkg/sub/new.py": "create", "old.txt": "delete"}
    assert "+++ /dev/null" in s.show()
    s.commit(all=True)
    assert (root / "pkg/sub/new.py").read_text() == "print('hi')\n"
    assert not (root / "old.txt").exists()


def test_deleting_a_symlink_is_refused_and_its_target_kept(make_repo) -> None:
    root = make_repo({"real.py": "x = 1\n"})
    (root / "alias.py").symlink_to("real.py")
    s = _session(root)
    with pytest.raises(FileRefused) as info:
        s.stage_delete("alias.py")
    assert info.value.code == "SYMLINK_DELETE_REFUSED"
    assert s.files() == []
    assert (root / "real.py").read_text() == "x = 1\n" and (root / "alias.py").is_symlink()


def test_failed_block_stages_nothing(make_repo) -> None:
    root = make_repo({"a.py": "a = 1\n", "b.py": "b = 1\n"})
    s = _session(root)
    with pytest.raises(EditBlockError):
        s.stage_blocks(
            "a.py\n<<<<<<< SEARCH\na = 1\n=======\na = 2\n>>>>>>> REPLACE\n"
            "b.py\n<<<<<<< SEARCH\nb = 9\n=======\nb = 2\n>>>>>>> REPLACE\n"
        )
    assert s.is_empty and _session(root).is_empty


def test_changed_on_disk_refuses_commit_and_names_files_then_rebase(make_repo) -> None:
    root = make_repo({"f.txt": TEN, "g.txt": "g\n"})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    s.stage_content("g.txt", "G\n")
    s.accept_all()
    (root / "f.txt").write_text("header\n" + TEN.replace("line 25\n", "line 25 edited by user\n"))
    with pytest.raises(EditConflict) as info:
        s.commit()
    assert info.value.paths == ("f.txt",)
    assert (root / "g.txt").read_text() == "g\n"
    assert [f.stale for f in s.files()] == [True, False]
    report = s.rebase()
    assert report.files == ("f.txt",) and len(report.reapplied) == 1 and len(report.conflicts) == 1
    conflict = next(h for h in s.hunks() if h.conflict)
    with pytest.raises(EditConflict):
        s.accept(conflict.id)
    s.commit()
    assert (root / "f.txt").read_text().startswith("header\nline 1\nline two\n")
    assert "line 25 edited by user" in (root / "f.txt").read_text()
    assert (root / "g.txt").read_text() == "G\n"


def _block(path: str, search: str, replace: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{search}=======\n{replace}>>>>>>> REPLACE\n"


def test_a_new_edit_of_a_staged_file_the_user_changed_is_applied_to_the_file_on_disk(make_repo) -> None:
    """The model is shown the file on disk: its blocks must match that, not the stale staged text."""
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    (root / "f.txt").write_text(TEN.replace("line 14\n", "line 14 edited by user\n"))
    s.stage_blocks(_block("f.txt", "line 14 edited by user\n", "line fourteen\n"))
    (staged,) = s.files()
    assert not staged.stale and len(staged.hunks) == 3 and staged.pending == 3
    s.accept_all()
    s.commit()
    assert (root / "f.txt").read_text() == _two_hunk_edit(TEN).replace("line 14\n", "line fourteen\n")


def test_a_new_edit_that_fails_leaves_a_stale_staged_file_as_it_was(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    (root / "f.txt").write_text(TEN.replace("line 14\n", "line 14 edited by user\n"))
    with pytest.raises(EditBlockError):
        s.stage_blocks(_block("f.txt", "no such line\n", "x\n"))
    assert [f.stale for f in s.files()] == [True]
    assert [f.stale for f in _session(root).files()] == [True]  # nor saved rebased


def test_a_follow_up_edit_written_against_the_disk_is_merged_with_the_staged_hunks(make_repo) -> None:
    """The model sees the file on disk, not its staged text: a block whose SEARCH context takes
    in lines a staged hunk changed still applies, and the staged hunk stays with it."""
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_blocks(_block("f.txt", "line 5\n", "line five\n"))
    (first,) = s.hunks()
    s.accept(first.id)
    # The follow-up quotes lines 4-6 as on disk (line 5 unchanged there) and edits line 4.
    s.stage_blocks(_block("f.txt", "line 4\nline 5\nline 6\n", "line four\nline 5\nline 6\n"))
    s.accept_all()
    s.commit()
    assert (root / "f.txt").read_text() == TEN.replace("line 4\n", "line four\n").replace(
        "line 5\n", "line five\n"
    )


def test_a_follow_up_edit_that_rewrites_a_staged_hunk_fails_and_says_which(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_blocks(_block("f.txt", "line 5\n", "line five\n"))
    (staged,) = s.hunks()
    with pytest.raises(EditBlockError) as failed:
        s.stage_blocks(_block("f.txt", "line 5\nline 6\n", "line 5 again\nline 6\n"))
    assert f"staged hunk #{staged.id}" in (failed.value.hint or "")
    assert "staged changes that are not on disk yet" in failed.value.retry_prompt()
    assert [h.id for h in s.hunks()] == [staged.id]  # the session is as it was
    assert (root / "f.txt").read_text() == TEN


def test_file_deleted_behind_our_back(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    s.accept_all()
    (root / "f.txt").unlink()
    with pytest.raises(EditConflict) as info:
        s.commit()
    assert info.value.paths == ("f.txt",)
    assert not (root / "f.txt").exists()
    report = s.rebase()
    assert len(report.conflicts) == 2
    assert all(h.conflict for h in s.hunks())
    assert not s.commit().committed
    assert not (root / "f.txt").exists()


def test_new_syntax_error_is_flagged_in_preview(make_repo) -> None:
    root = make_repo({"m.py": "def f():\n    return 1\n"})
    s = _session(root)
    s.stage_content("m.py", "def f(:\n    return 1\n")
    s.accept_all()
    assert s.files()[0].syntax_error
    assert "syntax error" in s.preview()
    s.rollback()
    s.stage_content("m.py", "def f():\n    return 2\n")
    assert s.files()[0].syntax_error is None


def test_rollback_discards_everything(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    s = _session(root)
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    assert s.rollback() == 2
    assert _session(root).is_empty
    assert (root / "f.txt").read_text() == TEN


def test_git_auto_commit_touches_only_the_change_set(make_repo) -> None:
    root = make_repo({"f.txt": TEN, "mine.txt": "mine\n", "staged.txt": "s\n"})
    (root / "mine.txt").write_text("my unrelated work\n")
    (root / "staged.txt").write_text("staged by me\n")
    git(root, "add", "staged.txt")
    settings = Settings()
    settings.git.auto_commit = True
    settings.edits.lint_cmd = "true"
    settings.edits.test_cmd = "false"
    s = _session(root, settings)
    s.task = "rename line two"
    s.stage_content("f.txt", _two_hunk_edit(TEN))
    s.stage_content("added.py", "x = 1\n")
    result = s.commit(all=True)
    assert result.git is not None and result.git.sha
    assert git(root, "log", "-1", "--format=%s").strip() == "rename line two"
    assert sorted(git(root, "show", "--name-only", "--format=", "HEAD").split()) == ["added.py", "f.txt"]
    status = git(root, "status", "--porcelain")
    assert " M mine.txt" in status and "M  staged.txt" in status
    assert [(c.name, c.ok) for c in result.checks] == [("lint", True), ("test", False)]


def test_two_sessions_staging_at_once_lose_neither_change(make_repo) -> None:
    """Two processes (here two loaded sessions) stage different files from the same start."""
    root = make_repo({"f.txt": TEN, "g.txt": "g\n"})
    first, second = _session(root), _session(root)
    first.stage_content("f.txt", _two_hunk_edit(TEN))
    second.stage_content("g.txt", "g changed\n")
    assert {f.path for f in _session(root).files()} == {"f.txt", "g.txt"}
    # Each session also sees the other's file once it has saved.
    assert {f.path for f in second.files()} == {"f.txt", "g.txt"}
    latest = _session(root)
    latest.accept_file("g.txt")
    latest.commit()
    assert (root / "g.txt").read_text() == "g changed\n"
    assert (root / "f.txt").read_text() == TEN


def test_a_stale_session_does_not_resurrect_what_another_process_committed(make_repo) -> None:
    root = make_repo({"f.txt": TEN, "g.txt": "g\n"})
    stale = _session(root)
    stale.stage_content("f.txt", _two_hunk_edit(TEN))
    other = _session(root)
    other.accept_file("f.txt")
    assert other.commit().committed
    stale.stage_content("g.txt", "g changed\n")  # saves: f.txt was committed meanwhile
    assert [f.path for f in _session(root).files()] == ["g.txt"]


def test_dropping_a_file_keeps_another_sessions_newer_version_of_it(make_repo) -> None:
    root = make_repo({"f.txt": TEN})
    first = _session(root)
    first.stage_content("f.txt", _two_hunk_edit(TEN))
    second = _session(root)
    second.stage_content("f.txt", TEN.replace("line 9\n", "line nine\n"))
    first.rollback()  # drops what *it* staged; the other session's newer edit stays
    [kept] = _session(root).files()
    assert "+line nine" in _session(root).show()
    assert kept.path == "f.txt"


def test_a_file_mixing_crlf_and_lf_keeps_each_lines_own_ending(make_repo) -> None:
    lines = [f"line {i}" for i in range(1, 31)]
    endings = ["\r\n" if i % 3 == 0 else "\n" for i in range(30)]  # LF is the majority
    mixed = "".join(f"{line}{end}" for line, end in zip(lines, endings, strict=True)).encode()
    root = make_repo({"m.txt": mixed})
    s = _session(root)
    text = mixed.decode().replace("\r\n", "\n")
    edited = text.replace("line 4\n", "line four\n").replace("line 25\n", "line 25\ninserted\n")
    first, second = s.stage_content("m.txt", edited).hunks
    s.accept(first.id)
    s.commit()
    # line 4 was a CRLF line: edited in place, it keeps CRLF; nothing else moved.
    assert (root / "m.txt").read_bytes() == mixed.replace(b"line 4\r\n", b"line four\r\n")
    _session(root).accept(second.id)
    _session(root).commit()
    want = mixed.replace(b"line 4\r\n", b"line four\r\n").replace(b"line 25\r\n", b"line 25\r\ninserted\n")
    assert (root / "m.txt").read_bytes() == want  # the new line takes the majority ending (LF)
