"""The cold build's fast paths (worker processes, marshalled results, parallel call resolution,
indexes built while workers resolve) store exactly what the one-process path stores."""

from __future__ import annotations

import gc
import multiprocessing
import os
import sqlite3
import sys
from pathlib import Path

import pytest

from engine.config import load_settings
from engine.index import indexer
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from engine.semantic.extract import analyze_source
from tests.conftest import run_fresh_python

# Enough files to go past the inline-parse limit and fill several worker batches.
PACKAGES, MODULES_PER_PACKAGE = 4, 12


def _module(pkg: int, mod: int) -> str:
    other = f"pkg{(pkg + 1) % PACKAGES}.m{mod}"
    return f'''"""Module {pkg}.{mod}."""
import os
from {other} import shared_{(pkg + 1) % PACKAGES}_{mod}


def shared_{pkg}_{mod}(value):
    """Shared helper."""
    if value:
        return helper(value) + shared_{(pkg + 1) % PACKAGES}_{mod}(0)
    return os.getcwd()


def helper(x):
    return len(str(x))


class Thing{mod}:
    def run(self, path):
        try:
            with open(path, "w") as fh:
                fh.write(self.name())
        except OSError:
            raise
        return helper(path)

    def name(self):
        return "t"
'''


def _files() -> dict[str, str]:
    files = {f"pkg{p}/__init__.py": "" for p in range(PACKAGES)}
    for p in range(PACKAGES):
        for m in range(MODULES_PER_PACKAGE):
            files[f"pkg{p}/m{m}.py"] = _module(p, m)
    return files


def _dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(db)
    try:
        return {
            "files": conn.execute(
                "SELECT path, language, module, size, sha256, line_count FROM files ORDER BY path"
            ).fetchall(),
            "symbols": conn.execute(
                "SELECT id, name, qualified_name, kind, file, start_line, end_line, signature, doc, parent, "
                "exported, arity, control_flow, max_nesting, risk, risk_reasons, body_hash "
                "FROM symbols ORDER BY id"
            ).fetchall(),
            "terms": conn.execute(
                "SELECT t.term, s.id FROM symbol_terms t JOIN symbols s USING (sid) ORDER BY 1, 2"
            ).fetchall(),
            "calls": conn.execute(
                "SELECT f.path, c.caller_id, c.caller_parent, c.name, c.receiver, c.line, c.awaited, c.in_try, "
                "c.callee_id, c.kind, c.package FROM calls c JOIN files f ON f.id = c.file_id "
                "ORDER BY f.path, c.line, c.name, c.caller_id"
            ).fetchall(),
            "imports": conn.execute(
                "SELECT f.path, i.module, i.names, i.alias, i.line FROM imports i JOIN files f ON f.id = i.file_id "
                "ORDER BY f.path, i.line, i.module"
            ).fetchall(),
            "file_imports": conn.execute("SELECT * FROM file_imports ORDER BY 1, 2").fetchall(),
            "indexes": conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name"
            ).fetchall(),
        }
    finally:
        conn.close()


def _index(root: Path, cache: Path, workers: int, monkeypatch: pytest.MonkeyPatch, files: int) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": workers})})
    report = index_repository(layout, settings, text_index=False)
    assert report.files == files
    return layout.index_db


def test_parallel_cold_build_stores_what_one_process_stores(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(_files())
    serial = _dump(_index(root, tmp_path / "serial", 1, monkeypatch, len(_files())))
    # Force the parallel resolution path (it normally starts at tens of thousands of calls).
    monkeypatch.setattr(indexer, "PARALLEL_RESOLVE_MIN_CALLS", 1)
    parallel = _dump(_index(root, tmp_path / "parallel", 2, monkeypatch, len(_files())))
    assert serial["symbols"], "the fixture must yield symbols"
    assert any(row[9] is not None for row in parallel["calls"]), "some calls must resolve"
    for table, rows in serial.items():
        assert parallel[table] == rows, table


def test_build_restores_the_garbage_collector(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo({"a.py": "def f():\n    return g()\n\n\ndef g():\n    return 1\n"})
    assert gc.isenabled()
    _index(root, tmp_path / "c", 1, monkeypatch, 1)
    assert gc.isenabled()


def test_same_alias_imported_twice_resolves_to_the_later_import_every_time() -> None:
    source = (
        b"try:\n    import psycopg as Database\nexcept ImportError:\n    import psycopg2 as Database\n\n\n"
        b"def version():\n    return Database.__version__.split('.')\n"
    )
    # Query captures do not always list imports in source order (Django's postgresql/base.py
    # came out as psycopg); aliases are now built in line order, so the later import wins.
    want = ("database: psycopg2.__version__.split",)
    assert {analyze_source("db.py", source, "python").symbols[0].risk.reasons for _ in range(2)} == {want}


def test_parallel_index_works_when_the_host_captures_stderr(make_repo, monkeypatch) -> None:
    """Inside the TUI a worker thread indexes while Textual holds stderr (its fileno() is -1)."""
    import io
    import threading

    from engine.config import load_settings
    from engine.index.indexer import INLINE_PARSE_MAX, index_repository
    from engine.repo.layout import RepoLayout

    class CapturedStderr(io.StringIO):
        def fileno(self) -> int:
            return -1

    files = {
        f"pkg/m{i}.py": f"def f{i}(x):\n    return g{i}(x)\n\n\ndef g{i}(x):\n    return x\n"
        for i in range(INLINE_PARSE_MAX * 3)
    }
    root = make_repo(files)
    layout = RepoLayout.for_path(root)
    settings = load_settings(root).settings
    settings.index.workers = 2
    monkeypatch.setattr(sys, "stderr", CapturedStderr())
    outcome: dict[str, object] = {}

    def run() -> None:  # a second live thread rules out fork, as in the app
        try:
            outcome["report"] = index_repository(layout, settings, text_index=False)
        except Exception as exc:  # surfaced by the assertion below
            outcome["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(120)
    assert "error" not in outcome, outcome.get("error")
    report = outcome["report"]
    assert report.files == len(files) and report.symbols == 2 * len(files)


def test_parallel_build_leaves_no_shard_files_and_clears_a_killed_runs(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_repo(_files())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    layout = RepoLayout.for_path(root)
    layout.cache_dir.mkdir(parents=True, exist_ok=True)
    for leftover in ("calls-shard-999-1-p7.calls", "calls-shard-999-1-r0.db"):
        (layout.cache_dir / leftover).write_bytes(b"left by a killed run")
    monkeypatch.setattr(indexer, "PARALLEL_RESOLVE_MIN_CALLS", 1)
    _index(root, tmp_path / "cache", 2, monkeypatch, len(_files()))
    assert sorted(layout.cache_dir.glob(indexer.SHARD_GLOB)) == []
    conn = sqlite3.connect(layout.index_db)
    try:
        attached = [row[1] for row in conn.execute("PRAGMA database_list")]
        resolved = conn.execute("SELECT count(*) FROM calls WHERE callee_id IS NOT NULL").fetchone()[0]
    finally:
        conn.close()
    assert attached == ["main"]
    assert resolved > 0


def test_search_terms_are_the_same_when_sqlite_cannot_expand_json(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SQLite built without JSON functions takes the Python path and stores the same terms."""
    root = make_repo(_files())
    with_json = _dump(_index(root, tmp_path / "json", 1, monkeypatch, len(_files())))
    monkeypatch.setattr(indexer, "EXPAND_TERMS_SQL", "INSERT INTO symbol_terms SELECT * FROM no_json_each()")
    without = _dump(_index(root, tmp_path / "python", 1, monkeypatch, len(_files())))
    assert with_json["terms"], "the fixture must yield search terms"
    assert without["terms"] == with_json["terms"]


@pytest.mark.parametrize("workers", [1, 2])
def test_a_cold_build_leaves_the_text_index_merged_into_one_segment(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """Queries read one b-tree after a cold build, whether the merge ran while workers resolved
    calls or after the commit. A tiny FTS buffer, never merged on its own, makes the bulk load
    write many segments."""
    from engine.index import fts

    small = fts.SCHEMA.replace(str(fts.FTS_HASH_BYTES), "4096")
    small += "INSERT OR IGNORE INTO text_fts(text_fts, rank) VALUES ('automerge', 0);\n"
    small += "INSERT OR IGNORE INTO text_fts(text_fts, rank) VALUES ('crisismerge', 1000);\n"
    monkeypatch.setattr(fts, "SCHEMA", small)
    monkeypatch.setattr(indexer, "PARALLEL_RESOLVE_MIN_CALLS", 1)
    root = make_repo(_files())
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    layout = RepoLayout.for_path(root)
    settings = load_settings(layout.root).settings
    settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": workers})})
    index_repository(layout, settings)
    conn = sqlite3.connect(layout.index_db)
    try:
        segments = conn.execute("SELECT count(DISTINCT segid) FROM text_fts_idx").fetchone()[0]
        found = conn.execute("SELECT count(*) FROM text_fts WHERE text_fts MATCH 'shared'").fetchone()[0]
    finally:
        conn.close()
    assert segments == 1
    assert found > 0


def _first_batch_finishes_last(root: str, batch, shard, chunk):  # noqa: ANN001, ANN201
    """A parse task (run in a forked worker) whose first batch waits until the last is done."""
    import time

    marker = Path(os.environ["SEMFORA_TEST_MARKER"])
    paths = {item[0] for item in batch}
    if os.environ["SEMFORA_TEST_FIRST"] in paths:
        deadline = time.monotonic() + 120
        while not marker.exists():  # a state, not a time: the last batch writes the marker
            if time.monotonic() > deadline:
                raise RuntimeError("the last batch never finished")
            time.sleep(0.01)
    out = _REAL_PARSE_BATCH_PACKED(root, batch, shard, chunk)
    if os.environ["SEMFORA_TEST_LAST"] in paths:
        marker.write_text("done")
    return out


_REAL_PARSE_BATCH_PACKED = indexer.parse_batch_packed


def test_symbols_and_chunks_are_numbered_in_file_order_whichever_worker_finishes_first(
    make_repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search breaks ties between equal scores by row numbers, so they must not depend on timing:
    with the first batch of files finishing last, the parallel build numbers symbols and text
    chunks as the one-process build does, and a query that two identical files match equally
    lists them in the same order."""
    from engine.index import fts

    files = _files()
    twin = "def checksum_of_blocks(blocks):\n    return sum(len(b) for b in blocks) % 65521\n"
    files["aaa/twin.py"] = files["zzz/twin.py"] = twin
    # The largest file is parsed first (it holds over 1% of the bytes): it opens the first batch.
    files["big/huge.py"] = "".join(
        f"def step_{i}(x):\n    return step_{i + 1}(x) + {i}\n\n\n" for i in range(400)
    )
    root = make_repo(files)

    def numbering(db: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], list[str]]:
        conn = sqlite3.connect(db)
        try:
            symbols = conn.execute("SELECT sid, id FROM symbols ORDER BY sid").fetchall()
            chunks = conn.execute("SELECT rowid, chunk_id FROM text_chunks ORDER BY rowid").fetchall()
            hits = [row.file for row, _score in fts.search(conn, "checksum blocks", limit=2)]
        finally:
            conn.close()
        return symbols, chunks, hits

    def build(cache: Path, workers: int) -> Path:
        monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
        layout = RepoLayout.for_path(root)
        settings = load_settings(layout.root).settings
        settings = settings.model_copy(
            update={"index": settings.index.model_copy(update={"workers": workers})}
        )
        index_repository(layout, settings)
        return layout.index_db

    serial = numbering(build(tmp_path / "serial", 1))
    monkeypatch.setenv("SEMFORA_TEST_MARKER", str(tmp_path / "last-batch-done"))
    monkeypatch.setenv("SEMFORA_TEST_FIRST", "big/huge.py")
    monkeypatch.setenv("SEMFORA_TEST_LAST", "zzz/twin.py")
    monkeypatch.setattr(indexer, "parse_batch_packed", _first_batch_finishes_last)
    # Forked workers see the patched task and the variables. Fork is what a single-threaded build
    # uses; other tests in this process may have left a thread running, so it is asked for here.
    monkeypatch.setattr(indexer, "pool_context", lambda: multiprocessing.get_context("fork"))
    parallel = numbering(build(tmp_path / "parallel", 2))
    assert (tmp_path / "last-batch-done").exists(), "the parallel build must have used the slow task"
    assert len(serial[0]) > 100 and len(serial[1]) > 100
    assert parallel[0] == serial[0]
    assert parallel[1] == serial[1]
    assert serial[2] == parallel[2] and sorted(serial[2]) == ["aaa/twin.py", "zzz/twin.py"]


_PROGRESS_DRIVER = """
import json, sys
from engine.config import load_settings
from engine.index import indexer
from engine.repo.layout import RepoLayout

indexer.PARALLEL_RESOLVE_MIN_CALLS = 1  # boost's 462k calls in a small repository
layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": 2})})
seen = []
indexer.index_repository(layout, settings, text_index=True, progress=lambda *a: seen.append(a))
print(json.dumps(seen))
"""


def test_a_cold_build_says_how_far_its_last_part_got(make_repo, tmp_path: Path) -> None:
    """On boost the build spent a minute after parsing with "resolving calls 0/9625" on the screen
    (the parent builds indexes while the workers resolve), then nothing at all while it copied the
    resolved calls in, committed and stored the overview. Both are counted now. (A fresh process:
    calls are resolved in forked workers only where no other thread runs.)"""
    root = make_repo(_files())
    seen = [tuple(x) for x in run_fresh_python(_PROGRESS_DRIVER, str(root), cache=tmp_path / "cache")]
    phases = list(dict.fromkeys(p for p, _d, _t in seen))
    assert phases[-2:] == [indexer.PHASE_RESOLVE, indexer.PHASE_WRITE]
    writing = [(d, t) for p, d, t in seen if p == indexer.PHASE_WRITE]
    resolving = [d for p, d, _t in seen if p == indexer.PHASE_RESOLVE]
    total = writing[-1][1]
    assert total > indexer.WRITE_STEPS  # one more step per slice of resolved calls copied in
    assert [d for d, _t in writing] == list(range(1, total + 1))  # each step said as it ends
    assert resolving == sorted(resolving)  # never back to 0 while the resolved calls are copied in
    assert resolving[-1] == next(t for p, _d, t in seen if p == indexer.PHASE_RESOLVE) > 0


_GATED = """
import json, multiprocessing, sys
from engine.config import load_settings
from engine.index import indexer
from engine.repo.layout import RepoLayout
indexer.PARALLEL_RESOLVE_MIN_CALLS = 1
indexer.MAX_SLICES = 1  # as few slices as there are shards: before, the bar went from 0 to done
indexer.RESOLVE_POLL_S = 0.01
gate = multiprocessing.get_context("fork").Event()
batches = [0]
resolve_rows = indexer._FileResolver.resolve_rows
def gated(self, rows):  # runs in a forked worker
    batches[0] += 1
    if batches[0] == 2 and not gate.wait(60):
        raise RuntimeError("the bar never showed a slice resolved in part")
    return resolve_rows(self, rows)
indexer._FileResolver.resolve_rows = gated
layout = RepoLayout.for_path(sys.argv[1])
settings = load_settings(layout.root).settings
settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": 2})})
seen = []
def progress(phase, done, total):
    if phase == indexer.PHASE_RESOLVE:
        seen.append((done, total))
        if 0 < done < total:
            gate.set()
report = indexer.index_repository(layout, settings, text_index=False, progress=progress)
print(json.dumps({"resolve_processes": report.resolve_processes, "seen": seen}))
"""


def test_resolution_progress_moves_while_a_slice_is_resolved(make_repo, tmp_path: Path) -> None:
    """boost's "resolving calls" stood at 0 until a slice of ~1,600 files ended: the workers
    count files as they resolve them, and the parent reports it while it waits.

    Each slice's worker resolves one batch of files, then waits until the bar has shown it (the
    progress callback opens the gate); a bar that moves only when slices end never opens it,
    and the worker gives up after a minute, failing the build. A fresh interpreter: a thread
    another test left in this one would keep the build from forking its workers."""
    files = {
        f"pkg/m{i:03d}.py": "".join(f"def f{i}_{j}(x):\n    return helper{j % 5}(x)\n\n" for j in range(20))
        + "".join(f"def helper{k}(x):\n    return x\n\n" for k in range(5))
        for i in range(120)
    }
    root = make_repo(files)
    out = run_fresh_python(_GATED, str(root), cache=tmp_path / "cache")
    assert out["resolve_processes"] == 2
    seen = [tuple(pair) for pair in out["seen"]]
    assert seen[-1] == (120, 120)
    assert any(0 < done < 120 for done, _ in seen), seen
