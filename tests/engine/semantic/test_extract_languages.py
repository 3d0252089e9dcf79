"""Every full language's fixture yields exactly the expected symbols, calls and imports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.semantic.extract import analyze_source
from engine.semantic.languages import FULL_LANGUAGES

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "languages"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "expected.json").exists())


def _call(call) -> str:
    return f"{call.receiver}.{call.name}" if call.receiver else call.name


@pytest.mark.parametrize("lang", CASES)
def test_fixture_yields_exact_symbols_calls_and_imports(lang: str) -> None:
    expected = json.loads((FIXTURES / lang / "expected.json").read_text(encoding="utf-8"))
    source = (FIXTURES / lang / expected["file"]).read_bytes()
    analysis = analyze_source(expected["file"], source)

    assert analysis.language == expected["language"]
    assert analysis.syntax_errors == 0
    assert [[s.qualified_name, s.kind] for s in analysis.symbols] == expected["symbols"]
    calls = {s.qualified_name: [_call(c) for c in s.calls] for s in analysis.symbols if s.calls}
    assert calls == expected["calls"]
    assert [_call(c) for c in analysis.module_calls] == expected["module_calls"]
    assert [[i.module, list(i.names), i.alias] for i in analysis.imports] == expected["imports"]


def test_every_full_language_has_a_fixture() -> None:
    languages = set()
    for case in CASES:
        expected = json.loads((FIXTURES / case / "expected.json").read_text(encoding="utf-8"))
        languages.add(expected["language"])
    assert {info.name for info in FULL_LANGUAGES} <= languages


@pytest.mark.parametrize("lang", CASES)
def test_symbol_lines_and_ids_are_consistent(lang: str) -> None:
    expected = json.loads((FIXTURES / lang / "expected.json").read_text(encoding="utf-8"))
    source = (FIXTURES / lang / expected["file"]).read_bytes()
    analysis = analyze_source(expected["file"], source)
    lines = source.decode().count("\n") + 1
    for symbol in analysis.symbols:
        assert 1 <= symbol.start_line <= symbol.end_line <= lines
        assert symbol.signature and "\n" not in symbol.signature
        assert len(symbol.body_hash) == 64
    assert len({s.id for s in analysis.symbols}) == len(analysis.symbols)


@settings(max_examples=25, deadline=None)
@given(data=st.data())
@pytest.mark.parametrize("lang", CASES)
def test_mutated_fixtures_never_raise(lang: str, data: st.DataObject) -> None:
    expected = json.loads((FIXTURES / lang / "expected.json").read_text(encoding="utf-8"))
    source = (FIXTURES / lang / expected["file"]).read_bytes()
    cut = data.draw(st.integers(0, len(source)))
    junk = data.draw(st.binary(max_size=40) | st.sampled_from([b"\xff\xfe", b"{{{", b"'''", b"\x00", b"((("]))
    mutated = source[:cut] + junk + source[cut + data.draw(st.integers(0, 30)) :]
    analysis = analyze_source(expected["file"], mutated)
    assert analysis.language == expected["language"]
    for symbol in analysis.symbols:
        assert 1 <= symbol.start_line <= symbol.end_line


def test_deeply_nested_input_does_not_raise() -> None:
    depth = 3000
    source = b"module.exports = " + b"{a: " * depth + b"function(){}" + b"}" * depth
    analysis = analyze_source("deep.js", source)
    assert analysis.line_count == 1
    rust = b"use a::" + b"{b::" * 500 + b"c" + b"}" * 500 + b";\nfn main() {}\n"
    assert [s.name for s in analyze_source("deep.rs", rust).symbols] == ["main"]


@pytest.mark.parametrize(
    ("path", "source", "qualified"),
    [
        ("a.py", b"async def f(c):\n    await c.get()\n", "f"),
        ("a.js", b"async function f(c) { await c.get(); }", "f"),
        ("a.ts", b"async function f(c: C) { await c.get(); }", "f"),
        ("a.rs", b"async fn f(c: C) { c.get().await; }", "f"),
        ("A.cs", b"class A { async Task F(C c) { await c.Get(); } }", "A.F"),
        ("a.swift", b"func f(c: C) async { await c.get() }", "f"),
    ],
)
def test_awaited_calls_are_marked(path: str, source: bytes, qualified: str) -> None:
    analysis = analyze_source(path, source)
    (symbol,) = [s for s in analysis.symbols if s.qualified_name == qualified]
    assert [(c.name.lower(), c.awaited) for c in symbol.calls] == [("get", True)]


def test_functions_nested_in_functions_are_not_exported() -> None:
    analysis = analyze_source("n.py", b"def outer():\n    def inner():\n        pass\n    return inner\n")
    exported = {s.qualified_name: s.exported for s in analysis.symbols}
    assert exported == {"outer": True, "outer.inner": False}


@pytest.mark.parametrize(
    ("path", "source", "expected"),
    [
        (
            "a.rb",
            b"class A\n  def a; end\n  private\n  def b; end\n  public\n  def d; end\nend\n",
            {"A": True, "A.a": True, "A.b": False, "A.d": True},
        ),
        ("a.go", b"package a\nfunc Open() {}\nfunc close() {}\n", {"Open": True, "close": False}),
        ("a.rs", b"pub fn open() {}\nfn close() {}\n", {"open": True, "close": False}),
        (
            "A.java",
            b"public class A { public void a() {} void b() {} private void c() {} }",
            {"A": True, "A.a": True, "A.b": False, "A.c": False},
        ),
        (
            "A.kt",
            b"class A { fun a() {} private fun b() {} internal fun c() {} }",
            {"A": True, "A.a": True, "A.b": False, "A.c": False},
        ),
        (
            "a.php",
            b"<?php class A { function a() {} private function b() {} }",
            {"A": True, "A.a": True, "A.b": False},
        ),
        ("a.swift", b"class A { func a() {} private func b() {} }", {"A": True, "A.a": True, "A.b": False}),
        (
            "a.c",
            b"int open(void) { return 0; }\nstatic int helper(void) { return 1; }\n",
            {"open": True, "helper": False},
        ),
        (
            "a.ts",
            b"export function a() {}\nfunction b() {}\nexport class C { private d() {} e() {} }\n",
            {"a": True, "b": False, "C": True, "C.d": False, "C.e": True},
        ),
    ],
)
def test_exported_follows_each_language(path: str, source: bytes, expected: dict[str, bool]) -> None:
    analysis = analyze_source(path, source)
    assert {s.qualified_name: s.exported for s in analysis.symbols} == expected


def test_cpp_headers_with_dot_h_are_parsed_as_cpp() -> None:
    header = (
        b"#pragma once\nnamespace app {\nclass Store {\npublic:\n  int size() const { return 0; }\n};\n}\n"
    )
    analysis = analyze_source("include/store.h", header, "c")
    assert analysis.language == "cpp"
    assert [s.qualified_name for s in analysis.symbols] == ["Store", "Store.size"]
    plain = analyze_source("include/s.h", b"struct s { int a; };\nint f(void);\n")
    assert plain.language == "c"


def test_symbol_span_includes_attributes_and_decorators() -> None:
    rust = analyze_source("a.rs", b"/// Doc.\n#[derive(Debug)]\n#[serde]\npub struct S { a: i32 }\n").symbols[
        0
    ]
    assert (rust.start_line, rust.end_line, rust.doc) == (2, 4, "Doc.")
    assert rust.decorators == ("derive(Debug)", "serde")
    ts = analyze_source("a.ts", b"class A {\n  // Loads.\n  @Log()\n  load() {}\n}\n")
    load = [s for s in ts.symbols if s.name == "load"][0]
    assert (load.start_line, load.end_line, load.doc, load.decorators) == (3, 4, "Loads.", ("Log",))
    py = analyze_source("a.py", b"@app.route('/')\n@login_required\ndef index():\n    pass\n").symbols[0]
    assert (py.start_line, py.end_line, py.decorators) == (1, 4, ("app.route", "login_required"))
