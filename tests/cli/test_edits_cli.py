"""`semfora edits ...` round trips through the real console script."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_semfora

PATCH = """Here is the change:

```
app.py
<<<<<<< SEARCH
def greet():
    return "hi"
=======
def greet():
    return "hello"
>>>>>>> REPLACE
```

```
app.py
<<<<<<< SEARCH
LIMIT = 10
=======
LIMIT = 20
>>>>>>> REPLACE
```
"""
APP = 'import os\n\nLIMIT = 10\n\n\n\n\n\ndef greet():\n    return "hi"\n'


def _json(proc) -> dict:
    assert proc.stdout, proc.stderr
    return json.loads(proc.stdout)


def test_stage_review_commit_undo_round_trip(make_repo, tmp_path: Path) -> None:
    root = make_repo({"app.py": APP})
    patch = tmp_path / "reply.md"
    patch.write_text(PATCH)
    staged = run_semfora("edits", "stage", str(patch), cwd=root)
    assert staged.returncode == 0, staged.stderr
    assert "staged 2 hunks in 1 file\n" in staged.stdout

    listing = _json(run_semfora("edits", "list", "--json", cwd=root))
    hunks = listing["files"][0]["hunks"]
    assert [h["state"] for h in hunks] == ["pending", "pending"]
    first, second = hunks[0]["id"], hunks[1]["id"]
    shown = run_semfora("edits", "show", cwd=root).stdout
    assert f"[{first}] pending" in shown and '+    return "hello"' in shown

    nothing = run_semfora("edits", "commit", cwd=root)
    assert nothing.returncode == 0 and "nothing accepted" in nothing.stdout
    assert (root / "app.py").read_text() == APP

    assert run_semfora("edits", "accept", first, cwd=root).returncode == 0
    assert "rejected" in run_semfora("edits", "toggle", first, cwd=root).stdout
    assert "accepted" in run_semfora("edits", "toggle", first, cwd=root).stdout
    done = _json(run_semfora("edits", "commit", "--json", cwd=root))
    assert done["committed"] is True and done["files"] == ["app.py"] and done["remaining"] == 1
    assert "LIMIT = 20" in (root / "app.py").read_text() and '"hi"' in (root / "app.py").read_text()

    assert run_semfora("edits", "reject", "all", cwd=root).stdout.startswith("rejected 1")
    assert _json(run_semfora("edits", "list", "--json", cwd=root))["files"][0]["hunks"][0]["id"] == second
    rollback = run_semfora("edits", "rollback", cwd=root)
    assert "discarded 1" in rollback.stdout
    assert _json(run_semfora("edits", "list", "--json", cwd=root))["files"] == []

    undone = run_semfora("edits", "undo", cwd=root)
    assert undone.returncode == 0 and "restored 1 file;" in undone.stdout
    assert (root / "app.py").read_text() == APP
    empty = run_semfora("edits", "undo", "--json", cwd=root)
    assert empty.returncode == 1
    assert _json(empty) == {
        "ok": False,
        "error_code": "NOTHING_TO_UNDO",
        "error_message": "nothing to undo: no committed change set in the history",
    }


def test_stage_from_stdin_and_commit_all(make_repo) -> None:
    root = make_repo({"app.py": APP})
    proc = run_semfora("edits", "stage", "-", cwd=root, input=PATCH.replace("\n", "\r\n"))
    assert proc.returncode == 0, proc.stderr
    assert run_semfora("edits", "commit", "--all", cwd=root).returncode == 0
    assert (root / "app.py").read_text() == APP.replace("10", "20").replace('"hi"', '"hello"')


def test_bad_block_stages_nothing_and_shows_nearest_lines(make_repo) -> None:
    root = make_repo({"app.py": APP})
    bad = PATCH.replace("LIMIT = 10\n=", "LIMIT = 11\n=")
    proc = run_semfora("edits", "stage", "-", cwd=root, input=bad)
    assert proc.returncode == 1
    assert "error[EDIT_BLOCK_FAILED]" in proc.stderr and "3| LIMIT = 10" in proc.stderr
    as_json = run_semfora("edits", "stage", "-", "--json", cwd=root, input=bad)
    payload = _json(as_json)
    assert payload["error_code"] == "EDIT_BLOCK_FAILED" and payload["failures"][0]["reason"] == "no_match"
    assert _json(run_semfora("edits", "list", "--json", cwd=root))["files"] == []


def test_secret_and_outside_targets_are_refused(make_repo) -> None:
    root = make_repo({"app.py": APP})
    for target in (".env", "../escape.py", ".git/hooks/pre-commit"):
        reply = f"{target}\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n"
        proc = run_semfora("edits", "stage", "-", cwd=root, input=reply)
        assert proc.returncode == 1 and "EDIT_BLOCK_FAILED" in proc.stderr, target
        # The refusal is said once, on the error line (it was printed twice).
        assert proc.stderr.count(target.split("/")[-1] + ")") == 1, proc.stderr
    assert not (root / ".env").exists() and not (root.parent / "escape.py").exists()
    # --json names the path sandbox's own code for each refused block.
    proc = run_semfora(
        "edits", "stage", "-", "--json", cwd=root, input=".env\n<<<<<<< SEARCH\n=======\nx\n>>>>>>> REPLACE\n"
    )
    assert json.loads(proc.stdout)["failures"][0]["code"] == "SECRET_PATH_DENIED"


def test_conflict_then_rebase_through_cli(make_repo) -> None:
    root = make_repo({"app.py": APP})
    run_semfora("edits", "stage", "-", cwd=root, input=PATCH)
    (root / "app.py").write_text("# edited\n" + APP)
    proc = run_semfora("edits", "commit", "--all", cwd=root)
    assert proc.returncode == 1 and "error[EDIT_CONFLICT]" in proc.stderr and "app.py" in proc.stderr
    rebased = run_semfora("edits", "rebase", cwd=root)
    assert "rebased 1 file: 2 hunks re-applied, 0 in conflict" in rebased.stdout
    assert run_semfora("edits", "commit", "--all", cwd=root).returncode == 0
    assert (root / "app.py").read_text().startswith("# edited\nimport os\n\nLIMIT = 20\n")


def test_list_keeps_the_header_column_in_line_when_a_hunk_has_a_conflict(make_repo) -> None:
    root = make_repo({"app.py": APP})
    run_semfora("edits", "stage", "-", cwd=root, input=PATCH)
    (root / "app.py").write_text(APP.replace("LIMIT = 10", "LIMIT = 11"))
    assert "1 in conflict" in run_semfora("edits", "rebase", cwd=root).stdout
    listing = run_semfora("edits", "list", cwd=root).stdout
    rows = [line for line in listing.splitlines() if line.startswith("    ")]
    assert len(rows) == 2 and any("conflict/pending" in row for row in rows), listing
    # Every hunk's header starts in the same column ("conflict/pending" pushed it out of line).
    assert len({row.index("@@") for row in rows}) == 1, listing


def test_accept_or_reject_all_with_nothing_staged_says_so(make_repo) -> None:
    root = make_repo({"app.py": APP})
    for action in ("accept", "reject"):
        proc = run_semfora("edits", action, "all", cwd=root)
        assert proc.returncode == 0 and proc.stdout == f"nothing to {action}: no staged edits\n", proc.stdout
    toggled = run_semfora("edits", "toggle", "all", cwd=root)
    assert toggled.returncode == 2 and "edits toggle takes one hunk id" in toggled.stderr
    run_semfora("edits", "stage", "-", cwd=root, input=PATCH)
    assert run_semfora("edits", "reject", "all", cwd=root).stdout == "rejected 2 hunks\n"


def test_usage_errors_exit_2(make_repo, tmp_path: Path) -> None:
    root = make_repo({"app.py": APP})
    assert run_semfora("edits", "list", "--path", str(tmp_path / "missing")).returncode == 2
    assert run_semfora("edits", "stage", cwd=root).returncode == 2
    missing = run_semfora("edits", "accept", "deadbeef", cwd=root)
    assert missing.returncode == 1 and "HUNK_NOT_FOUND" in missing.stderr


def test_stage_input_through_a_link_loop_or_an_overlong_name_is_a_typed_usage_error(make_repo) -> None:
    root = make_repo({"app.py": APP})
    (root / "loop").symlink_to("loop")
    looped = run_semfora("edits", "stage", "loop/reply.txt", cwd=root)
    assert looped.returncode == 2 and "error[SYMLINK_LOOP]" in looped.stderr
    overlong = run_semfora("edits", "stage", "r" * 300 + ".txt", cwd=root)
    assert overlong.returncode == 2 and "error[PATH_TOO_LONG]" in overlong.stderr
    assert "Traceback" not in looped.stderr + overlong.stderr


def test_hunks_still_staged_in_a_file_follow_its_undo(make_repo, tmp_path: Path) -> None:
    """Commit one of a file's two hunks, undo it: the other hunk is still staged, not a conflict."""
    root = make_repo({"app.py": APP})
    patch = tmp_path / "reply.md"
    patch.write_text(PATCH)
    assert run_semfora("edits", "stage", str(patch), cwd=root).returncode == 0
    first, second = (
        h["id"] for h in _json(run_semfora("edits", "list", "--json", cwd=root))["files"][0]["hunks"]
    )
    assert run_semfora("edits", "accept", first, cwd=root).returncode == 0
    assert _json(run_semfora("edits", "commit", "--json", cwd=root))["committed"] is True
    assert run_semfora("edits", "undo", cwd=root).returncode == 0
    assert (root / "app.py").read_text() == APP

    listing = _json(run_semfora("edits", "list", "--json", cwd=root))
    (entry,) = listing["files"]
    assert entry["stale"] is False
    assert [(h["id"], h["state"]) for h in entry["hunks"]] == [(second, "pending")]
    assert "changed on disk" not in run_semfora("edits", "show", cwd=root).stdout
    # The hunk still applies: committing it now writes only its own change.
    assert run_semfora("edits", "accept", second, cwd=root).returncode == 0
    assert run_semfora("edits", "commit", cwd=root).returncode == 0
    assert (root / "app.py").read_text() == APP.replace('"hi"', '"hello"')


def test_stage_finds_a_blocks_file_named_from_the_repository(make_repo, tmp_path: Path) -> None:
    """`semfora edits stage blocks.txt --path REPO` from another directory said 'cannot read
    blocks.txt: No such file or directory' of a file the repository holds (the app's
    `/edit --from blocks.txt` reads it from the repository); one in neither is the same clear error."""
    root = make_repo({"pay.py": "def charge(amount):\n    return amount\n"})
    blocks = (
        "pay.py\n<<<<<<< SEARCH\n    return amount\n=======\n    return round(amount, 2)\n>>>>>>> REPLACE\n"
    )
    (root / "blocks.txt").write_text(blocks)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    staged = run_semfora("edits", "stage", "blocks.txt", "--path", str(root), cwd=elsewhere)
    assert staged.returncode == 0, staged.stderr
    assert "staged 1 hunk in 1 file" in staged.stdout
    missing = run_semfora("edits", "stage", "nope.txt", "--path", str(root), cwd=elsewhere)
    assert missing.returncode == 2 and "error[PATH_NOT_FOUND]: cannot read nope.txt" in missing.stderr
