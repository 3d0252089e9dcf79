"""A first build asked for by a process with threads (the app, the MCP server) runs in a child.

The app indexed in one of its threads: call resolution forks workers only from a process with no
other thread, so every call site of a first build was resolved in one process, and the parse
results were unpacked and written under the interpreter lock the screen needs. The run now goes to
a single-threaded child (which forks its workers as `semfora index` does); progress, warnings,
the report and typed errors come back, and stopping or killing the host ends the child.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import select
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine.config import load_settings
from engine.errors import EngineWarning, LockBusy
from engine.index.child import index_in_child
from engine.index.indexer import PHASE_PARSE, index_repository
from engine.repo.layout import RepoLayout
from engine.store.lock import writer_lock
from tests.conftest import ROOT, SEMFORA, run_fresh_python


def _calls_repo(make_repo, files: int = 160, per_file: int = 260) -> Path:
    """Over 40,000 call sites: enough that a cold build resolves them in parallel."""
    body = {
        f"pkg/m{i:03d}.py": "".join(
            f"def f{i}_{j}(x):\n    return helper{j % 7}(x)\n\n" for j in range(per_file)
        )
        + "".join(f"def helper{k}(x):\n    return x\n\n" for k in range(7))
        for i in range(files)
    }
    return make_repo(body)


_HOST = """
import json, multiprocessing, resource, sys, threading
import engine.index.child
from engine.api import index_repository
from engine.config import load_settings
from engine.repo.layout import RepoLayout
if sys.argv[2] == "threaded":
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # the host's UI thread
engine.index.child.CHILD_MIN_FILES = int(sys.argv[3])
layout = RepoLayout.for_path(sys.argv[1])
phases, in_child = [], set()
def progress(phase, done, total):
    in_child.add(any(p.name == "semfora-index" for p in multiprocessing.active_children()))
    if not phases or phases[-1] != phase:
        phases.append(phase)
report = index_repository(layout, load_settings(layout.root).settings, progress=progress)
me = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"resolve_processes": report.resolve_processes, "symbols": report.symbols,
                  "edges": report.edges, "phases": phases, "in_child": sorted(in_child)}))
"""


def test_a_threaded_host_s_first_build_resolves_calls_in_parallel_and_matches_the_cli(
    make_repo, tmp_path, monkeypatch
) -> None:
    root = _calls_repo(make_repo)
    monkeypatch.setenv("SEMFORA_INDEX__WORKERS", "2")
    monkeypatch.setenv("SEMFORA_EMBEDDING", "none")
    out = run_fresh_python(_HOST, str(root), "threaded", "100", cache=tmp_path / "host")
    assert out["in_child"] == [True]
    assert out["resolve_processes"] == 2, out  # in the host's own thread it was 1
    assert out["phases"][:2] == ["discovering", "parsing"] and "resolving calls" in out["phases"]
    # The same index a single-threaded `semfora index` builds.
    single = run_fresh_python(_HOST, str(root), "alone", "100", cache=tmp_path / "cli")
    assert single["in_child"] == [False]  # a process without threads forks its workers itself
    assert (single["symbols"], single["edges"]) == (out["symbols"], out["edges"])
    db = next((tmp_path / "host").glob("semfora/*/index.db"))
    ref = next((tmp_path / "cli").glob("semfora/*/index.db"))
    query = "SELECT name, receiver, line, kind, callee_id FROM calls ORDER BY file_id, line, name"
    with sqlite3.connect(db) as a, sqlite3.connect(ref) as b:
        assert a.execute(query).fetchall() == b.execute(query).fetchall()


def test_a_small_tree_is_built_in_the_host_where_a_child_would_cost_more(make_repo, tmp_path) -> None:
    """Starting the child costs ~0.7 s: a 2-file repository took 0.9 s in one against 0.2 s."""
    root = make_repo({"a.py": "def a():\n    return b()\n", "b.py": "def b():\n    return 1\n"})
    out = run_fresh_python(_HOST, str(root), "threaded", "1000", cache=tmp_path / "small")
    assert out["in_child"] == [False] and out["symbols"] == 2
    big = run_fresh_python(_HOST, str(root), "threaded", "2", cache=tmp_path / "big")
    assert big["in_child"] == [True] and big["symbols"] == 2


def _layout(root: Path, cache: Path, monkeypatch) -> RepoLayout:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    return RepoLayout.for_path(root)


def test_waiting_for_the_lock_is_reported_and_cancel_ends_the_child(make_repo, tmp_path, monkeypatch) -> None:
    root = make_repo({"a.py": "def a():\n    return b()\n", "b.py": "def b():\n    return 1\n"})
    layout = _layout(root, tmp_path / "cache", monkeypatch)
    settings = load_settings(layout.root).settings
    cancel = threading.Event()
    heard: list[EngineWarning] = []

    def on_warning(w: EngineWarning) -> None:
        heard.append(w)
        if w.code == "INDEX_WAITING":
            cancel.set()  # the app closing while another process indexes

    with writer_lock(layout, 5), pytest.raises(LockBusy) as info:  # another semfora is indexing
        index_in_child(layout, settings, on_warning=on_warning, cancel=cancel)
    assert info.value.code == "INDEX_LOCKED"
    assert [w.code for w in heard] == ["INDEX_WAITING"]
    assert not [p for p in multiprocessing.active_children() if p.name == "semfora-index"]


def test_a_typed_error_in_the_child_arrives_as_itself(make_repo, tmp_path, monkeypatch) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    layout = _layout(root, tmp_path / "cache", monkeypatch)
    settings = load_settings(layout.root).settings
    settings = settings.model_copy(update={"index": settings.index.model_copy(update={"lock_timeout": 0.2})})
    with writer_lock(layout, 5), pytest.raises(LockBusy) as info:
        index_in_child(layout, settings)
    assert info.value.code == "INDEX_LOCKED" and "waited 0.2s" in (info.value.hint or "")


class _Closing(Exception):
    pass


def test_a_host_that_stops_at_a_progress_report_leaves_the_index_writable(
    make_repo, tmp_path, monkeypatch
) -> None:
    root = _calls_repo(make_repo, files=120, per_file=40)
    layout = _layout(root, tmp_path / "cache", monkeypatch)
    settings = load_settings(layout.root).settings

    def progress(phase: str, done: int, total: int) -> None:
        if phase == PHASE_PARSE and done > 0:  # parse workers have spilled call sites to shards
            raise _Closing  # the app's progress callback raises AppClosing this way

    with pytest.raises(_Closing):
        index_in_child(layout, settings, progress=progress)
    assert not [p for p in multiprocessing.active_children() if p.name == "semfora-index"]
    assert not list(layout.cache_dir.glob("calls-shard-*")), "a stopped build leaves no shard behind"
    if layout.index_db.exists():  # stopped before its commit: nothing of the run is in the index
        with sqlite3.connect(layout.index_db) as conn:
            assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    quick = settings.model_copy(update={"index": settings.index.model_copy(update={"lock_timeout": 5})})
    report = index_repository(layout, quick)  # the lock died with the child
    assert report.files == 120 and report.symbols == 120 * 47


_KILLED_HOST = """
import json, multiprocessing, sys, threading
import engine.index.child
from engine.api import index_repository
engine.index.child.CHILD_MIN_FILES = 100
from engine.config import load_settings
from engine.repo.layout import RepoLayout
threading.Thread(target=threading.Event().wait, daemon=True).start()
layout = RepoLayout.for_path(sys.argv[1])
told = []
def progress(phase, done, total):
    if phase == "parsing" and not told:
        told.append(1)
        print(json.dumps([p.pid for p in multiprocessing.active_children()]), flush=True)
index_repository(layout, load_settings(layout.root).settings, progress=progress)
"""


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _descendants(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = {int(c) for c in (task / "children").read_text().split()}
        except OSError:
            continue
        for kid in kids:
            found |= {kid} | _descendants(kid)
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_killing_the_host_ends_the_index_child_and_its_workers(make_repo, tmp_path) -> None:
    root = _calls_repo(make_repo, files=300, per_file=120)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "SEMFORA_INDEX__WORKERS": "2"}
    host = subprocess.Popen(
        [sys.executable, "-c", _KILLED_HOST, str(root)], stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT
    )
    assert host.stdout is not None
    children = json.loads(host.stdout.readline())
    assert children, "the host started no index process"
    family = set(children)
    for pid in children:
        family |= _descendants(pid)
    watches = {}
    for pid in family:
        try:
            watches[pid] = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
    host.send_signal(signal.SIGKILL)
    host.wait(timeout=60)
    deadline = time.monotonic() + 60
    for fd in watches.values():  # readable once the process has exited
        poller = select.poll()  # not select(): a test process may hold descriptors past 1024
        poller.register(fd, select.POLLIN)
        poller.poll(max(0.0, deadline - time.monotonic()) * 1000)
        os.close(fd)
    assert not [p for p in family if _alive(p)]
    done = subprocess.run(
        [SEMFORA, "index", "--path", str(root), "--json"],
        capture_output=True,
        text=True,
        env={**env, "SEMFORA_INDEX__LOCK_TIMEOUT": "5"},
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["files"] == 300
