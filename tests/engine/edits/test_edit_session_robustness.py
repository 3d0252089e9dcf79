"""Staging loses nothing and shows a diff other tools accept (issue 13, items 7, 9, 11, 13).

Two processes staging the same file keep both hunks, one file staged under two names is one
record, `edits show` is a patch `git apply` takes, and staging n files does O(n) diff work.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.edits import EditSession
from engine.repo.layout import RepoLayout
from tests.conftest import ROOT, git

TWO_REGIONS = "".join(f"line {i}\n" for i in range(1, 31))


def _session(root: Path) -> EditSession:
    return EditSession.load_or_create(RepoLayout.for_path(root))


def _block(path: str, old: str, new: str) -> str:
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


def test_two_sessions_staging_one_file_keep_both_hunks(make_repo) -> None:
    """Both loaded before either staged: the second save used to drop the first one's hunk."""
    root = make_repo({"m.py": TWO_REGIONS})
    first, second = _session(root), _session(root)
    first.stage_blocks(_block("m.py", "line 3", "line three"))
    second.stage_blocks(_block("m.py", "line 27", "line twenty-seven"))
    (change,) = _session(root).files()
    assert sorted(h.new_lines for h in change.hunks) == [("line three",), ("line twenty-seven",)]
    assert _session(root).commit(all=True).committed
    text = (root / "m.py").read_text()
    assert "line three\n" in text and "line twenty-seven\n" in text


STAGER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engine.edits import EditSession
    from engine.repo.layout import RepoLayout

    root, line, rounds = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    layout = RepoLayout.for_path(root)
    for r in range(rounds):
        block = f"f{r}.py\\n<<<<<<< SEARCH\\nline {line}\\n=======\\nline {line} changed\\n>>>>>>> REPLACE\\n"
        EditSession.load_or_create(layout).stage_blocks(block)
    """
)


def test_two_processes_staging_the_same_files_lose_no_hunk(make_repo) -> None:
    rounds = 25
    root = make_repo({f"f{r}.py": TWO_REGIONS for r in range(rounds)})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    procs = [
        subprocess.Popen([sys.executable, "-c", STAGER, str(root), str(line), str(rounds)], env=env)
        for line in (2, 28)
    ]
    assert [p.wait(timeout=300) for p in procs] == [0, 0]
    files = {f.path: f for f in _session(root).files()}
    lost = [p for p in (f"f{r}.py" for r in range(rounds)) if p not in files or len(files[p].hunks) != 2]
    assert not lost, f"hunks lost in {len(lost)} of {rounds} files: {lost}"


def test_one_file_staged_under_two_names_is_one_record(make_repo) -> None:
    """`sub/m.py` and `lnk/m.py` (lnk -> sub) used to make every commit fail with EDIT_WRITE_FAILED."""
    root = make_repo({"sub/m.py": TWO_REGIONS})
    os.symlink("sub", root / "lnk")
    session = _session(root)
    session.stage_blocks(_block("sub/m.py", "line 3", "line three"))
    session.stage_blocks(_block("lnk/m.py", "line 27", "line twenty-seven"))
    assert [f.path for f in session.files()] == ["sub/m.py"]
    assert session.has_file("lnk/m.py")
    result = session.commit(all=True)
    assert result.committed and result.files == ("sub/m.py",)
    text = (root / "sub" / "m.py").read_text()
    assert "line three\n" in text and "line twenty-seven\n" in text


def test_one_reply_naming_a_file_twice_through_a_link_applies_both_blocks(make_repo) -> None:
    root = make_repo({"sub/m.py": TWO_REGIONS})
    os.symlink("sub", root / "lnk")
    session = _session(root)
    session.stage_blocks(
        _block("sub/m.py", "line 3", "line three") + _block("lnk/m.py", "line 4", "line four")
    )
    (change,) = session.files()
    assert change.path == "sub/m.py" and change.added == 2


def _git_apply(root: Path, patch: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "-C", str(root), "apply", *args, "-"],
        input=patch,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            TWO_REGIONS,
            TWO_REGIONS.replace("line 3\n", "line three\n").replace("line 8\n", "line 8a\nline 8b\n"),
        ),
        (TWO_REGIONS, TWO_REGIONS.replace("line 5\n", "").replace("line 7\n", "seven\n")),
        ("a\nb\nc", "a\nB\nc"),  # no final newline on either side
        ("a\nb\nc\n", "a\nb\nC"),  # the new side loses the final newline
        ("a\nb\nc", "a\nb\nc\nd\n"),
    ],
    ids=["two-hunks", "delete-and-replace", "no-final-newline", "loses-final-newline", "appends"],
)
def test_edits_show_is_a_patch_git_apply_accepts(make_repo, before: str, after: str) -> None:
    root = make_repo({"f.txt": before, "gone.txt": "bye\n"})
    session = _session(root)
    session.stage_content("f.txt", after)
    session.stage_content("new/added.txt", "hello\nworld\n")
    session.stage_delete("gone.txt")
    patch = session.show()
    check = _git_apply(root, patch, "--check")
    assert check.returncode == 0, check.stderr + "\n" + patch
    assert _git_apply(root, patch).returncode == 0
    patched = (root / "f.txt").read_bytes()
    assert (root / "new" / "added.txt").read_text() == "hello\nworld\n" and not (root / "gone.txt").exists()
    # The patch does exactly what committing the staged hunks does.
    git(root, "checkout", "--", ".")
    git(root, "clean", "-fdq")
    assert session.commit(all=True).committed
    assert (root / "f.txt").read_bytes() == patched


def test_semfora_edits_show_passes_git_apply_check(make_repo, tmp_path: Path) -> None:
    from tests.conftest import run_semfora

    root = make_repo({"m.py": TWO_REGIONS})
    reply = tmp_path / "reply.txt"
    reply.write_text(_block("m.py", "line 3", "line three") + _block("m.py", "line 5", "line five"))
    assert run_semfora("edits", "stage", str(reply), "--path", str(root)).returncode == 0
    shown = run_semfora("edits", "show", "--path", str(root))
    assert shown.returncode == 0
    check = _git_apply(root, shown.stdout, "--check")
    assert check.returncode == 0, check.stderr + shown.stdout


lines = st.lists(st.sampled_from(["a", "b", "c", "d", "", "x = 1", "def f():"]), max_size=25)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=lines, new=lines, old_final=st.booleans(), new_final=st.booleans())
def test_any_staged_change_shows_as_a_patch_that_reproduces_it(
    tmp_path_factory, old, new, old_final, new_final
):
    root = tmp_path_factory.mktemp("showrepo")
    git(root, "init", "-q")
    before = "\n".join(old) + ("\n" if old_final and old else "")
    after = "\n".join(new) + ("\n" if new_final and new else "")
    (root / "f.txt").write_text(before)
    git(root, "add", "-A")
    session = _session(root)
    session.stage_content("f.txt", after)
    patch = session.show()
    if not patch:
        return
    applied = _git_apply(root, patch)
    assert applied.returncode == 0, applied.stderr + "\n" + patch
    patched = (root / "f.txt").read_bytes()
    git(root, "checkout", "--", "f.txt")
    assert session.commit(all=True).committed
    assert (root / "f.txt").read_bytes() == patched, patch


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(old=lines, new=lines)
def test_each_listed_hunk_is_a_patch_on_its_own(tmp_path_factory, old, new):
    """`edits list --json` gives each hunk a header and lines: together, a hunk `git apply` takes
    on the original file. (Files that end in a newline: a hunk beside another one that changes
    the missing final newline is only a patch together with it, as `edits show` prints them.)"""
    root = tmp_path_factory.mktemp("hunkrepo")
    git(root, "init", "-q")
    before = "".join(f"{line}\n" for line in old)
    after = "".join(f"{line}\n" for line in new)
    (root / "f.txt").write_text(before)
    git(root, "add", "-A")
    session = _session(root)
    session.stage_content("f.txt", after)
    for hunk in session.hunks():
        shown = hunk.to_json()
        patch = "--- a/f.txt\n+++ b/f.txt\n" + "\n".join([shown["header"], *shown["lines"]]) + "\n"
        check = _git_apply(root, patch, "--check")
        assert check.returncode == 0, check.stderr + "\n" + patch


def test_staging_n_files_diffs_each_file_a_constant_number_of_times(make_repo) -> None:
    """Staging used to rebuild every staged file's diff for each file (quadratic). Counted, not timed."""
    import engine.edits.session as session_module

    root = make_repo({"keep.txt": "k\n"})
    calls = {"n": 0}
    real = session_module.diff_hunks

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    session_module.diff_hunks = counting
    try:
        per_size = {}
        for n in (20, 80):
            calls["n"] = 0
            reply = "".join(_block(f"d{n}/f{i}.py", "", f"x = {i}").replace("\n\n=", "\n=") for i in range(n))
            _session(root).stage_blocks(reply)
            per_size[n] = calls["n"] / n
    finally:
        session_module.diff_hunks = real
    assert per_size[80] <= per_size[20] * 1.5, per_size
