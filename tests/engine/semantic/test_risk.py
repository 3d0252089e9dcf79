"""Risk scoring: categories, levels, alias resolution and the generated documentation."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from engine.semantic.extract import analyze_source, symbol_at
from engine.semantic.model import CallSite, ImportRef
from engine.semantic.risk import (
    HIGH_BRANCHES,
    MODERATE_BRANCHES,
    RULES_BY_LANGUAGE,
    assess,
    classify_call,
    import_aliases,
    render_risk_doc,
)

DOC = Path(__file__).resolve().parents[3] / "docs" / "risk.md"


def test_docs_risk_md_matches_the_tables() -> None:
    # The security-logic catalogue follows the tables (engine.review.concerns.render_risk_page).
    assert DOC.read_text(encoding="utf-8").startswith(render_risk_doc().rstrip("\n")), (
        "regenerate docs/risk.md with engine.review.concerns.render_risk_page()"
    )


def test_levels_from_categories_and_complexity() -> None:
    none: dict[str, str] = {}
    assert assess("python", [CallSite("print")], none).level == "low"
    one = assess("python", [CallSite("get", "requests")], none)
    assert (one.level, one.reasons) == ("medium", ("network: requests.get",))
    two = assess("python", [CallSite("get", "requests"), CallSite("execute", "cursor")], none)
    assert two.level == "high"
    assert two.reasons == ("network: requests.get", "database: cursor.execute")
    assert assess("python", [CallSite("system", "os")], none).level == "high"
    assert assess("python", [], none, control_flow=MODERATE_BRANCHES).level == "medium"
    assert assess("python", [], none, control_flow=HIGH_BRANCHES).level == "high"
    assert assess("python", [], none, max_nesting=6).reasons == ("complexity: 0 branches, nesting 6",)


def test_aliases_from_imports() -> None:
    aliases = import_aliases(
        [
            ImportRef("subprocess", (), "sp"),
            ImportRef("os", ("system",)),
            ImportRef("child_process", ("exec",)),
            ImportRef("net/http"),
            ImportRef("node:fs", (), "fs"),
        ]
    )
    assert aliases["sp"] == "subprocess"
    assert aliases["system"] == "os.system"
    assert aliases["exec"] == "child_process.exec"
    assert aliases["http"] == "net.http"
    assert aliases["fs"] == "fs"
    js = RULES_BY_LANGUAGE["javascript"]
    assert classify_call(js, CallSite("writeFileSync", "fs"), aliases) == (
        "filesystem-write",
        "fs.writeFileSync",
    )
    assert classify_call(js, CallSite("exec"), aliases) == ("subprocess", "child_process.exec")


def test_python_open_mode_and_global_statement() -> None:
    source = b"""
COUNTER = 0
def save(p, data):
    with open(p, "w") as fh:
        fh.write(data)
def load(p):
    return open(p).read()
def bump():
    global COUNTER
    COUNTER += 1
"""
    analysis = analyze_source("io.py", source)
    assert symbol_at(analysis, "save").risk.reasons == ("filesystem-write: open(mode='w')",)
    assert symbol_at(analysis, "load").risk.level == "low"
    assert symbol_at(analysis, "bump").risk.reasons == ("global-state: global COUNTER",)


def test_js_global_mutation_and_env() -> None:
    source = b"function setup() { window.app = {}; process.env.MODE = 'x'; this.local = 1; }\n"
    setup = analyze_source("s.js", source).symbols[0]
    assert setup.risk.reasons == ("global-state: window.app, process.env.MODE",)


def test_other_languages_flag_their_dangerous_calls() -> None:
    cases = {
        "a.go": (
            b'package a\nimport "os/exec"\nfunc Run() { exec.Command("ls").Run() }\n',
            "Run",
            "subprocess",
        ),
        "a.rs": (b'use std::process::Command;\nfn run() { Command::new("ls"); }\n', "run", "subprocess"),
        "A.java": (
            b'class A { void f() throws Exception { Runtime.getRuntime().exec("ls"); } }',
            "A.f",
            "subprocess",
        ),
        "a.rb": (b"def run(cmd)\n  system(cmd)\nend\n", "run", "subprocess"),
        "a.php": (b"<?php function run($c) { shell_exec($c); }", "run", "subprocess"),
        "a.sh": (b"deploy() {\n  curl -X POST http://x\n}\n", "deploy", "network"),
        "a.c": (b"void run(const char *c) { system(c); }\n", "run", "subprocess"),
        "A.cs": (b'class A { void F() { Process.Start("ls"); } }', "A.F", "subprocess"),
    }
    for path, (source, name, category) in cases.items():
        symbol = symbol_at(analyze_source(path, source), name)
        assert symbol is not None, path
        assert symbol.risk.reasons and symbol.risk.reasons[0].startswith(category + ":"), (path, symbol.risk)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["os", "requests", "self", "x", None]),
            st.sampled_from(["system", "get", "run", "execute", "foo"]),
        ),
        max_size=12,
    ),
    st.integers(0, 40),
    st.integers(0, 9),
)
def test_level_is_monotonic_in_added_calls(pairs, branches, nesting) -> None:
    order = {"low": 0, "medium": 1, "high": 2}
    calls = [CallSite(name, receiver) for receiver, name in pairs]
    base = assess("python", calls, {}, control_flow=branches, max_nesting=nesting)
    more = assess(
        "python", [*calls, CallSite("system", "os")], {}, control_flow=branches, max_nesting=nesting
    )
    assert order[more.level] >= order[base.level]
    assert more.level == "high"


def test_python_environment_and_sys_mutation() -> None:
    source = b"""import os, sys
def a():
    os.environ["X"] = "1"
def b():
    sys.path.append("x")
def c(self):
    self.x = 1
"""
    analysis = analyze_source("env.py", source)
    assert symbol_at(analysis, "a").risk.reasons == ('global-state: os.environ["X"]',)
    assert symbol_at(analysis, "b").risk.reasons == ("global-state: sys.path.append",)
    assert symbol_at(analysis, "c").risk.level == "low"
