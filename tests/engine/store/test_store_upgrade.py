"""An index from an older semfora is rebuilt with a warning; progress names its phases with counts;
the overview is built once per index state and then read back."""

from __future__ import annotations

import json
import sqlite3

from engine.config import load_settings
from engine.errors import EngineWarning
from engine.index.indexer import SHARD_GLOB, index_repository
from engine.repo.layout import RepoLayout
from engine.store.db import SymbolStore
from tests.conftest import run_semfora

FILES = {
    "pkg/app.py": "from pkg.util import helper\n\n\ndef main():\n    return helper(1)\n",
    "pkg/util.py": "def helper(x):\n    return x * 2\n",
    "README.md": "# Demo\n\nA tiny package.\n",
}

# What index.db looked like before schema 5: paths repeated in every call row, chunk text stored.
V4_TABLES = """
CREATE TABLE files (path TEXT PRIMARY KEY, language TEXT, module TEXT, size INTEGER, mtime_ns INTEGER,
    sha256 TEXT, line_count INTEGER, syntax_errors INTEGER, indexed_at REAL);
CREATE TABLE calls (file TEXT, caller_id TEXT, caller_parent TEXT, name TEXT, receiver TEXT, line INTEGER,
    awaited INTEGER, in_try INTEGER, callee_id TEXT, kind TEXT, package TEXT);
CREATE INDEX calls_file ON calls(file);
CREATE TABLE file_imports (src TEXT, dst TEXT, PRIMARY KEY (src, dst)) WITHOUT ROWID;
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE text_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO text_meta VALUES ('schema_version', '2');
CREATE TABLE text_chunks (rowid INTEGER PRIMARY KEY, chunk_id TEXT, file TEXT, body TEXT);
"""


def _settings(layout: RepoLayout):  # type: ignore[no-untyped-def]
    return load_settings(layout.root).settings


def test_an_index_from_before_the_compact_schema_is_rebuilt_with_a_warning(make_repo) -> None:
    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    layout.index_db.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(layout.index_db) as conn:
        conn.executescript(V4_TABLES)
        conn.executemany(
            "INSERT INTO text_chunks VALUES (?, ?, 'pkg/app.py', ?)",
            [(i, f"c{i}", "x" * 4000) for i in range(3000)],
        )
        conn.execute("PRAGMA user_version = 4")
    old_size = layout.index_db.stat().st_size
    heard: list[EngineWarning] = []
    report = index_repository(layout, _settings(layout), on_warning=heard.append)
    assert [w.code for w in heard] == ["INDEX_UPGRADED"]
    assert (report.files, report.symbols) == (2, 2) and report.edges >= 1
    with sqlite3.connect(layout.index_db) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(text_chunks)")}
        assert "body" not in columns and "text_hash" in columns
        assert conn.execute("SELECT count(*) FROM text_chunks").fetchone()[0] >= 3
    assert layout.index_db.stat().st_size < old_size / 2  # the old pages were given back
    again: list[EngineWarning] = []
    index_repository(layout, _settings(layout), on_warning=again.append)
    assert again == []


def test_risk_reasons_an_older_semfora_derived_are_derived_again(make_repo) -> None:
    """A plugin loader stayed "subprocess: importlib.import_module" in an existing index after
    the risk tables learnt dynamic imports: nothing made its unchanged file be read again."""
    root = make_repo(
        {"plug.py": "import importlib\n\n\ndef load(name):\n    return importlib.import_module(name)\n"}
    )
    layout = RepoLayout.for_path(root)
    index_repository(layout, _settings(layout))
    with sqlite3.connect(layout.index_db) as conn:  # as schema 5 left it
        conn.execute(
            "UPDATE symbols SET risk = 'high', risk_reasons = '[\"subprocess: importlib.import_module\"]'"
        )
        conn.execute("PRAGMA user_version = 5")
    heard: list[EngineWarning] = []
    index_repository(layout, _settings(layout), on_warning=heard.append)
    assert [w.code for w in heard] == ["INDEX_UPGRADED"]
    with sqlite3.connect(layout.index_db) as conn:
        rows = conn.execute("SELECT name, risk, risk_reasons FROM symbols").fetchall()
    assert rows == [("load", "medium", '["dynamic-import: importlib.import_module"]')]


def _reindexed_as_left_by(layout: RepoLayout, version: int, change: str) -> list[str]:
    """Index, make the rows what schema ``version`` wrote (``change``), index again: the
    warning codes of the second run."""
    index_repository(layout, _settings(layout))
    with sqlite3.connect(layout.index_db) as conn:
        conn.execute(change)
        conn.execute(f"PRAGMA user_version = {version}")
    heard: list[EngineWarning] = []
    index_repository(layout, _settings(layout), on_warning=heard.append)
    return [w.code for w in heard]


def test_declarations_an_older_semfora_missed_are_found_after_the_upgrade(make_repo) -> None:
    """Schema 6 extracted no function from a .d.ts file; an unchanged file is never parsed
    again, so without a new schema an existing index kept missing them."""
    root = make_repo(
        {"types.d.ts": "declare namespace ts {\n    function createProgram(o: Options): Program;\n}\n"}
    )
    layout = RepoLayout.for_path(root)
    heard = _reindexed_as_left_by(layout, 6, "DELETE FROM symbols WHERE name = 'createProgram'")
    assert heard == ["INDEX_UPGRADED"]
    with sqlite3.connect(layout.index_db) as conn:
        names = [r[0] for r in conn.execute("SELECT qualified_name FROM symbols ORDER BY start_line")]
    assert names == ["ts", "ts.createProgram"]


def test_namespace_functions_an_older_semfora_called_methods_are_functions_after_the_upgrade(
    make_repo,
) -> None:
    """Schema 7 extracted a TypeScript namespace's functions as methods; an unchanged file is
    never parsed again, so without a new schema an existing index kept them so."""
    root = make_repo(
        {"util.ts": "export namespace Text {\n  export function trim(s: string) { return s; }\n}\n"}
    )
    layout = RepoLayout.for_path(root)
    heard = _reindexed_as_left_by(layout, 7, "UPDATE symbols SET kind = 'method' WHERE name = 'trim'")
    assert heard == ["INDEX_UPGRADED"]
    with SymbolStore(layout) as store:
        assert [(s.qualified_name, s.kind) for s in store.symbols_in_file("util.ts")] == [
            ("Text", "module"),
            ("Text.trim", "function"),
        ]


def test_search_on_an_index_an_older_semfora_wrote_says_so_until_it_is_rebuilt(make_repo) -> None:
    """`search` answers from the index as it is (it never re-indexes): after an upgrade it gave
    the old index's answers, without a word, until something else ran an index."""
    root = make_repo(
        {"types.d.ts": "declare namespace ts {\n    function createProgram(o: Options): Program;\n}\n"}
    )
    assert run_semfora("index", "--path", str(root)).returncode == 0
    layout = RepoLayout.for_path(root)
    with sqlite3.connect(layout.index_db) as conn:
        conn.execute("PRAGMA user_version = 6")
    old = run_semfora("search", "createProgram", "--path", str(root), "--json")
    assert old.returncode == 0, old.stderr
    assert "[INDEX_OUTDATED] index.db was written by an older semfora (schema 6" in old.stderr
    assert any("until `semfora index` rebuilds it" in w for w in json.loads(old.stdout)["warnings"])
    assert run_semfora("index", "--path", str(root)).returncode == 0
    fresh = run_semfora("search", "createProgram", "--path", str(root), "--json")
    assert "INDEX_OUTDATED" not in fresh.stderr and json.loads(fresh.stdout)["warnings"] == []


def test_progress_names_each_phase_and_counts_up_to_its_total(make_repo) -> None:
    root = make_repo(
        {**FILES, **{f"pkg/m{i}.py": f"def f{i}():\n    return f{i + 1}()\n" for i in range(30)}}
    )
    layout = RepoLayout.for_path(root)
    seen: list[tuple[str, int, int]] = []
    index_repository(layout, _settings(layout), progress=lambda *a: seen.append(a))
    phases = list(dict.fromkeys(p for p, _d, _t in seen))
    # A cold build's workers chunk the prose files once the code is parsed, before calls resolve;
    # then it writes its indexes, commits and stores the overview, counted in steps.
    assert phases == ["discovering", "parsing", "text index", "resolving calls", "writing indexes"]
    for phase in phases:
        counts = [(d, t) for p, d, t in seen if p == phase]
        assert all(0 <= d <= t for d, t in counts[1:]), (phase, counts)
        assert [d for d, _t in counts] == sorted(d for d, _t in counts), phase
    last = {p: (d, t) for p, d, t in seen}
    assert last["parsing"] == (32, 32) and last["discovering"] == (32, 32)
    # Parsing is announced when it starts, not when its first batch is written (seconds later on
    # a large tree, with the header still saying "discovering").
    assert next((d, t) for p, d, t in seen if p == "parsing") == (0, 32)
    # A cold build chunks code files while parsing them: the text phase is left with README.md.
    assert last["text index"] == (1, 1)
    with sqlite3.connect(layout.index_db) as conn:
        assert conn.execute("SELECT count(DISTINCT file) FROM text_chunks").fetchone()[0] == 33
    assert last["resolving calls"][0] == last["resolving calls"][1] > 0
    assert last["writing indexes"] == (8, 8)  # 8 steps: rows to commit, then the overview
    assert not list(layout.cache_dir.glob(SHARD_GLOB))  # the call shards are gone


def test_the_overview_is_built_once_per_index_state_and_follows_changes(make_repo, monkeypatch) -> None:
    from engine import api as tools
    from engine.store import overview

    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    index_repository(layout, _settings(layout))
    builds: list[int] = []
    real = overview.build_overview

    def counting(*a, **k):  # type: ignore[no-untyped-def]
        builds.append(1)
        return real(*a, **k)

    monkeypatch.setattr(overview, "build_overview", counting)
    with tools.Engine.open(root) as engine:
        first = tools.get_repo_overview(engine).toon
        assert tools.get_repo_overview(engine).toon == first
    assert builds == []  # the cold build stored it already
    (root / "pkg/README.md").write_text("# pkg\n\nA package that doubles numbers.\n", encoding="utf-8")
    with tools.Engine.open(root) as engine:
        assert "doubles numbers" in tools.get_repo_overview(engine).toon
    assert len(builds) == 1  # a file it was built from changed
    (root / "pkg/more.py").write_text("def extra():\n    return 1\n", encoding="utf-8")
    index_repository(layout, _settings(layout))
    with tools.Engine.open(root) as engine:
        assert '"files": 3' in str(tools.get_repo_overview(engine).to_json()).replace("'", '"')
        tools.get_repo_overview(engine)
    assert len(builds) == 2  # once for the new index state, then read back


def test_a_reader_never_waits_on_an_indexer_to_store_the_overview(make_repo) -> None:
    from engine.store.lock import writer_lock
    from engine.store.overview import stored_overview

    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    index_repository(layout, _settings(layout))
    with sqlite3.connect(layout.index_db) as conn:
        conn.execute("DELETE FROM overview")
    blocker = sqlite3.connect(layout.index_db)
    blocker.execute("BEGIN IMMEDIATE")  # an indexer's write transaction
    try:
        with writer_lock(layout, 1.0), SymbolStore(layout) as store:
            ov = stored_overview(layout, store.connection())
        assert "pkg" in ov.toon
    finally:
        blocker.rollback()
        blocker.close()
    with sqlite3.connect(layout.index_db) as conn:
        assert conn.execute("SELECT count(*) FROM overview").fetchone()[0] == 0


def test_an_overview_stored_by_an_older_semfora_is_built_again(make_repo) -> None:
    """The stored overview is keyed by the index state and by how overviews are made: after an
    upgrade that changes the overview, the old one is not served until the repository changes."""
    from engine.store.overview import stored_overview

    root = make_repo(FILES)
    layout = RepoLayout.for_path(root)
    index_repository(layout, _settings(layout))
    with sqlite3.connect(layout.index_db) as conn:
        generation = conn.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0]
        # as an older semfora stored it: under the bare generation, made another way
        conn.execute("UPDATE overview SET generation = ?, toon = 'an old overview'", (str(generation),))
    with SymbolStore(layout) as store:
        ov = stored_overview(layout, store.connection())
    assert ov.toon != "an old overview" and "pkg" in ov.toon


def test_an_anonymous_default_export_an_older_semfora_missed_is_found_after_the_upgrade(make_repo) -> None:
    """Schema 8 extracted no symbol from ``export default function (config) {...}``; an unchanged
    file is never parsed again, so without a new schema an existing index kept missing it."""
    root = make_repo({"lib/adapter.js": "export default function (config) {\n  return config;\n}\n"})
    layout = RepoLayout.for_path(root)
    index_repository(layout, _settings(layout))
    with sqlite3.connect(layout.index_db) as conn:  # as schema 8 left it
        conn.execute("DELETE FROM symbols WHERE name = 'default'")
        conn.execute("PRAGMA user_version = 8")
    heard: list[EngineWarning] = []
    index_repository(layout, _settings(layout), on_warning=heard.append)
    assert [w.code for w in heard] == ["INDEX_UPGRADED"]
    with SymbolStore(layout) as store:
        assert [s.qualified_name for s in store.symbols_in_file("lib/adapter.js")] == ["default"]
