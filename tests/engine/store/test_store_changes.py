"""Under git, a re-index asks git what changed instead of looking at every file, and loses nothing."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import load_settings
from engine.index import fts, indexer
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from tests.conftest import git

FILES = {
    "app.py": "from util import helper\n\n\ndef main():\n    return helper(1)\n",
    "util.py": "def helper(x):\n    return x * 2\n",
    "docs/guide.md": "# Guide\n\nHow the helper doubles things.\n",
}


def _index(root: Path, **kw: object) -> indexer.IndexReport:
    layout = RepoLayout.for_path(root)
    return index_repository(layout, load_settings(layout.root).settings, **kw)  # type: ignore[arg-type]


def _bump(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 2_000_000_000))


def _no_full_discovery(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make a whole-tree discovery fail loudly; returns the scoped paths discovery was asked for."""
    asked: list[str] = []
    real = indexer.discover_paths

    def refuse(*_a: object, **_k: object) -> None:
        raise AssertionError("the whole tree was discovered")

    def scoped(root: Path, settings: object, paths: list[str], **kw: object):  # type: ignore[no-untyped-def]
        asked.extend(paths)
        return real(root, settings, paths, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(indexer, "discover", refuse)
    monkeypatch.setattr(indexer, "discover_paths", scoped)
    return asked


def test_a_run_over_an_unchanged_git_tree_looks_at_no_file(make_repo, monkeypatch) -> None:
    root = make_repo(FILES)
    first = _index(root)
    asked = _no_full_discovery(monkeypatch)
    from engine.index import pipeline

    monkeypatch.setattr(pipeline, "_prose_candidates", lambda *a, **k: pytest.fail("prose files were walked"))
    again = _index(root)
    assert asked == [] and again.scope == ()
    assert (again.files, again.symbols, again.edges, again.changed) == (
        first.files,
        first.symbols,
        first.edges,
        0,
    )
    assert again.text_index.files_changed == 0  # type: ignore[union-attr]


def test_edits_new_untracked_files_and_deletions_are_found_through_git(make_repo, monkeypatch) -> None:
    root = make_repo(FILES)
    _index(root)
    asked = _no_full_discovery(monkeypatch)
    _bump(root / "util.py", "def helper(x):\n    return x * 3\n\n\ndef tripled(x):\n    return helper(x)\n")
    (root / "new.py").write_text("def fresh():\n    return 1\n", encoding="utf-8")  # untracked
    (root / "docs/guide.md").unlink()
    report = _index(root)
    assert sorted(asked) == ["docs/guide.md", "new.py", "util.py"]
    assert report.changed_paths == ("new.py", "util.py") and report.added == 1
    layout = RepoLayout.for_path(root)
    conn = fts.connect(layout.index_db)
    try:
        names = {r[0] for r in conn.execute("SELECT qualified_name FROM text_chunks")}
        files = {r[0] for r in conn.execute("SELECT path FROM text_files")}
    finally:
        conn.close()
    assert {"tripled", "fresh"} <= names and "docs/guide.md" not in files


def test_a_commit_and_a_branch_switch_are_followed(make_repo, monkeypatch) -> None:
    root = make_repo(FILES)
    _index(root)
    git(root, "checkout", "-q", "-b", "other")
    _bump(root / "app.py", "def main():\n    return 0\n")
    git(root, "commit", "-qam", "other")
    _index(root)
    git(root, "checkout", "-q", "main")  # app.py is back to its first content, and clean
    asked = _no_full_discovery(monkeypatch)
    report = _index(root)
    assert asked == ["app.py"] and report.changed_paths == ("app.py",)
    with sqlite3.connect(RepoLayout.for_path(root).index_db) as conn:
        callees = {r[0] for r in conn.execute("SELECT callee_name FROM edges WHERE file = 'app.py'")}
    assert callees == {"helper"}


def test_a_gitignore_change_means_a_whole_tree_discovery(make_repo) -> None:
    root = make_repo({**FILES, "gen/gen.py": "def generated():\n    pass\n"})
    first = _index(root)
    assert first.files == 3
    _bump(root / ".gitignore", "gen/\n")
    git(root, "rm", "-q", "--cached", "gen/gen.py")
    report = _index(root)
    assert report.scope is None and report.deleted_paths == ("gen/gen.py",)


def test_outside_git_every_run_discovers_the_tree(make_repo) -> None:
    root = make_repo(FILES, git_init=False)
    _index(root)
    report = _index(root)
    assert report.scope is None and report.changed == 0


PATHS = ["a.py", "pkg/b.py", "pkg/c.py", "notes.md"]
WORDS = ["alpha", "beta", "gamma", "delta"]


@st.composite
def _text(draw: st.DrawFn, path: str) -> str:
    if path.endswith(".md"):
        return "# notes\n\n" + " ".join(draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6))) + "\n"
    names = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True))
    calls = draw(st.lists(st.sampled_from(WORDS), max_size=3))
    body = "\n".join(f"    {c}()" for c in calls) or "    return 0"
    return "\n\n".join(f"def {n}():\n{body}\n" for n in names)


@st.composite
def _operation(draw: st.DrawFn) -> tuple[str, str, str]:
    kind = draw(st.sampled_from(["write", "write", "delete", "commit", "branch"]))
    path = draw(st.sampled_from(PATHS))
    return kind, path, draw(_text(path)) if kind == "write" else ""


def _snapshot(layout: RepoLayout) -> tuple[set[tuple[object, ...]], ...]:
    with sqlite3.connect(layout.index_db) as conn:
        return (
            set(conn.execute("SELECT id, file, qualified_name, start_line, end_line FROM symbols")),
            set(conn.execute("SELECT file, caller_id, callee_id, callee_name, kind, line FROM edges")),
            set(conn.execute("SELECT src, dst FROM file_imports")),
            set(
                conn.execute(
                    "SELECT chunk_id, file, start_line, end_line, content_hash, text_hash FROM text_chunks"
                )
            ),
            set(conn.execute("SELECT path, sha256 FROM text_files")),
        )


def _fts_hits(layout: RepoLayout) -> dict[str, set[str]]:
    conn = fts.connect(layout.index_db)
    try:
        return {w: {f"{r.file}:{r.qualified_name}" for r, _ in fts.search(conn, w, limit=100)} for w in WORDS}
    finally:
        conn.close()


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_operation(), min_size=1, max_size=5))
def test_git_scoped_runs_equal_a_fresh_build(ops: list[tuple[str, str, str]]) -> None:
    work = Path(tempfile.mkdtemp(prefix="semfora-git-prop-"))
    try:
        root = work / "repo"
        for rel in PATHS:
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(f"def {rel.replace('/', '_')[:-3]}():\n    alpha()\n", encoding="utf-8")
        git(root, "init", "-q", "-b", "main")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "start")
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-incremental")
        _index(root)
        for n, (kind, path, text) in enumerate(ops):
            target = root / path
            if kind == "write":
                target.parent.mkdir(parents=True, exist_ok=True)
                _bump(target, text)
            elif kind == "delete" and target.exists():
                target.unlink()
            elif kind == "commit":
                git(root, "add", "-A")
                git(root, "commit", "-qm", f"c{n}", "--allow-empty")
            elif kind == "branch":
                git(root, "add", "-A")
                git(root, "commit", "-qm", f"b{n}", "--allow-empty")
                git(root, "checkout", "-q", "HEAD~1")  # detached: the tree moves back one commit
            _index(root)
        incremental = RepoLayout.for_path(root)
        inc = _snapshot(incremental), _fts_hits(incremental)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-fresh")
        _index(root)
        fresh_layout = RepoLayout.for_path(root)
        fresh = _snapshot(fresh_layout), _fts_hits(fresh_layout)
        for i, what in enumerate(["symbols", "edges", "imports", "chunks", "text files"]):
            assert inc[0][i] == fresh[0][i], f"{what} differ"
        assert inc[1] == fresh[1], "full-text results differ"
    finally:
        shutil.rmtree(work, ignore_errors=True)
