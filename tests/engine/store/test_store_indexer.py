"""The incremental indexer on small real repositories: what changed is reported, nothing is lost."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from engine.config import load_settings
from engine.errors import EngineWarning, LockBusy
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from engine.store.db import SymbolStore
from engine.store.lock import writer_lock
from tests.conftest import SEMFORA, git

APP = '''"""The app module."""
from util import helper


def main():
    return helper(1) + local()


def local():
    return 2
'''
UTIL = """def helper(x):
    return x * 2


class Greeter:
    def greet(self, name):
        return self.format(name)

    def format(self, name):
        return "hi " + name
"""


def _index(root: Path, **kw: object):
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    return layout, index_repository(layout, settings, text_index=False, **kw)  # type: ignore[arg-type]


def _bump(path: Path, text: str) -> None:
    """Rewrite a file and make sure its mtime moves even on coarse clocks."""
    path.write_text(text, encoding="utf-8")
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


def test_cold_index_then_warm_reports_nothing_changed(make_repo) -> None:
    root = make_repo({"app.py": APP, "util.py": UTIL, "README.md": "# hi\n"})
    layout, first = _index(root)
    assert first.files == 2 and first.added == 2 and first.changed == 0
    assert first.symbols >= 5 and first.edges >= 3
    _, warm = _index(root)
    assert (warm.changed, warm.added, warm.deleted, warm.renamed) == (0, 0, 0, 0)
    assert warm.changed_paths == () and warm.files == 2


def test_edit_add_delete_and_rename_are_reported(make_repo) -> None:
    root = make_repo({"app.py": APP, "util.py": UTIL, "old.py": "def moved():\n    return 1\n"})
    layout, _ = _index(root)
    _bump(root / "app.py", APP + "\n\ndef extra():\n    return local()\n")
    (root / "new.py").write_text("def fresh():\n    return 3\n", encoding="utf-8")
    (root / "util.py").unlink()
    (root / "old.py").rename(root / "renamed.py")
    _, rep = _index(root)
    assert rep.changed == 1 and "app.py" in rep.changed_paths
    assert rep.added == 1 and "new.py" in rep.changed_paths
    assert rep.deleted == 1 and "util.py" in rep.deleted_paths
    assert rep.renamed == 1 and "renamed.py" in rep.changed_paths and "old.py" in rep.deleted_paths
    with SymbolStore(layout) as store:
        assert [s.name for s in store.symbols_by_name("extra")] == ["extra"]
        assert store.symbols_by_name("helper") == []
        assert store.symbols_by_name("moved")[0].file == "renamed.py"
        assert store.file("util.py") is None


def test_touch_without_content_change_is_not_a_change(make_repo) -> None:
    root = make_repo({"app.py": APP, "util.py": UTIL})
    _index(root)
    st = (root / "app.py").stat()
    os.utime(root / "app.py", ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    _, rep = _index(root)
    assert rep.changed == 0 and rep.changed_paths == ()


def test_edges_follow_a_changed_definition_in_another_file(make_repo) -> None:
    root = make_repo({"app.py": APP, "util.py": UTIL})
    layout, _ = _index(root)
    with SymbolStore(layout) as store:
        helper = store.symbols_by_name("helper")[0]
        assert [n.name for n in store.callers(helper.id)] == ["main"]
    # helper gains a parameter: its id changes, and app.py's edge must follow without app.py changing.
    _bump(root / "util.py", UTIL.replace("def helper(x):", "def helper(x, y=1):"))
    _, rep = _index(root)
    assert rep.changed_paths == ("util.py",)
    with SymbolStore(layout) as store:
        new_helper = store.symbols_by_name("helper")[0]
        assert new_helper.id != helper.id
        callers = store.callers(new_helper.id)
        assert [(n.name, n.via) for n in callers] == [("main", "import")]


def test_syntax_errors_and_invalid_utf8_are_still_indexed(make_repo) -> None:
    broken = "def good():\n    return 1\n\ndef bad(:\n    pass\n\nclass Later:\n    def ok(self):\n        return 2\n"
    root = make_repo(
        {"broken.py": broken, "latin.py": b"def caf\xe9():\n    return '\xff'\n\ndef fine():\n    pass\n"}
    )
    layout, rep = _index(root)
    assert rep.files == 2
    with SymbolStore(layout) as store:
        rec = store.file("broken.py")
        assert rec is not None and rec.syntax_errors > 0
        names = {s.name for s in store.symbols_in_file("broken.py")}
        assert {"good", "Later"} <= names
        assert "fine" in {s.name for s in store.symbols_in_file("latin.py")}


@pytest.mark.parametrize("git_init", [True, False], ids=["git", "plain"])
def test_binary_huge_minified_and_unreadable_files_are_skipped_with_reasons(
    make_repo, git_init: bool
) -> None:
    root = make_repo(
        {
            "ok.py": "def ok():\n    pass\n",
            "blob.py": b"\x00\x01binary" * 10,
            "bundle.min.js": "var a=1;",
            "dense.js": "var x = 1;" * 400,  # one 4 KB line: minified
        },
        git_init=git_init,
    )
    huge = root / "huge.py"
    with huge.open("wb") as fh:
        fh.truncate(100 * 1024 * 1024)  # sparse: 100 MB without writing them
    os.mkfifo(root / "pipe.py")  # a read would block forever: must be skipped, not opened
    (root / "dangling.py").symlink_to(root / "missing.py")
    started = time.monotonic()
    _, rep = _index(root)
    assert time.monotonic() - started < 20
    reasons = {s.path: s.reason for s in rep.skipped_files}
    assert reasons["blob.py"] == "binary"
    assert reasons["bundle.min.js"] == "minified"
    assert reasons["dense.js"] == "minified"
    assert reasons["huge.py"].startswith("too large")
    # git never lists a fifo; the tree walk sees it and must skip it without opening it.
    assert reasons.get("pipe.py", "not a regular file") == "not a regular file"
    assert git_init or "pipe.py" in reasons
    assert reasons["dangling.py"] == "broken symlink"
    assert rep.files == 1


def test_compiled_modules_with_an_inline_source_map_are_indexed_not_called_minified(make_repo) -> None:
    """An npm package's compiled modules end with their source map inline (one long base64
    line): 30 of @angular/core's esm2022 files were skipped as "minified" for it."""
    import base64

    code = "".join(f"export function step{i}(value) {{\n    return value + {i};\n}}\n" for i in range(12))
    source_map = base64.b64encode(
        b'{"version":3,"sources":["step.ts"],"mappings":"' + b"AAAA;" * 3000 + b'"}'
    )
    root = make_repo(
        {
            "esm/step.mjs": f"{code}//# sourceMappingURL=data:application/json;base64,{source_map.decode()}",
            "dense.js": "var x = 1;" * 400 + "\n//# sourceMappingURL=data:application/json;base64,e30=",
        }
    )
    layout, rep = _index(root)
    assert {s.path: s.reason for s in rep.skipped_files} == {"dense.js": "minified"}  # still minified
    with SymbolStore(layout) as store:
        assert {s.name for s in store.symbols_in_file("esm/step.mjs")} == {f"step{i}" for i in range(12)}


# Root reads any file whatever its mode; dropping CAP_DAC_OVERRIDE makes the mode count again.
DROP_DAC = [
    "setpriv",
    "--inh-caps=-dac_override,-dac_read_search",
    "--bounding-set=-dac_override,-dac_read_search",
]


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None, reason="cannot drop root's DAC override"
)
def test_permission_denied_file_is_skipped_and_the_run_continues(make_repo) -> None:
    root = make_repo({"ok.py": "def ok():\n    pass\n", "private.py": "def s():\n    pass\n"})
    (root / "private.py").chmod(0)
    prefix = DROP_DAC if os.geteuid() == 0 else []
    try:
        proc = subprocess.run(
            [*prefix, SEMFORA, "index", "--no-vectors", "--json", "--paths"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        (root / "private.py").chmod(0o644)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    reasons = {s["path"]: s["reason"] for s in report["skipped_files"]}
    assert reasons["private.py"] == "unreadable: Permission denied"
    assert report["files"] == 1


def test_symlink_loop_and_symlink_outside_repo_are_not_followed(make_repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("def leaked():\n    pass\n", encoding="utf-8")
    root = make_repo({"ok.py": "def ok():\n    pass\n"}, git_init=False)
    (root / "loop_a.py").symlink_to(root / "loop_b.py")
    (root / "loop_b.py").symlink_to(root / "loop_a.py")
    (root / "escape.py").symlink_to(outside / "leak.py")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    (root / "self_dir").symlink_to(root, target_is_directory=True)
    layout, rep = _index(root)
    reasons = {s.path: s.reason for s in rep.skipped_files}
    assert reasons["loop_a.py"] == "symlink loop"
    assert reasons["escape.py"] == "symlink points outside the repository"
    assert "escape_dir/leak.py" not in reasons  # a directory link is never descended into
    with SymbolStore(layout) as store:
        assert store.symbols_by_name("leaked") == []
        assert [f.path for f in store.files()] == ["ok.py"]


def test_plain_directory_is_walked_with_gitignore(make_repo) -> None:
    root = make_repo(
        {
            ".gitignore": "generated/\n*.tmp.py\n",
            "src/app.py": "def app():\n    pass\n",
            "src/scratch.tmp.py": "def scratch():\n    pass\n",
            "generated/out.py": "def gen():\n    pass\n",
            "node_modules/dep/index.js": "function dep() {}\n",
            "src/nested/.gitignore": "private.py\n",
            "src/nested/private.py": "def private():\n    pass\n",
            "src/nested/public.py": "def public():\n    pass\n",
        },
        git_init=False,
    )
    layout, rep = _index(root)
    with SymbolStore(layout) as store:
        assert sorted(f.path for f in store.files()) == ["src/app.py", "src/nested/public.py"]


def test_git_repo_lists_untracked_but_not_ignored(make_repo) -> None:
    root = make_repo({".gitignore": "ignored.py\n", "tracked.py": "def t():\n    pass\n"})
    (root / "untracked.py").write_text("def u():\n    pass\n", encoding="utf-8")
    (root / "ignored.py").write_text("def i():\n    pass\n", encoding="utf-8")
    layout, rep = _index(root)
    with SymbolStore(layout) as store:
        assert sorted(f.path for f in store.files()) == ["tracked.py", "untracked.py"]


@pytest.mark.parametrize("damage", ["garbage", "truncate"])
def test_corrupt_index_is_rebuilt_with_a_warning(make_repo, damage: str) -> None:
    files = {f"pkg/m{i}.py": f"def f{i}():\n    return {i}\n" * 20 for i in range(40)}
    root = make_repo(files)
    layout, first = _index(root)
    db = layout.index_db
    if damage == "garbage":
        db.write_bytes(os.urandom(8192))
    else:
        size = db.stat().st_size
        with db.open("r+b") as fh:
            fh.truncate(size // 2)
    heard: list[EngineWarning] = []
    rep = index_repository(
        layout, load_settings(layout.root).settings, text_index=False, on_warning=heard.append
    )
    assert [w.code for w in heard] == ["INDEX_CORRUPT"]
    assert rep.files == first.files and rep.symbols == first.symbols and rep.rebuild
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone()[0] == "ok"


def test_second_writer_waits_then_fails_with_lock_busy(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    pass\n"})
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings.model_copy(deep=True)
    settings.index.lock_timeout = 0.3
    with writer_lock(layout, 1.0):
        started = time.monotonic()
        with pytest.raises(LockBusy) as err:
            index_repository(layout, settings, text_index=False)
        assert time.monotonic() - started >= 0.3
    assert err.value.code == "INDEX_LOCKED"
    index_repository(layout, settings, text_index=False)  # the lock is free again


def test_readers_are_not_blocked_while_indexing(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    pass\n"})
    layout, _ = _index(root)
    reader = SymbolStore(layout)
    seen: list[int] = []

    def progress(_msg: str, _done: int, _total: int) -> None:
        # Runs inside the writer's open transaction: a reader must still answer at once.
        t = time.monotonic()
        seen.append(len(reader.symbols_by_name("a")))
        assert time.monotonic() - t < 1.0

    (root / "b.py").write_text("def b():\n    pass\n", encoding="utf-8")
    settings = load_settings(layout.root).settings
    index_repository(layout, settings, text_index=False, progress=progress)
    assert seen and all(n == 1 for n in seen)
    assert reader.symbols_by_name("b")[0].file == "b.py"
    reader.close()


def test_a_header_ahead_of_the_file_during_a_writers_checkpoint_is_waited_out(make_repo, monkeypatch) -> None:
    """A checkpoint copying pages into index.db can leave its header ahead of its size for a
    moment: a reader opening it then failed INDEX_BUSY ("truncated") although nothing was wrong."""
    import threading

    from engine.store import db

    root = make_repo({"a.py": "def a():\n    pass\n"})
    layout, _ = _index(root)
    whole = layout.index_db.read_bytes()
    layout.index_db.write_bytes(whole[: len(whole) // 2])  # the header says more pages than there are
    looks: list[str | None] = []
    real = db.header_problem
    moved = threading.Event()  # the reader looked a second time, or gave up

    def counted(path):  # type: ignore[no-untyped-def]
        looks.append(real(path))
        if len(looks) >= 2:
            moved.set()
        return looks[-1]

    def read() -> None:
        try:
            opened.append(SymbolStore(layout))
        finally:
            moved.set()

    monkeypatch.setattr(db, "header_problem", counted)
    opened: list[object] = []
    with writer_lock(layout, 1.0):
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert moved.wait(30)  # a state: it found the header ahead and looked again (or failed)
        layout.index_db.write_bytes(whole)  # the checkpoint ends
        reader.join(30)
    assert looks[0] is not None and looks[0].startswith("truncated")
    (store,) = opened  # no INDEX_BUSY: the reader waited for the header to settle
    assert store.symbols_by_name("a")[0].file == "a.py"  # type: ignore[attr-defined]
    store.close()  # type: ignore[attr-defined]


def test_rename_inside_git_is_reported(make_repo) -> None:
    root = make_repo({"a.py": "def alpha():\n    return 1\n"})
    _index(root)
    git(root, "mv", "a.py", "b.py")
    _, rep = _index(root)
    assert (rep.renamed, rep.added, rep.deleted) == (1, 0, 0)


def test_a_reader_repairs_a_damaged_index_only_when_no_writer_holds_the_lock(make_repo) -> None:
    from engine.errors import IndexError_

    root = make_repo({"a.py": "def a():\n    pass\n"})
    layout, _ = _index(root)
    layout.index_db.write_bytes(b"garbage" * 1000)
    with writer_lock(layout, 1.0), pytest.raises(IndexError_) as err:
        SymbolStore(layout)
    assert err.value.code == "INDEX_BUSY"
    assert layout.index_db.read_bytes().startswith(b"garbage")  # nothing deleted under a writer
    heard: list[EngineWarning] = []
    with SymbolStore(layout, on_warning=heard.append) as store:
        assert store.is_empty()
    assert [w.code for w in heard] == ["INDEX_CORRUPT"]


def test_an_index_from_an_older_schema_is_upgraded_and_refilled(make_repo) -> None:
    from engine.store.schema import SCHEMA_VERSION

    root = make_repo({"a.py": "def a():\n    b()\n\ndef b():\n    pass\n"})
    layout, first = _index(root)
    with sqlite3.connect(layout.index_db) as conn:  # what a v1 database looked like: edges was a table
        conn.execute("DROP VIEW edges")
        conn.execute("CREATE TABLE edges (file TEXT, caller_id TEXT)")
        conn.execute("CREATE TABLE text_owned_elsewhere (x)")  # another layer's table survives
        conn.execute("PRAGMA user_version = 1")
    _, again = _index(root)
    assert (again.files, again.symbols, again.edges) == (first.files, first.symbols, first.edges)
    with sqlite3.connect(layout.index_db) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        kinds = dict(conn.execute("SELECT name, type FROM sqlite_master"))
        assert kinds["edges"] == "view" and kinds["text_owned_elsewhere"] == "table"


@pytest.mark.parametrize("git_init", [True, False], ids=["git", "plain"])
def test_non_utf8_file_name_is_skipped_not_fatal(make_repo, git_init: bool) -> None:
    root = make_repo(
        {"ok.py": "def ok():\n    pass\n", "café.py": "def cafe():\n    pass\n"}, git_init=git_init
    )
    with open(os.path.join(os.fsencode(root), b"bad\xff.py"), "wb") as fh:
        fh.write(b"def bad():\n    pass\n")
    layout, rep = _index(root)
    assert rep.files == 2  # ok.py and café.py
    assert any(s.reason == "file name is not valid UTF-8" for s in rep.skipped_files)


def test_indexing_from_a_threaded_program_uses_a_safe_process_start(make_repo) -> None:
    """The app indexes from a worker thread: forking then is unsafe, so the pool must not fork."""
    import threading

    files = {f"m{i}.py": f"def f{i}():\n    return f{(i + 1) % 40}()\n" for i in range(40)}
    root = make_repo(files)
    stop = threading.Event()
    helper = threading.Thread(target=stop.wait, daemon=True)
    helper.start()
    try:
        layout, rep = _index(root)
    finally:
        stop.set()
    assert rep.files == 40 and rep.symbols == 40
    with SymbolStore(layout) as store:
        f0 = store.symbols_by_name("f0")[0]
        assert [n.name for n in store.callers(f0.id)] == ["f39"]


def test_a_cold_build_checks_the_overviews_database_before_it_copies_pages_into_it(
    make_repo, monkeypatch
) -> None:
    """A cold `semfora index` failed now and then with "index.db is damaged (truncated ...) while
    another process is writing it": the overview's connection checked index.db's header against its
    size while the build's own checkpoint thread was writing the file. The check comes first now."""
    import threading

    from engine.store import db

    started: list[str] = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        started.append(thread.name)
        real_start(thread)

    checked: list[bool] = []
    real_check = db.header_problem

    def header_problem(path):  # type: ignore[no-untyped-def]
        checked.append("semfora-checkpoint" in started)
        return real_check(path)

    monkeypatch.setattr(threading.Thread, "start", start)
    monkeypatch.setattr(db, "header_problem", header_problem)
    root = make_repo({"app/core.py": "def greet():\n    return 'hi'\n"})
    layout = RepoLayout.for_path(root)
    report = index_repository(layout, load_settings(layout.root).settings)
    assert report.cold and report.symbols == 1
    assert "semfora-checkpoint" in started  # the build did copy its pages beside the overview
    assert checked and not any(checked), checked
