"""A definition's leading comment answers for the definition, in the full-text and the vector lists.

The comment above a ``def``/``func`` lies outside the symbol's span, so it is indexed as a ``module``
chunk of its own; a query in the comment's words used to get that comment back instead of the code.
"""

from __future__ import annotations

import pytest

from engine.index.hybrid import _is_comment_block, search
from engine.index.vectors import VectorIndexer

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
    assert _is_comment_block(text) is is_comment
