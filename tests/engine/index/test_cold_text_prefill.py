"""A cold build chunks prose with the code in one pass over the tree, and the text index it leaves
is the one the text refresh alone would have built: same files, same chunks, same answers."""

from __future__ import annotations

import sqlite3

import pytest

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.index.pipeline import refresh_text_index
from engine.repo.layout import RepoLayout


def _tree(modules: int) -> dict[str, str]:
    files = {
        "pkg/__init__.py": "",  # a code file without a chunk is still recorded
        "README.md": "# Billing\n\nHow invoices are *rounded* before they are sent.\n",
        "docs/guide.rst": "Guide\n=====\n\nThe rounding rule lives in ``round_invoice``.\n",
        "deploy/config.yaml": "service:\n  name: billing\n  replicas: 2\n",
        "notes.txt": "Remember the leap-year case in the schedule.\n",
    }
    for i in range(modules):
        files[f"pkg/m{i}.py"] = (
            f'"""Module {i}."""\n\n\ndef round_invoice_{i}(amount):\n    return round(amount, 2) + {i}\n'
        )
        files[f"docs/m{i}.md"] = f"# Module {i}\n\nIt rounds invoices for region {i}.\n"
    return files


def _text_tables(layout: RepoLayout) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]], int]:
    with sqlite3.connect(layout.index_db) as conn:
        files = conn.execute("SELECT path, sha256, size, language FROM text_files ORDER BY path").fetchall()
        chunks = conn.execute(
            "SELECT chunk_id, file, start_line, end_line, kind, language, content_hash, text_hash, name "
            "FROM text_chunks ORDER BY chunk_id"
        ).fetchall()
        hits = conn.execute("SELECT count(*) FROM text_fts WHERE text_fts MATCH 'invoices'").fetchone()[0]
    return files, chunks, int(hits)


# 3 modules: parsed and chunked in this process; 30: in worker processes.
@pytest.mark.parametrize("modules", [3, 30])
def test_a_cold_build_leaves_the_text_index_the_refresh_alone_would_build(make_repo, modules: int) -> None:
    one, two = make_repo(_tree(modules)), make_repo(_tree(modules))
    settings = load_settings(one).settings
    settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": 2})})

    cold = RepoLayout.for_path(one)
    report = index_repository(cold, settings)
    prose = sorted(p for p in _tree(modules) if not p.endswith(".py"))
    assert report.prose_prefilled == tuple(prose)
    assert report.text_index is not None
    assert set(prose) <= set(report.text_index.changed_paths)

    apart = RepoLayout.for_path(two)
    index_repository(apart, settings, text_index=False)
    refresh_text_index(apart, settings, rebuild=True)

    built, alone = _text_tables(cold), _text_tables(apart)
    assert built[0] == alone[0] and len(built[0]) == len(_tree(modules))
    assert built[1] == alone[1]
    assert built[2] == alone[2] > modules  # the README and every docs/m*.md at least

    again = index_repository(cold, settings)  # nothing changed: the next run finds nothing to do
    assert again.text_index is not None
    assert (again.text_index.files_changed, again.text_index.chunks_written) == (0, 0)


def test_a_cold_build_leaves_every_page_in_index_db_with_its_indexes_and_overview(make_repo) -> None:
    """A cold build loads its tables without their secondary indexes and commits without copying the WAL
    into index.db (a thread does it beside the overview): what it leaves is whole all the same."""
    from pathlib import Path

    from engine.index.fts import CHUNK_INDEXES
    from engine.store.schema import SECONDARY_INDEXES

    root = make_repo(_tree(30))
    settings = load_settings(root).settings
    settings = settings.model_copy(update={"index": settings.index.model_copy(update={"workers": 2})})
    layout = RepoLayout.for_path(root)
    report = index_repository(layout, settings)
    assert report.cold
    wal = Path(f"{layout.index_db}-wal")
    assert not wal.exists() or wal.stat().st_size == 0  # every page is in index.db itself
    with sqlite3.connect(layout.index_db) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
        assert {ddl.split()[5] for ddl in (*SECONDARY_INDEXES, *CHUNK_INDEXES)} <= names
        plan = conn.execute(
            "EXPLAIN QUERY PLAN SELECT * FROM text_chunks WHERE file = 'pkg/m1.py'"
        ).fetchall()
        assert "text_chunks_file" in str(plan)
        assert conn.execute("SELECT count(*) FROM overview").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM symbols").fetchone()[0] == 30
