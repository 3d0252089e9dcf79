"""The engine tool surface: every tool answers in TOON and data, limits are enforced, ranking is right."""

from __future__ import annotations

import json

import pytest
import toon_format

from engine import api as tools
from engine.errors import NotFoundError, SandboxError, UsageError
from engine.store.rows import identifier_parts

REPO = {
    "auth/session.py": (
        '"""Sessions and login."""\n'
        "import subprocess\n\n"
        "class SessionStore:\n"
        '    """Keeps sessions."""\n'
        "    def get_user_by_id(self, user_id):\n"
        "        return self.load(user_id)\n\n"
        "    def load(self, key):\n"
        "        return subprocess.run(['cat', key])\n\n"
        "def getUserName(user):\n"
        "    return user.name\n\n"
        "def user():\n"
        "    return None\n\n"
        "def user_profile():\n"
        "    return user()\n"
    ),
    "auth/views.py": "from auth.session import user, getUserName\n\ndef profile_view():\n    return getUserName(user())\n",
    "web/app.js": "function renderUser(u) {\n  return u;\n}\nfunction main() {\n  renderUser(1);\n}\n",
    "conf/secrets_loader.py": "def load_api_token():\n    return 'sk-live-123'\n",
}


@pytest.fixture
def engine(make_repo):
    root = make_repo(REPO)
    with tools.Engine.open(root) as eng:
        yield eng


def _names(result: tools.ToolResult) -> list[str]:
    return [row["name"] for row in result.to_json()["symbols"]]


def test_every_registered_tool_documents_its_token_cost() -> None:
    expected = {
        "get_repo_overview",
        "list_modules",
        "get_module",
        "list_symbols",
        "search_symbols",
        "get_symbol",
        "get_symbols",
        "get_symbol_source",
        "get_call_graph",
        "get_callers",
        "analyze_file",
        "analyze_directory",
        "generate_index",
        "check_index",
        "list_languages",
        "get_context",
    }
    assert set(tools.TOOLS) == expected
    for spec in tools.TOOLS.values():
        assert spec.token_cost, spec.name
        assert spec.description, spec.name
        schema = spec.input_schema()
        assert schema["type"] == "object"
    assert "EXPENSIVE" in tools.TOOLS["get_module"].description
    assert tools.TOOLS["search_symbols"].input_schema()["properties"]["limit"]["maximum"] == 100


def test_search_ranks_exact_then_prefix_then_parts(engine) -> None:
    names = _names(tools.search_symbols(engine, "user"))
    assert names[0] == "user"  # exact
    assert names[1] == "user_profile"  # prefix
    assert "SessionStore.get_user_by_id" in names and "getUserName" in names  # identifier parts
    assert names.index("user_profile") < names.index("getUserName")
    camel = _names(tools.search_symbols(engine, "userName"))
    assert camel[0] == "getUserName"
    fuzzy = _names(tools.search_symbols(engine, "SesionStore"))  # a typo
    assert fuzzy[0] == "SessionStore"
    assert _names(tools.search_symbols(engine, "user", kind="method")) == ["SessionStore.get_user_by_id"]
    assert _names(tools.search_symbols(engine, "render", module="web")) == ["renderUser"]


def test_limits_are_enforced_not_just_documented(engine) -> None:
    with pytest.raises(UsageError):
        tools.search_symbols(engine, "user", limit=101)
    with pytest.raises(UsageError):
        tools.list_symbols(engine, limit=201)
    with pytest.raises(UsageError):
        tools.get_symbols(engine, [f"id{i}" for i in range(21)])
    with pytest.raises(UsageError):
        tools.get_symbol_source(engine, "user", context=51)
    with pytest.raises(UsageError):
        tools.get_call_graph(engine, "user", depth=7)
    with pytest.raises(UsageError, match=r"search_symbols: unknown parameter: bogus$"):
        tools.TOOLS["search_symbols"](engine, query="x", bogus=1)
    with pytest.raises(UsageError, match=r"search_symbols: unknown parameters: bogus, other$"):
        tools.TOOLS["search_symbols"](engine, query="x", other=2, bogus=1)
    assert len(tools.search_symbols(engine, "u", limit=2).to_json()["symbols"]) == 2


def test_tabular_toon_is_never_larger_than_compact_json(engine) -> None:
    results = [
        tools.search_symbols(engine, "user", limit=20),
        tools.list_symbols(engine, limit=50),
        tools.list_modules(engine),
        tools.list_languages(engine),
        tools.get_call_graph(engine, "user", direction="both"),
    ]
    for result in results:
        decoded = toon_format.loads(result.toon)
        compact = json.dumps(decoded, separators=(",", ":"), ensure_ascii=False)
        assert len(result.toon) <= len(compact), result.toon


def test_symbol_details_source_and_graph(engine) -> None:
    detail = tools.get_symbol(engine, "SessionStore.load").to_json()
    assert detail["risk"] in ("medium", "high") and any("subprocess" in r for r in detail["risk_reasons"])
    assert [c["name"] for c in detail["callers"]] == ["SessionStore.get_user_by_id"]
    src = tools.get_symbol_source(engine, "getUserName", context=1).to_json()
    assert "def getUserName(user):" in src["source"] and src["start_line"] == src["end_line"] - 1
    assert (src["source_start_line"], src["source_end_line"]) == (src["start_line"] - 1, src["end_line"] + 1)
    graph = tools.get_callers(engine, "user", depth=2).to_json()
    assert {(c["name"], c["depth"]) for c in graph["callers"]} >= {("user_profile", 1), ("profile_view", 1)}
    both = tools.get_symbols(engine, [detail["id"]]).to_json()["symbols"]
    assert both[0]["qualified_name"] == "SessionStore.load"
    with pytest.raises(NotFoundError):
        tools.get_symbol(engine, "no_such_symbol_anywhere")


def test_files_directories_index_and_languages(engine) -> None:
    fa = tools.analyze_file(engine, "auth/session.py").to_json()
    assert fa["language"] == "python" and "subprocess" in fa["imports"]
    assert {r["name"] for r in fa["symbols"]} >= {"SessionStore", "SessionStore.load", "user"}
    with pytest.raises(SandboxError):
        tools.analyze_file(engine, "../../etc/passwd")
    summary = tools.analyze_directory(engine, "auth").to_json()
    assert summary["files"] == 2 and "file_list" not in summary
    full = tools.analyze_directory(engine, "auth", summary_only=False).to_json()
    assert [f["path"] for f in full["file_list"]] == ["auth/session.py", "auth/views.py"]
    assert tools.check_index(engine).to_json()["fresh"] is True
    (engine.layout.root / "auth" / "views.py").write_text("def changed():\n    pass\n", encoding="utf-8")
    stale = tools.check_index(engine, integrity=True).to_json()
    assert stale["fresh"] is False and stale["integrity"] == "ok"
    report = tools.generate_index(engine).to_json()
    assert report["ok"] and report["changed"] == 1
    assert tools.check_index(engine).to_json()["fresh"] is True
    langs = {row["name"]: row["level"] for row in tools.list_languages().to_json()["languages"]}
    assert langs["python"] == "full" and len(langs) >= 15


def test_module_tools_and_overview(engine) -> None:
    modules = {m["name"] for m in tools.list_modules(engine).to_json()["modules"]}
    assert modules >= {"auth", "web"}
    mod = tools.get_module(engine, "auth").to_json()
    assert {s["name"] for s in mod["symbols"]} >= {"SessionStore", "profile_view"}
    with pytest.raises(NotFoundError):
        tools.get_module(engine, "nope")
    ov = tools.get_repo_overview(engine)
    assert ov.tokens <= 2500 and toon_format.loads(ov.toon)["totals"]["files"] == 3  # not the secret file


def test_identifier_parts_split_camel_and_snake() -> None:
    assert identifier_parts("getUserByID") == ["get", "user", "by", "id"]
    assert identifier_parts("HTTPServer_v2") == ["http", "server", "v", "2"]
    assert identifier_parts("__init__") == ["init"]


def test_source_of_files_on_the_secret_deny_list_is_never_returned(engine) -> None:
    from engine.edits.errors import SecretPathDenied
    from engine.errors import NotFoundError

    # Never indexed: no symbol, no source, no snippet; only its existence (a skipped file).
    assert tools.search_symbols(engine, "load_api_token").to_json()["symbols"] == []
    with pytest.raises(NotFoundError):
        tools.get_symbol_source(engine, "load_api_token")
    skipped = {s["path"]: s["reason"] for s in tools.generate_index(engine).to_json()["skipped_files"]}
    assert skipped["conf/secrets_loader.py"].startswith("secret")
    with pytest.raises(SecretPathDenied):
        tools.analyze_file(engine, "conf/secrets_loader.py")
