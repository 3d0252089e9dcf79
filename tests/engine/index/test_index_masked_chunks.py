"""A chunk that holds a secret is indexed masked, and it must be read back masked, not lost.

The index cuts its chunks from a file's redacted text, so such a chunk's stored hash is that of
the masked lines. Reading it back from the raw file used to fail the hash check: the chunk was
never embedded, had no snippet and no text for the rescoring, and it is the auth and key-handling
code that holds what looks like a secret.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.index.chunk_source import chunk_texts
from engine.index.chunking import chunk_file, text_hash
from engine.index.fts import ChunkRow
from engine.index.hybrid import search
from engine.index.vectors import VectorIndexer
from engine.policy.redaction import MASK, contains_secret
from engine.semantic.extract import analyze_source

SECRET = "s3cr3t-Hunter2-xyz"
DB_PY = f'''"""Reporting database access."""


def connect_database(host):
    """Open the reporting database connection."""
    password = "{SECRET}"
    return Database(host, user="report", password=password)


def close_database(conn):
    """Close a reporting database connection."""
    conn.close()
'''


def test_search_shows_a_chunk_with_a_secret_masked(indexed_repo) -> None:
    layout, settings_ = indexed_repo({"app/db.py": DB_PY})
    hits = search(layout, settings_, "reporting database password", mode="hybrid")
    hit = next(h for h in hits if h.symbol == "connect_database")
    # The chunk's own lines, masked: before, the snippet fell back to the bare signature.
    assert f'password = "{MASK}"' in hit.snippet
    assert SECRET not in json.dumps([h.snippet for h in hits])


def test_a_chunk_with_a_secret_is_embedded_masked(fake_ollama, monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout, settings_ = indexed_repo({"app/db.py": DB_PY})
    report = VectorIndexer(layout, settings_).run()
    conn = sqlite3.connect(layout.index_db)
    try:
        chunks = int(conn.execute("SELECT count(*) FROM text_chunks").fetchone()[0])
    finally:
        conn.close()
    assert report.pending == 0 and report.embedded == chunks
    sent = json.dumps([r.body for r in fake_ollama.requests_to("/api/embed")])
    assert "connect_database" in sent and MASK in sent
    assert SECRET not in sent
    hits = search(layout, settings_, "open the reporting database connection", mode="vector")
    assert "connect_database" in {h.symbol for h in hits}


_LINE = st.sampled_from(
    [
        "x = 1",
        "    return value",
        "def helper(a, b):",
        "class Box:",
        "    def open(self):",
        '    """Say what it does."""',
        f'    password = "{SECRET}"',
        'api_key = "sk-ant-api03-' + "A" * 40 + '"',
        "    token: str = 'ghp_" + "b" * 36 + "'",
        "-----BEGIN RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA" + "q" * 48,
        "-----END RSA PRIVATE KEY-----",
        "# a comment about the password field",
        "",
    ]
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_LINE, min_size=1, max_size=40))
def test_every_chunk_of_an_unchanged_file_reads_back_and_none_reads_back_a_secret(
    tmp_path: Path, lines: list[str]
) -> None:
    text = "\n".join(lines) + "\n"
    (tmp_path / "mod.py").write_text(text, encoding="utf-8")
    symbols = analyze_source("mod.py", text.encode(), "python").symbols
    chunks = chunk_file("mod.py", text, symbols, language="python")
    rows = [
        ChunkRow(
            i, c.id, c.file, c.start_line, c.end_line, c.kind, "python", "", text_hash(c.text), None, None, ""
        )
        for i, c in enumerate(chunks)
    ]
    got = chunk_texts(tmp_path, rows)
    assert set(got) == {c.id for c in chunks}
    assert all(got[c.id] == c.text for c in chunks)
    assert not any(contains_secret(t) for t in got.values())
