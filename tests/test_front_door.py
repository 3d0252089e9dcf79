"""The faces (app, command line, MCP server) ask the engine through its front door, ``engine.api``,
and the door answers with frozen, typed values whose ``to_json()`` is the JSON contract."""

from __future__ import annotations

import ast
import dataclasses
import json
import tomllib
from pathlib import Path

import pytest

from engine import api
from tests.conftest import ROOT

# Engine packages a face must not import: what it asks of them goes through ``engine.api``.
BEHIND_THE_DOOR = (
    "engine.store.db",
    "engine.index",
    "engine.orchestrator",
    "engine.llm",
    "engine.semantic",
    "engine.review",
    "engine.query",
)
FACES = (*sorted((ROOT / "semfora_cli").rglob("*.py")), *sorted((ROOT / "semfora_tui").rglob("*.py")))


def _imports(path: Path) -> list[str]:
    """Every module a file imports, at any depth (inside functions and TYPE_CHECKING too)."""
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_faces_never_reach_past_the_door() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}: {name}"
        for path in (*FACES, ROOT / "engine" / "mcp_server.py")
        for name in _imports(path)
        if name.startswith(BEHIND_THE_DOOR)
    ]
    assert offenders == []


# What the orchestrator may not reach directly: it reads the index through the read floor.
BELOW_THE_READ_FLOOR = ("engine.store", "engine.index")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_the_orchestrator_reads_the_index_only_through_the_read_floor() -> None:
    """Context packs, NEED rounds, digests and turns ask ``engine.query``, never the store or the
    index; the only exceptions are the ones the ``read-floor`` contract names, with their reason."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "read-floor"]
    allowed = {tuple(part.strip() for part in rule.split("->")) for rule in contract["ignore_imports"]}
    offenders, used = [], set()
    for path in sorted((ROOT / "engine" / "orchestrator").rglob("*.py")):
        module = _module_name(path)
        for name in _imports(path):
            if not name.startswith(BELOW_THE_READ_FLOOR):
                continue
            rule = next(
                ((a, b) for a, b in allowed if a == module and (name + ".").startswith(b + ".")), None
            )
            if rule is None:
                offenders.append(f"{module}: {name}")
            else:
                used.add(rule)
    assert offenders == []
    assert used == allowed, "an exception the orchestrator no longer needs: drop it from the contract"


def test_the_app_never_imports_the_command_line() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "semfora_tui").rglob("*.py"))
        if any(name.startswith("semfora_cli") for name in _imports(path))
    ]
    assert offenders == []


ARGS = {
    "get_context": {"task": "change how total adds values", "budget": 2000},
    "get_module": {"module": "calc"},
    "search_symbols": {"query": "total"},
    "get_symbol": {"symbol": "total"},
    "get_symbol_source": {"symbol": "total"},
    "get_call_graph": {"symbol": "total", "direction": "both"},
    "get_callers": {"symbol": "add"},
    "analyze_file": {"path": "calc/ops.py"},
    "analyze_directory": {"path": "calc", "summary_only": False},
    "check_index": {"integrity": True},
}


@pytest.fixture
def engine(make_repo):
    root = make_repo(
        {
            "calc/ops.py": "def add(a, b):\n    return a + b\n\ndef total(xs):\n    out = 0\n"
            "    for x in xs:\n        out = add(out, x)\n    return out\n",
            "calc/report.py": "from calc.ops import total\n\ndef summary(xs):\n    return total(xs)\n",
        }
    )
    with api.Engine.open(root) as eng:
        yield eng


def test_every_tool_answers_with_a_frozen_typed_value(engine) -> None:
    ids = [api.get_symbol(engine, "total").data.symbol.id]
    for name, spec in api.TOOLS.items():
        args = ARGS.get(name, {"ids": ids} if name == "get_symbols" else {})
        result = spec(engine if spec.needs_engine else None, **args)
        value = result.data
        assert dataclasses.is_dataclass(value) and not isinstance(value, dict), name
        field = dataclasses.fields(value)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, field, None)
        data = result.to_json()
        assert json.loads(json.dumps(data)) == data, name  # plain JSON, nothing left to coerce


def test_typed_values_carry_what_the_json_says(engine) -> None:
    detail = api.get_symbol(engine, "add").data
    assert detail.symbol.qualified_name == "add"
    assert [c.name for c in detail.callers] == ["total"]
    graph = api.get_callers(engine, "total").data
    assert graph.callees is None and [e.name for e in graph.callers or ()] == ["summary"]
    assert graph.to_json()["callers"][0]["id"] == graph.callers[0].symbol_id  # type: ignore[index]
    source = api.get_symbol_source(engine, "total").data
    assert source.source.startswith("def total(xs):") and source.to_json()["source"] == source.source
    api.ensure_text_index(engine)
    found = api.search(engine, "total", mode="fts", limit=5)
    assert found.hits and found.hits[0].file.startswith("calc/")
    assert found.to_json(always_warnings=False).keys() <= {"results", "warnings"}
    assert "warnings" in found.to_json()


def test_the_app_asks_the_door_for_its_branch_and_the_files_it_may_mention(make_repo) -> None:
    """The header's branch and the ``@`` picker's files come through ``engine.api`` (the engine's
    git module and discovery's rules): ignored files, excluded directories and secrets are not
    offered; an untracked file is."""
    from semfora_tui.engine_bridge import EngineBridge

    root = make_repo(
        {
            "src/app.py": "def main():\n    return 1\n",
            ".gitignore": "*.log\n",
            "node_modules/left/index.js": "module.exports = 1\n",
            ".env": "TOKEN=abc\n",
        }
    )
    (root / "notes.md").write_text("untracked, not ignored\n", encoding="utf-8")
    (root / "debug.log").write_text("ignored\n", encoding="utf-8")
    bridge = EngineBridge(root)
    assert bridge.branch() == "main"
    assert bridge.list_files() == [".gitignore", "notes.md", "src/app.py"]
    plain = make_repo({"lib/a.py": "x = 1\n", ".gitignore": "*.log\n", "a.log": "no\n"}, git_init=False)
    assert EngineBridge(plain).branch() == ""  # outside a work tree: no branch, and no error
    assert EngineBridge(plain).list_files() == [".gitignore", "lib/a.py"]  # the walk honours .gitignore
