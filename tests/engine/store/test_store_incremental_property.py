"""Invariant: after any sequence of edits, the incremental index equals an index built from scratch."""

from __future__ import annotations

import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout

NAMES = ["alpha", "beta", "gamma", "delta"]
PATHS = ["a.py", "pkg/b.py", "pkg/c.py", "other/d.py"]


def _module(path: str) -> str:
    return path[:-3].replace("/", ".")


@st.composite
def source(draw: st.DrawFn) -> str:
    """A small module: some imports, some functions calling names that may live elsewhere."""
    lines = []
    for target in draw(st.lists(st.sampled_from(PATHS), max_size=2, unique=True)):
        lines.append(f"from {_module(target)} import {draw(st.sampled_from(NAMES))}")
    for name in draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True)):
        arity = draw(st.integers(0, 1))
        params = ", ".join(f"p{i}" for i in range(arity))
        calls = draw(st.lists(st.sampled_from(NAMES), max_size=3))
        body = "\n".join(f"    {c}()" for c in calls) or "    return 0"
        lines.append(f"def {name}({params}):\n{body}")
    return "\n\n".join(lines) + "\n"


operation = st.one_of(
    st.tuples(st.just("write"), st.sampled_from(PATHS), source()),
    st.tuples(st.just("delete"), st.sampled_from(PATHS), st.just("")),
    st.tuples(st.just("rename"), st.sampled_from(PATHS), st.sampled_from(PATHS)),
)


def _snapshot(
    layout: RepoLayout,
) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]], set[tuple[object, ...]]]:
    with sqlite3.connect(layout.index_db) as conn:
        symbols = set(
            conn.execute("SELECT id, file, qualified_name, kind, start_line, end_line FROM symbols")
        )
        edges = set(
            conn.execute(
                "SELECT e.file, e.caller_id, e.callee_id, e.callee_name, e.kind, e.package, e.line FROM edges e"
            )
        )
        imports = set(conn.execute("SELECT src, dst FROM file_imports"))
    return symbols, edges, imports


def _bump(path: Path) -> None:
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 3_000_000_000))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    initial=st.dictionaries(st.sampled_from(PATHS), source(), min_size=1), ops=st.lists(operation, max_size=4)
)
def test_incremental_index_equals_a_fresh_build(
    initial: dict[str, str], ops: list[tuple[str, str, str]]
) -> None:
    work = Path(tempfile.mkdtemp(prefix="semfora-prop-"))
    try:
        root = work / "repo"
        root.mkdir()
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-incremental")
        for rel, text in initial.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        layout = RepoLayout.for_path(root)
        settings_ = load_settings(layout.root).settings
        index_repository(layout, settings_, text_index=False)
        for kind, path, arg in ops:
            target = root / path
            if kind == "write":
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(arg, encoding="utf-8")
                _bump(target)
            elif kind == "delete" and target.exists():
                target.unlink()
            elif kind == "rename" and target.exists() and arg != path:
                (root / arg).parent.mkdir(parents=True, exist_ok=True)
                target.replace(root / arg)
                _bump(root / arg)
            index_repository(layout, settings_, text_index=False)
        incremental = _snapshot(layout)
        os.environ["XDG_CACHE_HOME"] = str(work / "cache-fresh")
        fresh_layout = RepoLayout.for_path(root)
        index_repository(fresh_layout, settings_, text_index=False)
        fresh = _snapshot(fresh_layout)
        assert incremental[0] == fresh[0], "symbols differ"
        assert incremental[2] == fresh[2], "import graph differs"
        assert incremental[1] == fresh[1], "call edges differ"
    finally:
        shutil.rmtree(work, ignore_errors=True)
