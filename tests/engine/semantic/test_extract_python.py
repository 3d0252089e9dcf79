"""Python extraction: the symbol fields a user sees, bad input, stable ids, complexity."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.semantic.extract import analyze_source, symbol_at

SOURCE = b'''
import subprocess
import requests


class Client:
    """HTTP client for the API.

    Longer text."""

    @staticmethod
    @cache(ttl=3)
    def build(url, *, retries=2):
        return Client()

    async def get(self, path):
        try:
            return await self.session.get(path)
        except OSError:
            return None

    def _private(self):
        pass


def classify(n, items):
    if n > 10 and items:
        for item in items:
            if item:
                while n:
                    n -= 1
    elif n < 0 or not items:
        return "neg"
    else:
        return "x" if n else "y"


def deploy():
    subprocess.run(["make"])
    requests.post("http://x")
'''


def test_python_symbol_fields() -> None:
    analysis = analyze_source("pkg/client.py", SOURCE)
    client = symbol_at(analysis, "Client")
    assert client is not None
    assert client.kind == "class"
    assert client.doc == "HTTP client for the API."
    assert client.signature == "class Client"
    build = symbol_at(analysis, "Client.build")
    assert build is not None
    assert build.kind == "method" and build.parent == "Client"
    assert build.decorators == ("staticmethod", "cache")
    assert build.arity == 2
    assert build.start_line == 11  # decorators belong to the symbol's lines
    assert build.signature == "def build(url, *, retries=2)"
    get = symbol_at(analysis, "Client.get")
    assert get is not None
    assert get.is_async and get.arity == 1
    (call,) = get.calls
    assert (call.receiver, call.name, call.awaited, call.in_try) == ("self.session", "get", True, True)
    assert symbol_at(analysis, "Client._private").exported is False
    assert symbol_at(analysis, "Client.get").exported is True


def test_complexity_numbers_for_a_known_function() -> None:
    analysis = analyze_source("x.py", SOURCE)
    classify = symbol_at(analysis, "classify")
    assert classify is not None
    # if, and, for, if, while, elif, or, conditional expression
    assert classify.control_flow == 8
    # if > for > if > while
    assert classify.max_nesting == 4
    assert classify.risk.level == "medium"
    assert classify.risk.reasons == ("complexity: 8 branches, nesting 4",)


def test_risk_reasons_for_subprocess_and_network() -> None:
    deploy = symbol_at(analyze_source("x.py", SOURCE), "deploy")
    assert deploy is not None
    assert deploy.risk.level == "high"
    assert deploy.risk.reasons == ("subprocess: subprocess.run", "network: requests.post")


def test_aliased_imports_resolve_for_risk() -> None:
    source = b"import subprocess as sp\nfrom os import system\ndef a():\n    sp.call('x')\ndef b():\n    system('y')\ndef c():\n    eval('1')\n"
    analysis = analyze_source("x.py", source)
    assert symbol_at(analysis, "a").risk.reasons == ("subprocess: subprocess.call",)
    assert symbol_at(analysis, "b").risk.reasons == ("subprocess: os.system",)
    assert symbol_at(analysis, "c").risk.level == "high"


def test_invalid_utf8_is_replaced_not_raised() -> None:
    source = b"def caf\xe9():\n    '''Bad \xff doc.'''\n    return 1\n"
    analysis = analyze_source("bad.py", source)
    (symbol,) = analysis.symbols
    assert symbol.name.startswith("caf")  # tree-sitter stops the identifier at the bad byte
    assert symbol.doc == "Bad \ufffd doc."


def test_syntax_errors_still_extract_what_parses() -> None:
    source = b"def good(a):\n    return a\n\ndef broken(:\n    pass\n\nclass Later:\n    def m(self):\n        return 1\n"
    analysis = analyze_source("broken.py", source)
    names = [s.qualified_name for s in analysis.symbols]
    assert "good" in names and "Later" in names and "Later.m" in names
    assert analysis.syntax_errors >= 1


def test_unknown_language_has_no_symbols() -> None:
    analysis = analyze_source("notes.xyz", b"def f(): pass")
    assert analysis.symbols == ()
    assert analysis.language == "unknown"
    assert analysis.line_count == 1


def test_ids_stable_when_unrelated_code_above_changes() -> None:
    base = b"def target(a, b):\n    return a + b\n"
    before = analyze_source("m.py", b"def other():\n    return 1\n\n" + base)
    after = analyze_source("m.py", b"def other():\n    x = 1\n    y = 2\n    return x + y\n\n\n" + base)
    old, new = symbol_at(before, "target"), symbol_at(after, "target")
    assert old is not None and new is not None
    assert new.start_line > old.start_line
    assert new.id == old.id and new.body_hash == old.body_hash
    # The edited function keeps its id but its body hash changes.
    assert symbol_at(before, "other").id == symbol_at(after, "other").id
    assert symbol_at(before, "other").body_hash != symbol_at(after, "other").body_hash


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=400))
def test_never_raises_on_arbitrary_bytes(data: bytes) -> None:
    analysis = analyze_source("fuzz.py", b"def f():\n    pass\n" + data)
    for symbol in analysis.symbols:
        assert symbol.start_line <= symbol.end_line


def test_shebang_detects_language() -> None:
    analysis = analyze_source("bin/tool", b"#!/usr/bin/env python3\ndef main():\n    pass\n")
    assert analysis.language == "python"
    assert [s.name for s in analysis.symbols] == ["main"]


def test_huge_source_is_counted_not_parsed() -> None:
    from engine.semantic.extract import MAX_SOURCE_BYTES

    line = b"def f():\n    return 1\n"
    source = line * (MAX_SOURCE_BYTES // len(line) + 1)
    analysis = analyze_source("huge.py", source)
    assert analysis.symbols == ()
    assert analysis.language == "python"
    assert analysis.line_count == source.count(b"\n")


CALL_SHAPES = b"""
def shapes(x):
    foo(1)
    a.b.c(2)
    x.y().z()
    1..real()
    obj . attr()
    obj.  # note
    other()
    "".join(x)
    (x)()
    f()()
    d[0].g()
    await q.r()
    o\xc3\xa9.m()
    open(x, "w")
    VERY_LONG_NAME_ONE.VERY_LONG_NAME_TWO.VERY_LONG_NAME_THREE.VERY_LONG_NAME_FOUR.VERY_LONG_NAME_FIVE.done()
"""


def test_call_names_and_receivers_for_each_callee_shape() -> None:
    """Names and receivers a user sees in ``semfora callers``, for every Python callee shape."""
    shapes = symbol_at(analyze_source("shapes.py", CALL_SHAPES), "shapes")
    assert shapes is not None
    got = [(c.name, c.receiver, c.line, c.awaited) for c in shapes.calls]
    assert got == [
        ("foo", None, 3, False),
        ("c", "a.b", 4, False),
        ("z", "x.y()", 5, False),
        ("y", "x", 5, False),
        ("real", "1.", 6, False),
        ("attr", "obj", 7, False),
        ("other", "obj", 8, False),
        ("join", '""', 10, False),
        ("f", None, 12, False),  # (x)() and the outer call of f()() name nothing callable
        ("g", "d[0]", 13, False),
        ("r", "q", 14, True),
        ("m", "o\u00e9", 15, False),
        ("open", None, 16, False),
        ("done", None, 17, False),  # a receiver over 80 bytes is an expression, not a name
    ]
    assert shapes.risk.reasons == ("filesystem-write: open(mode='w')",)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,30}", fullmatch=True).filter(
            lambda w: (
                w not in {"None", "True", "False", "await", "lambda", "not"}
                and not __import__("keyword").iskeyword(w)
            )
        ),
        min_size=1,
        max_size=6,
    )
)
def test_dotted_callee_splits_at_its_last_dot(parts: list[str]) -> None:
    dotted = ".".join(parts)
    fn = symbol_at(analyze_source("d.py", f"def fn():\n    {dotted}(1)\n".encode()), "fn")
    assert fn is not None
    (call,) = fn.calls
    receiver = ".".join(parts[:-1]) or None
    assert (call.name, call.receiver) == (parts[-1], receiver if receiver and len(receiver) <= 80 else None)


HEADERS = b'''
class Shapes:
    def plain(self, a, b=1/2):
        pass

    def slashed(self, a, /, b, *, c):
        pass

    def commented(
        self,  # why
        a,  # the first
    ) -> int:  # after the colon
        return a

    def hashed(self, a="#", *args, **kw) -> "Dict[str, int]":
        pass

    @classmethod
    def make(cls, x):
        pass

    def continued(self, a) \\
            -> int:
        pass

    def caf\xc3\xa9(self):  \xe2\x80\x8b
        pass

    def lonely(
        self,
    ):
        """Doc # not a comment."""


def free(self, other):
    pass
'''


def test_signature_and_arity_for_each_header_shape() -> None:
    """What ``semfora symbols`` shows for headers with and without comments, ``*``, ``/``, self."""
    analysis = analyze_source("shapes.py", HEADERS)
    got = {s.qualified_name: (s.signature, s.arity) for s in analysis.symbols}
    assert got == {
        "Shapes": ("class Shapes", 0),
        "Shapes.plain": ("def plain(self, a, b=1/2)", 2),
        "Shapes.slashed": ("def slashed(self, a, /, b, *, c)", 3),
        "Shapes.commented": ("def commented( self, a, ) -> int", 1),
        "Shapes.hashed": ('def hashed(self, a="#", *args, **kw) -> "Dict[str, int]"', 3),
        "Shapes.make": ("def make(cls, x)", 1),
        "Shapes.continued": ("def continued(self, a) \\ -> int", 1),
        "Shapes.caf\u00e9": ("def caf\u00e9(self)", 0),
        "Shapes.lonely": ("def lonely( self, )", 0),
        "free": ("def free(self, other)", 2),  # a function's first parameter is never a receiver
    }


def test_extracted_symbols_are_whole_symbols() -> None:
    """Extraction fills every field of each Symbol (it builds them without ``__init__``)."""
    import pickle
    from dataclasses import fields, replace

    from engine.semantic.model import Symbol

    names = [f.name for f in fields(Symbol)]
    for symbol in analyze_source("pkg/client.py", SOURCE).symbols:
        assert list(vars(symbol)) == names
        assert symbol == Symbol(**vars(symbol)) and hash(symbol) == hash(Symbol(**vars(symbol)))
        assert pickle.loads(pickle.dumps(symbol)) == symbol
        assert replace(symbol, doc="x").doc == "x"
