"""The words of a query as full-text search reads them: accented words, words found nowhere."""

from __future__ import annotations

from engine.index.hybrid import search

GRID_PY = (
    'def grid(h, w):\n    """Cells of an h by w grid."""\n'
    "    return [[(y, x) for x in range(w)] for y in range(h)]\n\n\n"
    "def area(h, w):\n    return h * w\n"
)
GREET_PY = 'def greet():\n    """Say héllo to the wörld, créer un compte."""\n    return 1\n'


def test_a_word_with_an_accent_finds_only_the_code_that_says_it(indexed_repo) -> None:
    """`semfora search "héllo wörld"` listed every function with a parameter h or w: the words
    were cut into h, llo, w and rld."""
    filler = {f"m{i}.py": f"def f{i}(value):\n    return value + {i}\n" for i in range(8)}
    layout, settings = indexed_repo({"greet.py": GREET_PY, "grid.py": GRID_PY, **filler})
    for query in ("héllo wörld", "créer"):
        hits = search(layout, settings, query, mode="fts", limit=5, record_metrics=False)
        assert [h.symbol for h in hits] == ["greet"], query


def test_a_word_found_nowhere_does_not_hide_the_words_that_are_found(indexed_repo) -> None:
    """In a small repository every word that occurs is in a third of the chunks, so only the
    misspelt word was searched for, and `semfora search "greet xyzzy"` found nothing."""
    layout, settings = indexed_repo({"greet.py": GREET_PY, "grid.py": GRID_PY})
    hits = search(layout, settings, "greet xyzzy", mode="fts", limit=3, record_metrics=False)
    assert [h.symbol for h in hits][:1] == ["greet"]
