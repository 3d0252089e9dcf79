"""The text index keeps no copy of the source: chunk text comes back from the files, checked."""

from __future__ import annotations

import sqlite3

from engine.index import fts
from engine.index.chunk_source import chunk_text, chunk_texts
from engine.index.chunking import chunk_file
from engine.index.hybrid import search
from engine.index.indexer import index_repository
from engine.index.pipeline import refresh_text_index

# A line no tokenizer would keep whole: if these bytes are in index.db, the source was stored.
MARKER = 'return "/zebra-quux/" + endpoint.strip("?!")'


def _db_bytes(layout) -> bytes:
    conn = sqlite3.connect(layout.index_db)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
    return layout.index_db.read_bytes()


def _rows(layout) -> list[fts.ChunkRow]:
    conn = fts.connect(layout.index_db)
    try:
        ids = [r[0] for r in conn.execute("SELECT chunk_id FROM text_chunks")]
        return list(fts.rows_by_chunk_ids(conn, ids).values())
    finally:
        conn.close()


def test_the_index_holds_no_copy_of_the_source(indexed_repo) -> None:
    layout, settings = indexed_repo()
    path = layout.root / "app/routes.py"
    path.write_text(path.read_text().replace('return "/" + endpoint', MARKER), encoding="utf-8")
    index_repository(layout, settings)
    assert MARKER.encode() not in _db_bytes(layout)
    assert MARKER in path.read_text()
    # ...yet full-text search still finds the chunk, and its snippet is the file's text.
    hits = search(layout, settings, "zebra quux", mode="fts")
    assert hits and hits[0].symbol == "url_for" and MARKER in hits[0].snippet


def test_chunk_text_is_the_chunks_own_text_read_from_its_file(indexed_repo) -> None:
    layout, _settings = indexed_repo()
    rows = _rows(layout)
    texts = chunk_texts(layout.root, rows)
    assert set(texts) == {r.chunk_id for r in rows}
    for path in ("app/auth.py", "app/routes.py"):
        source = (layout.root / path).read_text()
        made = {c.id: c.text for c in chunk_file(path, source, _symbols(layout, path), "python")}
        for row in (r for r in rows if r.file == path):
            assert texts[row.chunk_id] == made[row.chunk_id]


def _symbols(layout, path):
    from engine.store.db import SymbolStore

    with SymbolStore(layout) as store:
        return store.symbols_in_file(path)


def test_a_file_changed_since_indexing_gives_no_text_and_search_still_answers(indexed_repo) -> None:
    layout, settings = indexed_repo()
    row = next(r for r in _rows(layout) if r.qualified_name == "redirect")
    path = layout.root / "app/routes.py"
    path.write_text('"""moved"""\n\n\n' + path.read_text(), encoding="utf-8")  # lines shift, not re-indexed
    assert chunk_text(layout.root, row) is None
    hits = search(layout, settings, "redirect", mode="fts")
    hit = next(h for h in hits if h.symbol == "redirect")
    assert "def redirect" in hit.snippet  # the signature stands in for the stale text
    index_repository(layout, settings)
    moved = next(r for r in _rows(layout) if r.qualified_name == "redirect")
    assert (moved.start_line, moved.chunk_id) == (row.start_line + 3, row.chunk_id)
    assert "def redirect" in (chunk_text(layout.root, moved) or "")


def test_chunk_text_never_reads_outside_the_repository(indexed_repo, tmp_path) -> None:
    layout, _settings = indexed_repo()
    outside = tmp_path / "secret.py"
    outside.write_text("TOKEN = 1\n", encoding="utf-8")
    row = _rows(layout)[0]
    escaped = fts.ChunkRow(
        *{**row.__dict__, "file": "../../" + str(outside), "start_line": 1, "end_line": 1}.values()
    )
    assert chunk_text(layout.root, escaped) is None


def test_replaced_chunks_leave_dead_documents_that_search_skips_until_compaction(
    indexed_repo, monkeypatch
) -> None:
    layout, settings = indexed_repo()
    conn = fts.connect(layout.index_db)
    conn.execute("INSERT INTO vector_state VALUES ('keep-me', 'h')")  # embeddings survive compaction
    conn.commit()
    conn.close()
    path = layout.root / "app/routes.py"
    original = path.read_text()
    for i in range(3):
        path.write_text(original.replace("code=302", f"code={300 + i}"), encoding="utf-8")
        index_repository(layout, settings)
    conn = fts.connect(layout.index_db)
    try:
        assert fts.dead_documents(conn) == 3  # redirect was replaced three times
        found = [row.qualified_name for row, _ in fts.search(conn, "redirect", limit=2)]
        assert found.count("redirect") == 1 and len(found) == len(set(found))
    finally:
        conn.close()
    monkeypatch.setattr(fts, "COMPACT_DEAD_MIN", 1)
    report = refresh_text_index(layout, settings, None)
    assert report.compacted
    conn = fts.connect(layout.index_db)
    try:
        assert fts.dead_documents(conn) == 0
        assert conn.execute("SELECT count(*) FROM vector_state").fetchone()[0] == 1
        assert [row.qualified_name for row, _ in fts.search(conn, "redirect", limit=1)] == ["redirect"]
    finally:
        conn.close()
