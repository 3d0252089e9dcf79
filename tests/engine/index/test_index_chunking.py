"""Chunking: symbol boundaries, class headers, long-symbol splits, module leftovers, prose windows."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.index.chunking import (
    MAX_SYMBOL_LINES,
    PROSE_OVERLAP,
    PROSE_WINDOW,
    camel_case_parts,
    chunk_file,
    mixed_case_words,
    split_identifier,
)
from engine.semantic.model import Symbol


def _sym(sid: str, name: str, qn: str, kind: str, start: int, end: int, sig: str = "") -> Symbol:
    return Symbol(sid, name, qn, kind, "m.py", "python", start, end, signature=sig)


SOURCE = """import os
X = 1

class Box:
    size = 3

    def open(self):
        return True

    def close(self):
        return False

def helper():
    return os.sep
"""


def test_one_chunk_per_function_and_a_header_per_class_and_module_leftovers() -> None:
    syms = [
        _sym("c", "Box", "Box", "class", 4, 11, "class Box:"),
        _sym("o", "open", "Box.open", "method", 7, 8, "def open(self):"),
        _sym("x", "close", "Box.close", "method", 10, 11, "def close(self):"),
        _sym("h", "helper", "helper", "function", 13, 14, "def helper():"),
    ]
    chunks = chunk_file("m.py", SOURCE, syms, "python")
    by_name = {(c.kind, c.qualified_name): c for c in chunks}
    assert (by_name[("symbol", "Box.open")].start_line, by_name[("symbol", "Box.open")].end_line) == (7, 8)
    header = by_name[("header", "Box")]
    assert (header.start_line, header.end_line) == (4, 6)
    assert "def open(self):" in header.signature_doc and "def close(self):" in header.signature_doc
    module = [c for c in chunks if c.kind == "module"]
    assert module and module[0].start_line == 1 and "import os" in module[0].text
    assert all(c.language == "python" and len(c.content_hash) == 64 for c in chunks)


def test_long_symbol_is_split_with_overlap_and_ids_are_stable() -> None:
    body = "def big():\n" + "".join(f"    x{i} = {i}\n" for i in range(300))
    sym = _sym("b", "big", "big", "function", 1, 301)
    chunks = chunk_file("m.py", body, [sym], "python")
    assert len(chunks) >= 3
    assert all(c.end_line - c.start_line + 1 <= MAX_SYMBOL_LINES for c in chunks)
    assert chunks[1].start_line <= chunks[0].end_line  # overlap
    assert chunks[-1].end_line == 301
    again = chunk_file("m.py", body.replace("x5 = 5", "x5 = 6"), [sym], "python")
    assert [c.id for c in again] == [c.id for c in chunks]
    assert again[0].content_hash != chunks[0].content_hash
    assert again[-1].content_hash == chunks[-1].content_hash


def test_prose_is_windowed_200_by_50() -> None:
    text = "".join(f"line {i}\n" for i in range(1, 501))
    chunks = chunk_file("docs/guide.md", text)
    spans = [(c.start_line, c.end_line) for c in chunks]
    step = PROSE_WINDOW - PROSE_OVERLAP
    assert spans[0] == (1, PROSE_WINDOW)
    assert spans[1] == (1 + step, step + PROSE_WINDOW)
    assert spans[-1][1] == 500
    assert {c.kind for c in chunks} == {"prose"} and chunks[0].language == "markdown"


def test_identifier_splitting() -> None:
    assert split_identifier("getUserById") == ["get", "user", "by", "id"]
    assert split_identifier("should_strip_auth") == ["should", "strip", "auth"]
    assert split_identifier("kebab-case-name") == ["kebab", "case", "name"]
    assert split_identifier("HTTPServer") == ["http", "server"]
    assert camel_case_parts("x = getUserById(a) should_strip_auth") == "by get id user"


_IDENT = st.sampled_from(
    [
        "getUserById",
        "HTTPServer",
        "HttpResponse",
        "HttpResponseRedirect",
        "x",
        "url_for",
        "X9Y",
        "9getX",
        "aB1",
    ]
)
_LINE = st.lists(st.one_of(_IDENT, st.sampled_from([" ", "(", ".", "=", "# note"])), max_size=8).map("".join)
_BREAK = st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x1c", "\x85", "\u2028"])


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(st.tuples(_LINE, _BREAK), min_size=1, max_size=30),
    span=st.tuples(st.integers(1, 30), st.integers(0, 12)),
    last=_LINE,
)
@example(lines=[("x = getUserById(a)", "\r\n")] * 6 + [("HttpResponse", "\r\n")], span=(2, 3), last="aB")
def test_a_chunks_identifier_parts_are_those_of_its_own_text(lines, span, last) -> None:
    # Each chunk's parts come from a per-file index of words by line; they must equal the parts
    # of the words of the chunk's own text, whatever the line breaks (the index finds where lines
    # end one way with a "\r\n" in the file and another without), and with or without a last
    # line that no break ends.
    text = "".join(line + brk for line, brk in lines) + last
    start, length = span
    chunks = chunk_file("m.py", text, [_sym("f", "f", "f", "function", start, start + length)], "python")
    mixed = mixed_case_words(text)
    for chunk in chunks:
        assert chunk.parts == camel_case_parts(chunk.text) == camel_case_parts(chunk.text, mixed)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aAbZ09_ .\n\rxHTTPServergetUserById", max_size=60))
def test_mixed_case_words_are_the_words_with_a_case_change_inside(text: str) -> None:
    import re

    # The plain definition the indexed regular expression is a faster spelling of.
    words = set(re.findall(r"[A-Za-z][A-Za-z0-9]*", text))
    plain = {
        w
        for w in words
        if not w.islower() and not w.isupper() and re.search(r"[a-z0-9][A-Z]|[A-Z]{2}[a-z]", w)
    }
    assert mixed_case_words(text) == plain


def test_no_secret_in_a_signature_or_docstring_reaches_index_db(make_repo) -> None:
    # A signature's default and a docstring are cut from the parse, not from the redacted text:
    # they must be redacted too before the text index stores them (FTS sigdoc column).
    import sqlite3

    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.repo.layout import RepoLayout

    src = (
        "class Db:\n"
        '    """Connect with DB_PASSWORD=hunter22secret."""\n\n'
        '    def connect(self, password="hunter22pw"):\n'
        '        """Or pass token: \'abcd1234efgh\' through."""\n'
        "        return password\n"
    )
    root = make_repo({"db.py": src})
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(root).settings)
    with sqlite3.connect(layout.index_db) as conn:
        # text_fts is contentless: what it holds is the words a query can match.
        def matches(term: str) -> int:
            return conn.execute("SELECT count(*) FROM text_fts WHERE text_fts MATCH ?", (term,)).fetchone()[0]

        assert matches("sigdoc: connect") >= 1  # the column is filled, minus the secrets
        symbols = " ".join(map(str, conn.execute("SELECT * FROM symbols").fetchall()))
        for secret in ("hunter22secret", "hunter22pw", "abcd1234efgh"):
            assert matches(secret) == 0, secret
            assert secret not in symbols, secret


def test_chunks_are_whole_chunks() -> None:
    """Chunking fills every field of each Chunk (it builds them without ``__init__``)."""
    from dataclasses import fields, replace

    from engine.index.chunking import Chunk

    names = [f.name for f in fields(Chunk)]
    symbols = [_sym("s1", "Box", "Box", "class", 4, 12), _sym("s2", "open", "Box.open", "method", 7, 8)]
    chunks = chunk_file("m.py", SOURCE, symbols, "python") + chunk_file("README.md", "# Title\n\ntext\n")
    assert {c.kind for c in chunks} >= {"header", "symbol", "module", "prose"}
    for chunk in chunks:
        assert list(vars(chunk)) == names
        assert chunk == Chunk(**vars(chunk)) and hash(chunk) == hash(Chunk(**vars(chunk)))
        assert replace(chunk, text="x").text == "x"
