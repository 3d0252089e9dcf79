"""A definition's leading comment answers for the definition, in the full-text and the vector lists.

The comment above a ``def``/``func`` lies outside the symbol's span, so it is indexed as a ``module``
chunk of its own; a query in the comment's words used to get that comment back instead of the code.
"""

from __future__ import annotations

import sqlite3

import pytest

from engine.index.chunking import CHUNKING_VERSION, chunk_file, is_comment_block
from engine.index.hybrid import search
from engine.index.indexer import index_repository
from engine.index.vectors import VectorIndexer
from engine.semantic.model import Symbol

KEYS_PY = """\
def first_helper(value):
    return value + 1


# Rotate the signing material and drop whatever is past its grace period.
# Called nightly by the scheduler.
def rotate(store, now):
    for item in store.items():
        if item.expires < now:
            store.remove(item)
    return store


RETRY_LIMIT = 3  # how often the upstream gateway is asked again
def settle(batch):
    return [entry for entry in batch if entry]
"""

ROTATE_LINE = KEYS_PY.splitlines().index("def rotate(store, now):") + 1
RETRY_LINE = (
    KEYS_PY.splitlines().index("RETRY_LIMIT = 3  # how often the upstream gateway is asked again") + 1
)


@pytest.mark.parametrize("mode", ["fts", "hybrid"])
def test_a_query_in_a_comments_words_gets_the_definition_below_it(indexed_repo, mode) -> None:
    layout, settings = indexed_repo({"app/keys.py": KEYS_PY})
    hits = search(layout, settings, "signing material grace period", mode=mode)
    assert hits[0].symbol == "rotate" and hits[0].kind == "symbol"
    assert hits[0].start_line == ROTATE_LINE
    assert not [h for h in hits if h.kind == "module" and h.end_line == ROTATE_LINE - 1]


def test_module_code_before_a_definition_is_not_handed_to_it(indexed_repo) -> None:
    layout, settings = indexed_repo({"app/keys.py": KEYS_PY})
    hits = search(layout, settings, "upstream gateway asked again", mode="fts")
    assert hits[0].kind == "module" and hits[0].start_line <= RETRY_LINE <= hits[0].end_line


def test_the_vector_list_hands_a_comment_to_its_definition(fake_ollama, monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout, settings = indexed_repo({"app/keys.py": KEYS_PY})
    assert VectorIndexer(layout, settings).run().enabled
    hits = search(layout, settings, "rotate the signing material past its grace period", mode="vector")
    assert hits[0].symbol == "rotate" and hits[0].sources["vector"] == 1
    assert all(h.kind != "module" or h.end_line != ROTATE_LINE - 1 for h in hits)


@pytest.mark.parametrize(
    ("text", "is_comment"),
    [
        ("// Path adds a matcher for the URL path.\n// It accepts a template.", True),
        ("/**\n * Get the longest option term length.\n *\n * @param {Help} helper\n */", True),
        ("# Get the content type of the response.\n", True),
        ("#\n# Section\n#\n", True),
        ("-- the users table\n", True),
        ("#include <stdio.h>\n#define MAX 3\n", False),
        ("import codecs\nimport io\n", False),
        ("// a note\nconst retries = 3;\n", False),
        ("\n\n", False),
    ],
)
def test_what_counts_as_a_comment_block(text, is_comment) -> None:
    assert is_comment_block(text) is is_comment


AXIOS_LIKE_JS = """\
import utils from './utils.js';
import AxiosError from './AxiosError.js';

/**
 * Resolve or reject a Promise based on the response status of the upstream server.
 *
 * @param {Function} resolve A function that resolves the promise.
 */
export default function settle(resolve, reject, response) {
  return resolve(response);
}
"""


def _module_spans(path: str, text: str, symbols: list[Symbol], language: str) -> list[tuple[int, int]]:
    return [
        (c.start_line, c.end_line) for c in chunk_file(path, text, symbols, language) if c.kind == "module"
    ]


def test_the_comment_under_a_files_imports_is_a_chunk_of_its_own() -> None:
    settle = Symbol("s", "settle", "settle", "function", "lib/settle.js", "javascript", 9, 11)
    assert _module_spans("lib/settle.js", AXIOS_LIKE_JS, [settle], "javascript") == [(1, 3), (4, 8)]


@pytest.mark.parametrize(
    "text",
    [
        # a blank line between the comment and the definition: a section note, not the definition's
        "import os\n# Section: helpers\n\ndef helper():\n    return os.sep\n",
        # a block comment whose opener is on a line that does not look like a comment: left whole
        "import os\n/*\n  plain words\n */\ndef helper():\n    return os.sep\n",
        # code right above the definition
        "import os\nLIMIT = 3\ndef helper():\n    return os.sep\n",
    ],
)
def test_a_run_without_a_leading_comment_stays_one_chunk(text) -> None:
    line = text.splitlines().index("def helper():") + 1
    helper = Symbol("h", "helper", "helper", "function", "m.py", "python", line, line + 1)
    assert _module_spans("m.py", text, [helper], "python") == [(1, line - 1)]


def test_a_files_first_definition_is_found_by_the_comment_under_its_imports(indexed_repo) -> None:
    source = (
        "import os\nimport time\n\n"
        "# Rotate the signing material and drop whatever is past its grace period.\n"
        "def rotate(store, now):\n    return [item for item in store if item.expires > now]\n"
    )
    layout, settings = indexed_repo({"app/keys.py": source, "app/other.py": "LIMIT = 1\n"})
    hits = search(layout, settings, "signing material grace period", mode="fts")
    assert hits[0].symbol == "rotate" and hits[0].kind == "symbol" and hits[0].start_line == 5


def test_an_index_chunked_by_an_earlier_version_is_chunked_again_keeping_its_vectors(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """After an upgrade the leading comments become chunks of their own without touching a file, and
    only the chunks that changed are embedded again."""
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    source = (
        "import os\nimport time\n\n"
        "# Rotate the signing material and drop whatever is past its grace period.\n"
        "def rotate(store, now):\n    return [item for item in store if item.expires > now]\n"
    )
    layout, settings = indexed_repo({"app/keys.py": source, "app/other.py": "def other():\n    return 1\n"})
    first = VectorIndexer(layout, settings).run()
    conn = sqlite3.connect(layout.index_db)
    current = conn.execute(
        "SELECT chunk_id, start_line, end_line FROM text_chunks ORDER BY chunk_id"
    ).fetchall()
    assert ("app/keys.py", 4, 4) in conn.execute(
        "SELECT file, start_line, end_line FROM text_chunks"
    ).fetchall()
    # What an earlier semfora left: one module chunk over the imports and the comment, no version.
    conn.execute("DELETE FROM text_chunks WHERE file = 'app/keys.py' AND kind = 'module'")
    conn.execute(
        "INSERT INTO text_chunks (chunk_id, file, start_line, end_line, kind, language, content_hash, "
        "text_hash, symbol_id, qualified_name, name, part) "
        "VALUES ('old-module', 'app/keys.py', 1, 4, 'module', 'python', 'x', 0, NULL, NULL, 'keys', 0)"
    )
    conn.execute("DELETE FROM text_meta WHERE key = 'chunking_version'")
    conn.commit()

    heard = []
    report = index_repository(layout, settings, on_warning=heard.append)  # no file changed
    assert (
        conn.execute("SELECT chunk_id, start_line, end_line FROM text_chunks ORDER BY chunk_id").fetchall()
        == current
    )
    # The user is told why a run with nothing changed took a while, once, and the report says it too.
    assert [w.code for w in heard] == ["TEXT_INDEX_RECHUNKED"]
    assert f"chunking version 1 -> {CHUNKING_VERSION}" in heard[0].message
    assert [w["code"] for w in report.to_json()["warnings"]] == ["TEXT_INDEX_RECHUNKED"]
    assert report.text_index.rechunked
    heard.clear()
    assert not index_repository(layout, settings, on_warning=heard.append).text_index.rechunked
    assert heard == []
    conn.close()
    again = VectorIndexer(layout, settings).run()
    assert again.embedded == 0 < first.embedded  # every chunk id and text is one it embedded before
    hits = search(layout, settings, "signing material grace period", mode="fts")
    assert hits[0].symbol == "rotate"
