"""FTS5: hostile queries are text, identifier parts match, weights order name above body."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.index import fts
from engine.index.chunking import chunk_file
from engine.semantic.model import Symbol

SRC = '''def should_strip_auth(request):
    """Drop the Authorization header for foreign hosts."""
    return request.host != "example.com"


def getUserById(uid):
    return cache.lookup(uid)


def render(template):
    # calls should_strip_auth indirectly through the middleware chain
    return template.format()
'''


def _symbols() -> list[Symbol]:
    return [
        Symbol(
            "s1",
            "should_strip_auth",
            "should_strip_auth",
            "function",
            "a.py",
            "python",
            1,
            3,
            "def should_strip_auth(request):",
            "Drop the Authorization header for foreign hosts.",
        ),
        Symbol(
            "s2", "getUserById", "getUserById", "function", "a.py", "python", 6, 7, "def getUserById(uid):"
        ),
        Symbol("s3", "render", "render", "function", "a.py", "python", 10, 12, "def render(template):"),
    ]


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory):
    db = fts.connect(Path(tmp_path_factory.mktemp("fts")) / "index.db")
    chunks = chunk_file("a.py", SRC, _symbols(), "python")
    # Padding chunks so BM25 has realistic document frequencies.
    for i in range(20):
        chunks += chunk_file(f"pad/p{i}.py", f"value = {i}\nother_thing = compute({i})\n", [], "python")
    fts.insert_chunks(db, chunks)
    db.commit()
    fts.optimize(db)
    yield db
    db.close()


def _names(conn, query: str) -> list[str | None]:
    return [row.qualified_name for row, _ in fts.search(conn, query)]


def test_words_find_snake_and_camel_identifiers(conn) -> None:
    assert _names(conn, "should strip auth")[0] == "should_strip_auth"
    assert _names(conn, "user by id")[0] == "getUserById"
    assert _names(conn, "getUserById")[0] == "getUserById"


def test_name_hit_outranks_body_mention(conn) -> None:
    # render() mentions should_strip_auth in a comment; the definition itself must come first.
    names = _names(conn, "should_strip_auth")
    assert names[0] == "should_strip_auth" and "render" in names


def test_common_terms_are_dropped_from_multi_term_queries(conn) -> None:
    stats = fts.TermStats()
    terms = fts.query_terms("value user")
    kept = fts.informative_terms(conn, terms, stats)
    assert kept == ["user"]  # "value" is in most chunks
    assert fts.informative_terms(conn, ["value"], stats) == ["value"]


HOSTILE = [
    "foo(",
    "AND",
    "OR",
    "NOT",
    '"',
    '""',
    "*",
    "NEAR",
    "NEAR(a b)",
    "a:b",
    "{name}: x",
    "^x",
    "-x",
    "'",
    "()",
    "",
    "   ",
    "ünïcödé 漢字",
    "\x00",
    "col:*",
    "AND OR NOT",
    'x"y',
    "+",
    "a NEAR/2 b",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_known_hostile_queries_are_searched_as_text(conn, query: str) -> None:
    assert isinstance(fts.search(conn, query), list)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40)
    | st.lists(
        st.sampled_from(
            [
                '"',
                "*",
                "(",
                ")",
                "AND",
                "OR",
                "NOT",
                "NEAR",
                ":",
                "^",
                "-",
                "+",
                "{",
                "}",
                "auth",
                "user",
                " ",
            ]
        ),
        max_size=12,
    ).map("".join)
)
def test_any_query_never_raises(conn, query: str) -> None:
    results = fts.search(conn, query)
    assert all(row.file for row, _ in results)


def test_match_expression_quotes_every_term() -> None:
    expr = fts.match_expression(fts.query_terms('foo( AND "bar" NEAR*'))
    assert expr == '"foo" OR "bar" OR "near"'


def test_a_word_in_a_fifth_of_the_chunks_still_counts(tmp_path) -> None:
    # "object" is in 2 of 10 chunks: frequent in code, but the point of "return the object".
    # Only words in most chunks (like "value" above) are dropped.
    db = fts.connect(tmp_path / "index.db")
    chunks = []
    for i in range(10):
        word = "object" if i < 2 else "x"
        text = f"def f{i}(x):\n    return {word} + ledger{i}\n"
        sym = Symbol(f"f{i}", f"f{i}", f"f{i}", "function", f"m{i}.py", "python", 1, 2, f"def f{i}(x):")
        chunks += chunk_file(f"m{i}.py", text, [sym], "python")
    assert len(chunks) == 10
    fts.insert_chunks(db, chunks)
    db.commit()
    stats = fts.TermStats()
    assert fts.informative_terms(db, ["object", "ledger3"], stats) == ["object", "ledger3"]
    assert {row.qualified_name for row, _ in fts.search(db, "object ledger3")} == {"f0", "f1", "f3"}
    db.close()
