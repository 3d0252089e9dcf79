"""Reads are sandboxed like writes: no hostile path gets content out of the root, .git or a secret.

Every surface that takes a path or returns file content is driven over the hostile repository
(tests/engine/policy/hostile.py): the sandbox itself, @mentions, NEED blocks, every MCP tool and
the indexer. A canary in anything returned is an escape.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.errors import PathDenied, PathTooLong, SecretPathDenied, SemforaError, SymlinkLoop
from engine.policy.names import is_git_component, is_secret_name
from engine.policy.paths import PathKind
from engine.policy.sandbox import classify, read_text, resolve
from tests.engine.policy.hostile import PIECES, SECRET_FILES, hostile_paths

FIXTURE_OK = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
path_pieces = st.lists(st.sampled_from(PIECES) | st.text(max_size=8), min_size=1, max_size=6)
leads = st.sampled_from(["", "", "/", "./", "ROOT/", "OUTSIDE/"])


def _raw(world, parts: list[str], lead: str) -> str:
    raw = "/".join(parts)
    if lead == "ROOT/":
        return f"{world.repo.root}/{raw}"
    if lead == "OUTSIDE/":
        return f"{world.repo.outside}/{raw}"
    return lead + raw


def _check_resolution(world, raw: str) -> str | None:
    """Resolve and read ``raw``; return the text read, asserting it stayed inside the rules."""
    try:
        resolved = resolve(world.repo.root, raw, deny=world.settings.edits.deny)
        text = read_text(world.repo.root, raw, deny=world.settings.edits.deny)
    except SemforaError:
        return None  # typed refusal: never an OSError, ValueError or RuntimeError
    real_root = os.path.realpath(world.repo.root)
    real = os.path.realpath(resolved.path)
    assert real.startswith(real_root + os.sep), (raw, real)
    rel = os.path.relpath(real, real_root)
    assert not any(is_git_component(p) for p in Path(rel).parts), (raw, rel)
    assert not is_secret_name(rel), (raw, rel)
    assert not world.repo.leaked(text), (raw, world.repo.leaked(text))
    return text


@pytest.mark.parametrize(
    ("raw", "error", "code"),
    [
        ("etc_dir/passwd", PathDenied, "SYMLINK_ESCAPE"),
        ("passwd_link", PathDenied, "SYMLINK_ESCAPE"),
        ("chain1", PathDenied, "SYMLINK_ESCAPE"),
        ("src/rel_out.py", PathDenied, "SYMLINK_ESCAPE"),
        ("up/outside/victim.txt", PathDenied, "SYMLINK_ESCAPE"),
        ("../outside/victim.txt", PathDenied, "PATH_OUTSIDE_REPO"),
        ("/etc/passwd", PathDenied, "PATH_OUTSIDE_REPO"),
        (".git/config", PathDenied, "GIT_DIR_DENIED"),
        (".GIT/config", PathDenied, "GIT_DIR_DENIED"),
        ("gitcfg.txt", PathDenied, "GIT_DIR_DENIED"),
        ("gitdir/config", PathDenied, "GIT_DIR_DENIED"),
        ("envlink.txt", SecretPathDenied, "SECRET_PATH_DENIED"),
        ("src/settings_link.py", SecretPathDenied, "SECRET_PATH_DENIED"),
        ("keylink", SecretPathDenied, "SECRET_PATH_DENIED"),
        ("loop_a", SymlinkLoop, "SYMLINK_LOOP"),
        ("self_loop/x", SymlinkLoop, "SYMLINK_LOOP"),
        ("dangling", PathDenied, "SYMLINK_ESCAPE"),
        ("pipe.py", PathDenied, "PATH_INVALID"),
        ("x" * 300, PathTooLong, "PATH_TOO_LONG"),
        ("a/" * 2100, PathTooLong, "PATH_TOO_LONG"),
        ("a\x00b", PathDenied, "PATH_INVALID"),
    ],
)
def test_each_known_attack_is_refused_with_its_code(hostile_world, raw, error, code) -> None:
    with pytest.raises(error) as caught:
        read_text(hostile_world.repo.root, raw)
    assert caught.value.code == code
    assert caught.value.exit_code == 2


@pytest.mark.parametrize("name", SECRET_FILES)
def test_every_secret_variant_is_refused(hostile_world, name: str) -> None:
    with pytest.raises(SecretPathDenied):
        read_text(hostile_world.repo.root, name)
    assert classify(hostile_world.repo.root, name) is PathKind.SECRET


def test_classify_says_where_a_path_really_leads(hostile_world) -> None:
    root = hostile_world.repo.root
    assert classify(root, "src/app.py") is PathKind.SOURCE
    assert classify(root, "c_in1.py") is PathKind.SOURCE  # a chain that stays inside
    assert classify(root, "etc_dir/passwd") is PathKind.OUTSIDE
    assert classify(root, "gitcfg.txt") is PathKind.GIT_INTERNAL
    assert classify(root, "envlink.txt") is PathKind.SECRET
    assert classify(root, "loop_a") is PathKind.OUTSIDE


def test_links_that_stay_inside_still_read(hostile_world) -> None:
    root = hostile_world.repo.root
    assert "def handler" in read_text(root, "src/ok_link.py")
    assert "def handler" in read_text(root, "c_in1.py")
    assert resolve(root, "c_in1.py").rel == "src/app.py"


@FIXTURE_OK
@given(parts=path_pieces, lead=leads)
def test_no_generated_path_reads_outside_git_or_secret(hostile_world, parts, lead) -> None:
    _check_resolution(hostile_world, _raw(hostile_world, parts, lead))


def test_every_hand_written_attack_gets_nothing_anywhere(hostile_world) -> None:
    from engine.orchestrator.budget import ContextBudget

    for raw in hostile_paths(hostile_world.repo):
        assert _check_resolution(hostile_world, raw) is None, raw  # refused outright
        answer = hostile_world.gatherer.resolve_need(
            None, (), (raw,), ContextBudget.from_settings(hostile_world.settings, 8000), 1
        )
        assert answer.items == () and len(answer.missing) == 1, raw
        for tool in ("analyze_file", "analyze_directory"):
            assert _mcp_answer(hostile_world, tool, {"path": raw}) == "", (tool, raw)


# --- @mentions and NEED blocks ------------------------------------------------------------------


def _pack_text(pack) -> str:
    return "\n".join(f"{i.file} {i.text} {i.reason}" for i in pack.items) + "\n".join(pack.notes)


@pytest.mark.parametrize("mention", ["etc_dir/passwd", ".git/config", "gitcfg.txt", "envlink.txt", ".env"])
def test_the_issues_mentions_get_nothing(hostile_world, mention: str) -> None:
    from engine.orchestrator.budget import ContextBudget

    pack = hostile_world.gatherer.build(
        f"explain @{mention} and handler", ContextBudget.from_settings(hostile_world.settings, 8000)
    )
    assert not hostile_world.repo.leaked(_pack_text(pack))
    assert not any(i.kind == "file" for i in pack.items)


@FIXTURE_OK
@given(parts=path_pieces, lead=leads)
def test_no_generated_mention_puts_a_canary_in_the_pack(hostile_world, parts, lead) -> None:
    from engine.orchestrator.budget import ContextBudget

    raw = _raw(hostile_world, parts, lead)
    pack = hostile_world.gatherer.build(
        f"explain @{raw} please", ContextBudget.from_settings(hostile_world.settings, 4000)
    )
    assert not hostile_world.repo.leaked(_pack_text(pack)), raw


@FIXTURE_OK
@given(parts=st.lists(path_pieces, min_size=1, max_size=4), lead=leads)
def test_no_generated_need_block_fetches_a_canary(hostile_world, parts, lead) -> None:
    from engine.orchestrator.budget import ContextBudget
    from engine.orchestrator.prompts import parse_need

    raws = [_raw(hostile_world, p, lead) for p in parts]
    reply = "NEED:\n" + "".join(f"- {r}\n" for r in raws if "\n" not in r)
    need = parse_need(reply)
    if need is None:
        return
    answer = hostile_world.gatherer.resolve_need(
        None, need.symbols, need.files, ContextBudget.from_settings(hostile_world.settings, 8000), 1
    )
    text = "\n".join(i.text for i in answer.items)
    assert not hostile_world.repo.leaked(text), raws


def test_need_for_the_issues_files_gets_nothing(hostile_world) -> None:
    from engine.orchestrator.budget import ContextBudget

    files = ("etc_dir/passwd", ".git/config", "gitcfg.txt", "envlink.txt", ".env", "secrets.py")
    answer = hostile_world.gatherer.resolve_need(
        None, ("get_secret", "stolen"), files, ContextBudget.from_settings(hostile_world.settings, 8000), 1
    )
    assert answer.items == ()
    assert len(answer.missing) == len(files) + 2


# --- every MCP tool that takes a path or returns content -------------------------------------------


def _mcp_answer(world, name: str, args: dict) -> str:
    from engine.mcp_server import answer, build_tools

    tools = getattr(world, "_tools", None) or build_tools(world.engine)
    world._tools = tools
    try:
        structured, text = answer(tools[name], args)
    except SemforaError:
        return ""
    import json

    return json.dumps(structured) + text


CONTENT_TOOLS = (
    ("analyze_file", "path"),
    ("analyze_directory", "path"),
    ("get_symbol_source", "symbol"),
    ("get_symbol", "symbol"),
    ("get_module", "module"),
    ("list_symbols", "module"),
    ("search_symbols", "query"),
    ("search", "query"),
    ("get_call_graph", "symbol"),
)


@FIXTURE_OK
@given(parts=path_pieces, lead=leads, tool=st.sampled_from(CONTENT_TOOLS))
def test_no_mcp_tool_serves_a_canary(hostile_world, parts, lead, tool) -> None:
    name, arg = tool
    raw = _raw(hostile_world, parts, lead)
    assert not hostile_world.repo.leaked(_mcp_answer(hostile_world, name, {arg: raw})), (name, raw)


def test_mcp_tools_serve_nothing_of_the_secret_module(hostile_world) -> None:
    world = hostile_world
    for name, args in [
        ("search", {"query": "get_secret CANARY secret", "mode": "fts"}),
        ("search_symbols", {"query": "get_secret"}),
        ("get_symbol_source", {"symbol": "get_secret"}),
        ("get_repo_overview", {}),
        ("list_symbols", {"limit": 200}),
        ("analyze_directory", {"path": ".", "summary_only": False}),
        ("analyze_file", {"path": "secrets.py"}),
    ]:
        out = _mcp_answer(world, name, args)
        assert not world.repo.leaked(out), name
        assert "secrets.py" not in out, name  # not even as a search hit or a listed file


@pytest.mark.parametrize(
    ("path", "code"),
    [("loop_a", "SYMLINK_LOOP"), ("x" * 300, "PATH_TOO_LONG"), ("a\x00b", "PATH_INVALID")],
)
def test_mcp_path_errors_are_typed(hostile_world, path: str, code: str) -> None:
    from engine.mcp_server import answer, build_tools, error_payload

    tools = build_tools(hostile_world.engine)
    for name in ("analyze_file", "analyze_directory"):
        with pytest.raises(SemforaError) as caught:
            answer(tools[name], {"path": path})
        rpc, message, data = error_payload(caught.value)
        assert data["error_code"] == code and data["exit_code"] == 2
        assert message.startswith(f"error[{code}]")


# --- the indexer ---------------------------------------------------------------------------------


def _cache_text(cache_dir: Path) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in cache_dir.rglob("*") if p.is_file())


def test_the_indexer_stores_no_canary_and_lists_secrets_as_skipped(hostile_world) -> None:
    world = hostile_world
    report = world.engine.index()
    leaked = world.repo.leaked(_cache_text(world.layout.cache_dir))
    assert leaked == []
    skipped = {s.path: s.reason for s in report.skipped_files}
    assert skipped["secrets.py"].startswith("secret")
    conn = world.engine.store().connection()
    indexed = [r[0] for r in conn.execute("SELECT path FROM files")]
    assert "src/app.py" in indexed
    assert all(not is_secret_name(p) for p in indexed)
    texts = [r[0] for r in conn.execute("SELECT path FROM text_files")]
    assert all(not is_secret_name(p) for p in texts)


@settings(max_examples=12, deadline=None)
@given(
    names=st.lists(
        st.sampled_from(SECRET_FILES + ("ok.py", "lib/util.py", "notes.md")), min_size=1, max_size=6
    ),
    links=st.lists(
        st.sampled_from(
            ["/etc", "/etc/passwd", "OUT", "OUT/module.py", ".git/config", ".env", "loop", "x/y"]
        ),
        max_size=4,
    ),
    use_git=st.booleans(),
)
def test_indexing_any_hostile_tree_stores_no_canary(
    tmp_path_factory: pytest.TempPathFactory, names: list[str], links: list[str], use_git: bool
) -> None:
    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.index.pipeline import refresh_text_index
    from engine.repo.layout import RepoLayout
    from tests.engine.policy.hostile import GIT_ENV

    base = tmp_path_factory.mktemp("tree")
    root, out = base / "r", base / "out"
    root.mkdir()
    out.mkdir()
    canary = "CANARY_TREE_" + os.urandom(4).hex()
    (out / "module.py").write_text(f'def stolen():\n    return "{canary}"\n')
    for name in names:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        content = f'X = "{canary}"\n' if is_secret_name(name) else "def fine():\n    return 1\n"
        target.write_text(content)
    if use_git:
        import subprocess

        subprocess.run(["git", "-C", str(root), "init", "-q"], check=True, env={**os.environ, **GIT_ENV})
        with (root / ".git" / "config").open("a") as fh:
            fh.write(f"# {canary}\n")
    for n, target in enumerate(links):
        dest = str(out) + target[3:] if target.startswith("OUT") else target
        os.symlink(dest, root / f"link{n}.py")
    layout = RepoLayout.for_path(root)
    cfg = load_settings(root).settings
    index_repository(layout, cfg)
    refresh_text_index(layout, cfg)
    assert canary not in _cache_text(layout.cache_dir)


def test_the_overview_reads_no_linked_manifest_readme_or_package_file(hostile_world) -> None:
    """requirements.txt -> outside, requirements-dev.txt -> /etc/passwd, src/README.md and
    src/__init__.py -> outside: the overview (sent to every model request) quotes none of them."""
    from engine.store.overview import build_overview

    overview = build_overview(hostile_world.layout, hostile_world.engine.store().connection())
    assert hostile_world.repo.leaked(overview.toon) == []
