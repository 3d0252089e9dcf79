"""Incremental text index: edits, deletes and renames leave no stale chunk; cache entries follow content."""

from __future__ import annotations

import sqlite3

from engine.index import fts
from engine.index.hybrid import search
from engine.index.indexer import index_repository
from engine.index.pipeline import refresh_text_index
from engine.store.cache import ResultCache
from tests.conftest import git


def _chunks(layout) -> dict[str, tuple[str, str | None]]:
    conn = sqlite3.connect(layout.index_db)
    try:
        return {
            cid: (f, q)
            for cid, f, q in conn.execute("SELECT chunk_id, file, qualified_name FROM text_chunks")
        }
    finally:
        conn.close()


def _fts_files(layout, query: str) -> set[str]:
    conn = fts.connect(layout.index_db)
    try:
        return {row.file for row, _ in fts.search(conn, query)}
    finally:
        conn.close()


def test_first_index_chunks_code_and_prose(indexed_repo) -> None:
    layout, _settings = indexed_repo()
    chunks = _chunks(layout)
    names = {q for _f, q in chunks.values()}
    assert {"AuthMiddleware", "AuthMiddleware.should_strip_auth", "getUserById", "redirect"} <= names
    assert "README.md" in {f for f, _q in chunks.values()}


def test_noop_refresh_rewrites_nothing(indexed_repo) -> None:
    layout, settings = indexed_repo()
    report = refresh_text_index(layout, settings, None)
    assert report.files_changed == 0 and report.chunks_written == 0 and report.chunks_deleted == 0


def test_edit_rewrites_only_the_changed_chunk(indexed_repo) -> None:
    layout, settings = indexed_repo()
    before = _chunks(layout)
    path = layout.root / "app/routes.py"
    path.write_text(path.read_text().replace('return "/" + endpoint', 'return "/zebra/" + endpoint'))
    report = index_repository(layout, settings).text_index
    assert report.files_changed == 1
    assert report.chunks_written == 1 and report.chunks_deleted == 1  # url_for only
    assert _chunks(layout).keys() == before.keys()  # same ids: the chunk was rewritten in place
    assert _fts_files(layout, "zebra") == {"app/routes.py"}


def test_removed_function_and_deleted_file_vanish_from_fts(indexed_repo) -> None:
    layout, settings = indexed_repo()
    path = layout.root / "app/auth.py"
    text = path.read_text()
    path.write_text(text[: text.index("def getUserById")])
    index_repository(layout, settings)
    assert "getUserById" not in {q for _f, q in _chunks(layout).values()}
    assert [h for h in search(layout, settings, "getUserById", mode="fts") if h.symbol == "getUserById"] == []

    (layout.root / "app/routes.py").unlink()
    report = index_repository(layout, settings).text_index
    assert report.deleted_paths == ("app/routes.py",)
    assert "app/routes.py" not in {f for f, _q in _chunks(layout).values()}
    assert _fts_files(layout, "redirect location") <= {"README.md", "app/auth.py"}


def test_rename_moves_chunks_to_the_new_path(indexed_repo) -> None:
    layout, settings = indexed_repo()
    git(layout.root, "mv", "app/routes.py", "app/urls.py")
    index_repository(layout, settings)
    files = {f for f, _q in _chunks(layout).values()}
    assert "app/urls.py" in files and "app/routes.py" not in files
    hits = search(layout, settings, "redirect", mode="fts")
    assert hits[0].file == "app/urls.py" and hits[0].symbol == "redirect"


def test_cache_entries_are_invalidated_when_their_content_changes(indexed_repo) -> None:
    layout, settings = indexed_repo()
    conn = sqlite3.connect(layout.index_db)
    hashes = dict(
        conn.execute("SELECT qualified_name, content_hash FROM text_chunks WHERE qualified_name IS NOT NULL")
    )
    conn.close()
    cache = ResultCache(layout.cache_db)
    cache.put("rerank", "q:redirect", "0.9", content_hash=hashes["redirect"])
    cache.put("rerank", "q:getUserById", "0.4", content_hash=hashes["getUserById"])
    cache.put("summary", "redirect", "Builds a redirect response.", content_hash=hashes["redirect"])
    conn = sqlite3.connect(layout.index_db)
    (routes_sha,) = conn.execute("SELECT sha256 FROM text_files WHERE path='app/routes.py'").fetchone()
    conn.close()
    cache.put("summary", "file:app/routes.py", "Routing helpers.", content_hash=routes_sha)
    path = layout.root / "app/routes.py"
    path.write_text(path.read_text().replace("code=302", "code=307"))
    report = index_repository(layout, settings).text_index
    assert report.cache_invalidated == 3
    assert cache.get("rerank", "q:redirect") is None and cache.get("summary", "redirect") is None
    assert cache.get("summary", "file:app/routes.py") is None  # keyed by the old file hash
    assert cache.get("rerank", "q:getUserById") == "0.4"  # untouched content keeps its entry
    (layout.root / "app/auth.py").unlink()
    index_repository(layout, settings)
    assert cache.get("rerank", "q:getUserById") is None
    cache.close()


def test_rebuild_discards_and_recreates_the_text_index(indexed_repo) -> None:
    layout, settings = indexed_repo()
    before = set(_chunks(layout))
    report = index_repository(layout, settings, rebuild=True).text_index
    assert report.files_changed == 3 and set(_chunks(layout)) == before


def test_a_build_written_in_many_small_batches_equals_one_written_at_once(indexed_repo, monkeypatch) -> None:
    from engine.index import pipeline

    layout, settings = indexed_repo()
    whole = _chunks(layout)
    monkeypatch.setattr(pipeline, "INSERT_BATCH_CHUNKS", 2)  # flush after nearly every file
    report = refresh_text_index(layout, settings, None, rebuild=True)
    assert report.chunks_written == len(whole) == report.chunks_total
    assert _chunks(layout) == whole
    assert _fts_files(layout, "zebra") == set()
    assert _fts_files(layout, "redirect") >= {"app/routes.py"}
    conn = sqlite3.connect(layout.index_db)
    try:
        recorded = {r[0] for r in conn.execute("SELECT path FROM text_files")}
    finally:
        conn.close()
    assert recorded == {f for f, _q in whole.values()}
