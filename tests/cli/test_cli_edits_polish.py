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


def _staged(root: Path, tmp_path: Path, reply: str) -> list[str]:
    code, payload, err = _stage(root, tmp_path, reply)
    assert code == 0, err
    return payload["staged_files"]


def test_a_new_file_whose_path_has_spaces_is_created(make_repo, tmp_path: Path) -> None:
    """A reply creating `docs/release notes.md` failed with 'no file path before the block'."""
    root = make_repo(REPO)
    reply = (
        "I'll add release notes.\n\ndocs/release notes.md\n```\n<<<<<<< SEARCH\n=======\n# Release notes\n"
        ">>>>>>> REPLACE\n```\n\n`notes/the plan.md`\n<<<<<<< SEARCH\n=======\nplan\n>>>>>>> REPLACE\n"
    )
    assert _staged(root, tmp_path, reply) == ["docs/release notes.md", "notes/the plan.md"]
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


LINES = "".join(f"line{i} = {i}\n" for i in range(1, 21))
THREE_EDITS = "".join(
    f"m.py\n<<<<<<< SEARCH\nline{n} = {n}\n=======\nline{n} = {n}{n}\n>>>>>>> REPLACE\n\n" for n in (3, 15)
)


def _commit_first_then_stage_a_follow_up(root: Path, tmp_path: Path) -> str:
    """Commit the first of two hunks, then stage an edit of the committed line: after an undo
    that edit no longer fits. Returns the follow-up hunk's id."""
    code, payload, err = _stage(root, tmp_path, THREE_EDITS)
    assert code == 0, err
    first = payload["files"][0]["hunks"][0]["id"]
    assert run_semfora("edits", "accept", first, "--path", str(root)).returncode == 0
    assert run_semfora("edits", "commit", "--path", str(root)).returncode == 0
    code, payload, err = _stage(
        root, tmp_path, "m.py\n<<<<<<< SEARCH\nline3 = 33\n=======\nline3 = 333\n>>>>>>> REPLACE\n"
    )
    assert code == 0, err
    return next(h["id"] for h in payload["files"][0]["hunks"] if "+line3 = 333" in h["lines"])


def test_undo_says_which_staged_hunks_no_longer_fit(make_repo, tmp_path: Path) -> None:
    """The undo put m.py back and turned a staged hunk into a conflict without a word."""
    root = make_repo({"m.py": LINES})
    follow_up = _commit_first_then_stage_a_follow_up(root, tmp_path)
    proc = run_semfora("edits", "undo", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("undid change set")
    assert (
        f"1 staged hunk in m.py no longer fits the restored file and is kept as a conflict: {follow_up}"
        in (proc.stderr)
    )
    assert (root / "m.py").read_text() == LINES
    listed = json.loads(run_semfora("edits", "list", "--json", "--path", str(root)).stdout)
    assert listed["counts"]["conflicts"] == 1 and listed["counts"]["pending"] == 1


def test_undo_that_succeeds_is_not_reported_as_failed_when_the_session_cannot_follow(
    make_repo, tmp_path: Path
) -> None:
    """A staged session that could not be rebased made `edits undo` print an error and exit 1,
    although the files were already put back."""
    from engine.repo.layout import RepoLayout

    root = make_repo({"m.py": LINES})
    _commit_first_then_stage_a_follow_up(root, tmp_path)
    (RepoLayout.for_path(root).edits_dir / "session.json").write_text("{not json", encoding="utf-8")
    proc = run_semfora("edits", "undo", "--json", "--path", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ok"] is True and payload["files"] == ["m.py"]
    assert payload["staged"]["error_code"] == "EDIT_SESSION_CORRUPT"
    assert (root / "m.py").read_text() == LINES


def test_an_empty_new_file_is_staged_shown_and_created(make_repo, tmp_path: Path) -> None:
    """A block creating an empty `pkg/__init__.py` was dropped without a word: 'staged 1 hunk in
    1 file' for a reply of two files, and the package had no marker after the commit."""
    import subprocess

    root = make_repo(REPO)
    reply = (
        "pkg/__init__.py\n<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE\n\n"
        "pkg/core.py\n<<<<<<< SEARCH\n=======\nX = 1\n>>>>>>> REPLACE\n"
    )
    assert _staged(root, tmp_path, reply) == ["pkg/__init__.py", "pkg/core.py"]
    shown = run_semfora("edits", "show", "--path", str(root)).stdout
    check = subprocess.run(
        ["git", "apply", "--check", "-"], input=shown, cwd=root, capture_output=True, text=True
    )
    assert check.returncode == 0, shown + check.stderr
    assert run_semfora("edits", "commit", "--all", "--path", str(root)).returncode == 0
    assert (root / "pkg/__init__.py").read_bytes() == b""
    assert (root / "pkg/core.py").read_text() == "X = 1\n"
    assert json.loads(run_semfora("edits", "list", "--json", "--path", str(root)).stdout)["files"] == []


def test_accepting_a_file_that_has_no_staged_change_says_so(make_repo, tmp_path: Path) -> None:
    """`semfora edits accept docs/index.md` said "no staged hunk with id 'docs/index.md'", and
    `accept a.c` that the hunk id was too short: both are files, not ids."""
    root = make_repo(REPO)
    code, _payload, err = _stage(
        root, tmp_path, "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    )
    assert code == 0, err
    for target in ("docs/index.md", "a.c"):
        proc = run_semfora("edits", "accept", target, "--path", str(root))
        assert proc.returncode == 1
        assert proc.stderr.startswith(
            f"error[HUNK_NOT_FOUND]: {target!r} is not a staged file (nor a hunk id)"
        )


def test_a_failed_commit_all_leaves_the_hunks_pending(make_repo, tmp_path: Path) -> None:
    """`edits commit --all` that failed on a conflict left the hunks marked accepted: nothing was
    committed, yet the user's review state had changed (a later plain `commit` would write them)."""
    root = make_repo(REPO)
    code, payload, err = _stage(
        root, tmp_path, "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    )
    assert code == 0, err
    (root / "app.py").write_text("def f():\n    return 1\n# changed meanwhile\n", encoding="utf-8")
    proc = run_semfora("edits", "commit", "--all", "--json", "--path", str(root))
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["error_code"] == "EDIT_CONFLICT"
    listed = json.loads(run_semfora("edits", "list", "--json", "--path", str(root)).stdout)
    assert [h["state"] for f in listed["files"] for h in f["hunks"]] == ["pending"]
    # Once the file is back as staged against, the commit goes through and writes the hunk.
    (root / "app.py").write_text(REPO["app.py"], encoding="utf-8")
    assert run_semfora("edits", "commit", "--all", "--path", str(root)).returncode == 0
    assert (root / "app.py").read_text() == "def f():\n    return 2\n"


ONE_EDIT = "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"


def test_a_flag_given_to_the_wrong_edits_action_is_a_usage_error(make_repo, tmp_path: Path) -> None:
    """`edits undo --all` undid one change set and `edits list --message m` did nothing, silently."""
    root = make_repo(REPO)
    assert _staged(root, tmp_path, ONE_EDIT) == ["app.py"]
    for argv in (
        ("undo", "--all"),
        ("list", "--message", "m"),
        ("commit", "--force"),
        ("accept", "all", "--all"),
    ):
        proc = run_semfora("edits", *argv, "--path", str(root))
        assert proc.returncode == 2, (argv, proc.stderr)
        assert proc.stderr.startswith("error[USAGE]: --"), proc.stderr
    # Nothing was done: the hunk is still pending and the file as it was.
    listed = json.loads(run_semfora("edits", "list", "--json", "--path", str(root)).stdout)
    assert [h["state"] for f in listed["files"] for h in f["hunks"]] == ["pending"]
    assert (root / "app.py").read_text() == REPO["app.py"]


def test_commit_message_without_auto_commit_says_no_git_commit_was_made(make_repo, tmp_path: Path) -> None:
    """`edits commit --all --message "fix f"` wrote the file and made no git commit, without a word."""
    root = make_repo(REPO)
    _staged(root, tmp_path, ONE_EDIT)
    proc = run_semfora("edits", "commit", "--all", "--message", "fix f", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "--message was not used: git.auto_commit is off" in proc.stderr
    assert (root / "app.py").read_text() == "def f():\n    return 2\n"


def test_commit_with_nothing_staged_says_there_is_nothing_staged(make_repo) -> None:
    """It said "nothing accepted: no file was changed (0 hunks staged)", as if hunks awaited review."""
    root = make_repo(REPO)
    for argv in (("commit",), ("commit", "--all")):
        proc = run_semfora("edits", *argv, "--path", str(root))
        assert proc.returncode == 0 and proc.stdout == "nothing to commit: no staged edits\n", proc.stdout


def test_staging_a_directory_says_it_is_a_directory(make_repo, tmp_path: Path) -> None:
    """`edits stage DIR` was PATH_NOT_FOUND ("cannot read DIR: Is a directory") for a path that exists."""
    root = make_repo(REPO)
    proc = run_semfora("edits", "stage", str(tmp_path), "--json", "--path", str(root))
    assert proc.returncode == 2
    error = json.loads(proc.stdout)
    assert error["error_code"] == "PATH_INVALID" and "is a directory" in error["error_message"]


def test_edits_list_json_names_no_session_when_nothing_is_staged(make_repo, tmp_path: Path) -> None:
    """`semfora edits list --json` with nothing staged printed a session id, a new one on every
    call, of a session that was never saved: a script that kept it found nothing under it."""
    root = make_repo(REPO)
    for action in ("list", "show"):
        payload = json.loads(run_semfora("edits", action, "--json", "--path", str(root)).stdout)
        assert payload["session"] is None and payload["files"] == [], payload
    _staged(root, tmp_path, "app.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n")
    first, again = (
        json.loads(run_semfora("edits", "list", "--json", "--path", str(root)).stdout)["session"]
        for _ in "ab"
    )
    assert first and first == again
