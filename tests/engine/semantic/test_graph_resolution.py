"""Call edges resolve in order (same file, import, unique, ranked), the rest is external with a package."""

from __future__ import annotations

from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from engine.config import load_settings
from engine.index.indexer import index_repository
from engine.repo.layout import RepoLayout
from engine.semantic.graph import (
    COMMON_METHOD_NAMES,
    CallResolver,
    CallRow,
    Definition,
    FileContext,
    ModuleIndex,
    names_type,
)
from engine.semantic.model import ImportRef
from engine.store.db import SymbolStore

FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": (
        "import os\n"
        "import requests\n"
        "from pkg.helpers import shared, only_here\n"
        "from . import siblings\n\n"
        "def shared():\n    return 1\n\n"
        "def run():\n"
        "    shared()\n"
        "    only_here()\n"
        "    siblings.sib()\n"
        "    unique_elsewhere()\n"
        "    os.path.join('a', 'b')\n"
        "    requests.get('http://x')\n"
        "    len([])\n"
        "    common()\n\n"
        "class Box:\n"
        "    def open(self):\n"
        "        return self.close()\n\n"
        "    def close(self):\n"
        "        return 0\n"
    ),
    "pkg/helpers.py": "def shared():\n    return 2\n\ndef only_here():\n    return 3\n",
    "pkg/siblings.py": "def sib():\n    return 4\n",
    "pkg/common.py": "def common():\n    return 5\n",
    "other/common.py": "def common():\n    return 6\n",
    "lonely/far.py": "def unique_elsewhere():\n    return 7\n",
    "web/app.js": (
        "const express = require('express');\n"
        "const util = require('./util');\n"
        "function start() {\n  util.helper();\n  express();\n  local();\n}\n"
        "function local() { return 1; }\n"
        "module.exports = start;\n"
    ),
    "web/util.js": "function helper() { return 2; }\nexports.helper = helper;\n",
}


def _callees(store: SymbolStore, qualified: str) -> dict[str, tuple[str, str, str | None]]:
    sym = store.symbols_by_name(qualified)[0]
    out = {}
    for n in store.callees(sym.id):
        out[n.name.split(".")[-1]] = (n.via, n.file, n.package)
    return out


def test_resolution_order_on_a_real_repository(make_repo) -> None:
    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    with SymbolStore(layout) as store:
        run = _callees(store, "run")
        assert run["shared"][:2] == ("same_file", "pkg/core.py")  # same file beats the import
        assert run["only_here"][:2] == ("import", "pkg/helpers.py")
        assert run["sib"][:2] == ("import", "pkg/siblings.py")  # relative `from . import siblings`
        assert run["unique_elsewhere"][:2] == ("unique", "lonely/far.py")
        assert run["common"][:2] == ("ranked", "pkg/common.py")  # nearer than other/common.py
        assert run["join"] == ("external", "", "os")
        assert run["get"] == ("external", "", "requests")
        assert run["len"] == ("external", "", "builtins")
        box = _callees(store, "Box.open")
        assert box["close"][:2] == ("same_file", "pkg/core.py")
        start = _callees(store, "start")
        assert start["helper"][:2] == ("import", "web/util.js")
        assert start["local"][:2] == ("same_file", "web/app.js")
        assert start["express"][0] == "external" and start["express"][2] == "express"
        assert set(store.imports_of("pkg/core.py")) == {"pkg/helpers.py", "pkg/siblings.py"}
        assert store.imports_of("web/app.js") == ["web/util.js"]
        assert ("web", "web", 1) not in store.module_graph()


def test_a_call_without_receiver_never_lands_on_a_method_where_the_language_needs_one(make_repo) -> None:
    """Django's ``AbstractBaseUser.check_password`` calls the imported ``check_password``."""
    root = make_repo(
        {
            "auth/hashers.py": "def check_password(raw, encoded):\n    return raw == encoded\n",
            "auth/base.py": (
                "from auth.hashers import check_password\n\n"
                "class User:\n"
                "    def check_password(self, raw):\n"
                "        return check_password(raw, self.password)\n\n"
                "    def set_password(self, raw):\n"
                "        self.check_password(raw)\n"
            ),
            "Shop.java": (
                "class Shop {\n    int total() { return price() * 2; }\n    int price() { return 3; }\n}\n"
            ),
        }
    )
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    with SymbolStore(layout) as store:
        inner = _callees(store, "User.check_password")
        assert inner["check_password"][:2] == ("import", "auth/hashers.py")
        outer = _callees(store, "User.set_password")
        assert outer["check_password"][:2] == ("same_file", "auth/base.py")  # self.check_password
        # Java reaches a sibling method without `this.`: still resolved in the same file.
        assert _callees(store, "Shop.total")["price"][:2] == ("same_file", "Shop.java")


def test_a_namespace_function_is_a_function_and_its_bare_callers_are_found(make_repo) -> None:
    """A TypeScript namespace's (a Rust ``mod``'s) functions were extracted as methods, so
    `semfora callers` found no caller that calls one without a receiver, as its siblings do."""
    root = make_repo(
        {
            "util.ts": (
                "export namespace Text {\n"
                "  export function lineNumber(text: string): number { return parseInt(text, 10); }\n"
                "  export function describe(text: string): string { return 'line ' + lineNumber(text); }\n"
                "}\n"
            ),
            "lib.rs": "mod inner {\n    pub fn helper() -> u8 { 1 }\n    pub fn run() -> u8 { helper() }\n}\n",
            "mixin.rb": "module Greeting\n  def hello\n    'hi'\n  end\nend\n",
        }
    )
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    with SymbolStore(layout) as store:
        kinds = {
            s.qualified_name: s.kind
            for f in ("util.ts", "lib.rs", "mixin.rb")
            for s in store.symbols_in_file(f)
        }
        assert kinds["Text.lineNumber"] == "function"
        assert kinds["inner.helper"] == "function"
        assert kinds["Greeting.hello"] == "method"  # a Ruby module's def is a mixin's method
        target = store.symbols_by_name("Text.lineNumber")[0]
        assert [n.name for n in store.callers(target.id, 1)] == ["Text.describe"]
        assert _callees(store, "inner.run")["helper"][:2] == ("same_file", "lib.rs")


def test_callers_walk_depth(make_repo) -> None:
    root = make_repo(
        {"chain.py": "def a():\n    b()\n\ndef b():\n    c()\n\ndef c():\n    pass\n\ndef d():\n    c()\n"}
    )
    layout = RepoLayout.for_path(root)
    index_repository(layout, load_settings(layout.root).settings, text_index=False)
    with SymbolStore(layout) as store:
        c = store.symbols_by_name("c")[0]
        one = {(n.name, n.depth) for n in store.callers(c.id, 1)}
        two = {(n.name, n.depth) for n in store.callers(c.id, 2)}
        assert one == {("b", 1), ("d", 1)}
        assert two == {("b", 1), ("d", 1), ("a", 2)}


def test_module_index_resolves_python_and_js_paths() -> None:
    modules = ModuleIndex(
        ["src/pkg/__init__.py", "src/pkg/a.py", "web/lib/x.ts", "web/lib/index.js", "web/main.js"]
    )
    assert modules.resolve("src/pkg/a.py", ImportRef("pkg"), "python") == ["src/pkg/__init__.py"]
    assert modules.resolve("src/pkg/__init__.py", ImportRef(".a", ("thing",)), "python") == ["src/pkg/a.py"]
    assert modules.resolve("src/pkg/__init__.py", ImportRef(".", ("a",)), "python") == ["src/pkg/a.py"]
    assert modules.resolve("web/main.js", ImportRef("./lib/x"), "javascript") == ["web/lib/x.ts"]
    assert modules.resolve("web/main.js", ImportRef("./lib"), "javascript") == ["web/lib/index.js"]
    assert modules.resolve("web/main.js", ImportRef("react"), "javascript") == []


def test_arbitrary_receiver_does_not_guess_a_far_away_method() -> None:
    defs = [
        Definition("1", "get", "tests/a/models.py", "Manager", "method", "python"),
        Definition("2", "get", "tests/b/models.py", "Other", "method", "python"),
    ]
    resolver = CallResolver(lambda name: defs if name == "get" else [])
    ctx = FileContext(set(), {}, {}, {})
    far = resolver.resolve(CallRow("tests/c/test.py", None, None, "get", "response", 3), "python", ctx)
    assert far.callee_id is None and far.kind == "external"
    typed = resolver.resolve(CallRow("tests/c/test.py", None, None, "get", "Other", 4), "python", ctx)
    assert typed.callee_id == "2" and typed.kind == "ranked"


names = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)


@given(st.lists(st.tuples(names, st.sampled_from(["a.py", "b/c.py", "d/e/f.py"])), max_size=30), names)
def test_resolution_is_total_and_points_at_real_candidates(defs: list[tuple[str, str]], call: str) -> None:
    """Every call yields exactly one edge; a resolved edge names a definition with the called name."""
    pool = [Definition(str(i), n, f, None, "function", "python") for i, (n, f) in enumerate(defs)]
    resolver = CallResolver(lambda name: [d for d in pool if d.name == name])
    edge = resolver.resolve(
        CallRow("b/c.py", None, None, call, None, 1), "python", FileContext(set(), {}, {}, {})
    )
    if edge.callee_id is None:
        assert edge.kind == "external"
    else:
        target = next(d for d in pool if d.id == edge.callee_id)
        assert target.name == call
        if any(d.file == "b/c.py" and d.name == call for d in pool):
            assert edge.kind == "same_file" and target.file == "b/c.py"


def test_path_type_is_posix(tmp_path: Path) -> None:
    assert ModuleIndex(["a/b.py"]).resolve("a/c.py", ImportRef("a.b"), "python") == ["a/b.py"]


_FILES = ["pkg/a.py", "pkg/b.py", "pkg/sub/c.py", "other/d.py"]


@settings(max_examples=300)
@example(  # two classes named Store in one folder: each file's own comes first
    defs=[("flush", "pkg/a.py", "Store"), ("flush", "pkg/b.py", "Store")],
    calls=[("pkg/a.py", "flush", "store"), ("pkg/b.py", "flush", "store")],
)
@given(
    defs=st.lists(
        st.tuples(
            st.sampled_from(["flush", "get"]),
            st.sampled_from(_FILES),
            st.sampled_from([None, "Store", "Session"]),
        ),
        max_size=10,
    ),
    calls=st.lists(
        st.tuples(
            st.sampled_from(_FILES),
            st.sampled_from(["flush", "get"]),
            st.sampled_from([None, "self", "store", "self._store", "obj"]),
        ),
        min_size=1,
        max_size=12,
    ),
)
def test_a_call_resolves_the_same_whichever_calls_were_resolved_before_it(
    defs: list[tuple[str, str, str | None]], calls: list[tuple[str, str, str | None]]
) -> None:
    """Parse workers finish in any order and resolvers memoise answers: a call's edge must be the
    same as a fresh resolver's, so one tree gives one call graph, build after build."""
    pool = [
        Definition(str(i), n, f, parent, "method" if parent else "function", "python")
        for i, (n, f, parent) in enumerate(defs)
    ]

    def candidates(name: str) -> list[Definition]:
        return [d for d in pool if d.name == name]

    def edge(resolver: CallResolver, call: tuple[str, str, str | None]) -> tuple[str | None, str]:
        file, name, receiver = call
        got = resolver.resolve(
            CallRow(file, None, "Store", name, receiver, 1), "python", FileContext(set(), {}, {}, {})
        )
        return got.callee_id, got.kind

    shared = CallResolver(candidates)
    for call in calls:
        assert edge(shared, call) == edge(CallResolver(candidates), call)


_OWNER = st.sampled_from(
    ["Session", "HTTPConnectionPool", "connection_pool", "Pool", "m.Session", "a.b.Conn", "Ab"]
)
_WORD = st.sampled_from(["session", "pool", "self.pool", "conn", "ab", "_session_", "Pool", "x"])


@settings(max_examples=200, deadline=None)
@given(
    parents=st.lists(st.one_of(st.none(), _OWNER), min_size=1, max_size=6),
    receiver=_WORD,
    name=st.sampled_from(["close", "frobnicate"]),
)
def test_a_method_on_an_unknown_object_is_one_of_a_class_named_like_the_receiver(
    parents, receiver, name
) -> None:
    # ``pool.close()`` may reach ``HTTPConnectionPool.close`` (its class ends with the receiver's
    # word, underscores and case aside) and never a class the word does not name; a rare method
    # name defined by one class only reaches that class whatever the receiver.
    defs = [
        Definition(f"id{i}", name, f"m{i}.py", p, "method" if p else "function", "python")
        for i, p in enumerate(parents)
    ]
    resolver = CallResolver(lambda wanted: defs if wanted == name else [])
    pool = resolver._pool(name, "python")
    word = receiver.rsplit(".", 1)[-1]
    methods = [d for d in defs if d.parent is not None]
    named = [d.id for d in methods if names_type(word, d.parent.rsplit(".", 1)[-1])]
    single_class = len({d.parent for d in methods}) == 1 and name not in COMMON_METHOD_NAMES
    plain = named or ([d.id for d in methods] if single_class else [])
    assert resolver._object_candidates(pool, name, "python", word) == frozenset(plain)
    w = word.lower().replace("_", "")
    for d in methods:
        o = d.parent.rsplit(".", 1)[-1].lower().replace("_", "")
        assert names_type(word, d.parent.rsplit(".", 1)[-1]) == (len(w) >= 3 and (w == o or o.endswith(w)))
