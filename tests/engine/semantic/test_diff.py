"""Semantic diff on real git repositories: what a reviewer sees changed, symbol by symbol."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.semantic.diff import (
    WORKING,
    RefNotFound,
    SemanticDiff,
    ShallowClone,
    analyze_commit,
    analyze_diff,
    analyze_range,
)
from tests.conftest import git

BASE_APP = """import json


def load(path):
    with open(path) as fh:
        return json.load(fh)


def total(a, b):
    result = a + b
    result = result * 2
    return result


class Store:
    def get(self, key):
        return key

    def put(self, key, value):
        return (key, value)


def gone():
    return 1
"""

MAIN = """from app import load


def run():
    return load("config.json")
"""


def _commit(root: Path, message: str = "change") -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def _by_name(diff: SemanticDiff) -> dict[str, object]:
    return {s.qualified_name: s for s in diff.symbols}


def test_modified_signature_risk_and_new_calls_with_callers(make_repo) -> None:
    root = make_repo({"app.py": BASE_APP, "main.py": MAIN})
    (root / "app.py").write_text(
        BASE_APP.replace(
            "def load(path):\n    with open(path) as fh:\n        return json.load(fh)\n",
            "def load(path, url=None):\n    import requests\n    if url:\n        return requests.get(url).json()\n"
            "    with open(path) as fh:\n        return json.load(fh)\n",
        )
    )
    diff = analyze_diff(root)
    assert diff.base == "HEAD" and diff.target == WORKING
    load = _by_name(diff)["load"]
    assert load.change == "modified"
    assert load.signature_changed
    assert load.signature_before.endswith("load(path)")
    assert "url=None" in load.signature_after
    assert [c.category for c in load.new_external_calls] == ["network"]
    assert load.risk_after != "low" and any("network" in r for r in load.risk_reasons_added)
    assert {(c.file, c.line) for c in load.callers} == {("main.py", 5)}
    # Untouched symbols are not reported.
    assert set(_by_name(diff)) == {"load"}


def test_rename_move_add_remove_and_untracked(make_repo) -> None:
    root = make_repo({"app.py": BASE_APP, "main.py": MAIN})
    moved = "\n\ndef helper(x):\n    return x * 3\n"
    (root / "app.py").write_text(
        BASE_APP.replace("def total(a, b):", "def grand_total(a, b):").replace(
            "def gone():\n    return 1\n", ""
        )
    )
    (root / "extra.py").write_text("def fresh():\n    return eval('1')\n" + moved)
    diff = analyze_diff(root, "HEAD", WORKING)
    changes = {(s.change, s.qualified_name) for s in diff.symbols}
    assert ("renamed", "grand_total") in changes
    renamed = _by_name(diff)["grand_total"]
    assert renamed.old_qualified_name == "total" and renamed.similarity == 1.0
    assert ("removed", "gone") in changes
    assert ("added", "fresh") in changes
    extra = next(f for f in diff.files if f.path == "extra.py")
    assert extra.status == "added"  # untracked files count in WORKING
    fresh = _by_name(diff)["fresh"]
    assert [c.category for c in fresh.new_external_calls] == ["eval"]


def test_symbol_moved_between_files_is_a_move(make_repo) -> None:
    root = make_repo({"a.py": "def shared(x):\n    y = x + 1\n    return y * 2\n", "b.py": "X = 1\n"})
    (root / "a.py").write_text("")
    (root / "b.py").write_text("X = 1\n\n\ndef shared(x):\n    y = x + 1\n    return y * 2\n")
    _commit(root)
    diff = analyze_commit(root, "HEAD")
    shared = _by_name(diff)["shared"]
    assert shared.change == "moved"
    assert shared.old_file == "a.py" and shared.file == "b.py"


def test_file_rename_keeps_symbols_as_moves_and_class_only_changes_when_its_own_lines_do(make_repo) -> None:
    root = make_repo({"app.py": BASE_APP})
    git(root, "mv", "app.py", "store.py")
    text = (root / "store.py").read_text().replace("return (key, value)", "return {key: value}")
    (root / "store.py").write_text(text)
    _commit(root)
    diff = analyze_commit(root, "HEAD")
    f = diff.files[0]
    assert (f.status, f.old_path, f.path) == ("renamed", "app.py", "store.py")
    by = {s.qualified_name: s.change for s in f.symbols}
    assert by["Store.put"] == "modified"
    assert by["load"] == "moved"
    # The class's own lines did not change: only its method did.
    assert by.get("Store") == "moved"


def test_binary_and_deleted_files(make_repo) -> None:
    root = make_repo({"logo.png": b"\x89PNG\r\n\x00\x00data", "old.py": "def old():\n    return 1\n"})
    (root / "logo.png").write_bytes(b"\x89PNG\r\n\x00\x00other")
    (root / "old.py").unlink()
    _commit(root)
    diff = analyze_commit(root)
    files = {f.path: f for f in diff.files}
    assert files["logo.png"].binary and files["logo.png"].symbols == ()
    assert "binary" in files["logo.png"].note
    assert files["old.py"].status == "deleted"
    assert [(s.change, s.qualified_name) for s in files["old.py"].symbols] == [("removed", "old")]


def test_merge_commit_is_compared_with_first_parent(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    git(root, "checkout", "-q", "-b", "feature")
    (root / "b.py").write_text("def b():\n    return 2\n")
    _commit(root, "feature")
    git(root, "checkout", "-q", "main")
    (root / "c.py").write_text("def c():\n    return 3\n")
    _commit(root, "main side")
    git(root, "merge", "-q", "--no-ff", "feature", "-m", "merge feature")
    diff = analyze_commit(root, "HEAD")
    assert any("merge commit" in n and "first parent" in n for n in diff.notes)
    assert [f.path for f in diff.files] == ["b.py"]


def test_root_commit_is_compared_with_empty_tree(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    diff = analyze_commit(root, "HEAD")
    assert any("root commit" in n for n in diff.notes)
    assert [(s.change, s.qualified_name) for s in diff.symbols] == [("added", "a")]


def test_pr_range_uses_merge_base(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    git(root, "checkout", "-q", "-b", "feature")
    (root / "a.py").write_text("def a():\n    return 10\n")
    _commit(root)
    git(root, "checkout", "-q", "main")
    (root / "z.py").write_text("def z():\n    return 0\n")
    _commit(root, "main moved on")
    diff = analyze_range(root, "main", "feature")
    assert [f.path for f in diff.files] == ["a.py"]  # main's own later change is not part of the PR
    assert any("merge base" in n for n in diff.notes)


def test_unknown_ref_and_shallow_clone_errors(make_repo, tmp_path: Path) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n"})
    with pytest.raises(RefNotFound) as err:
        analyze_diff(root, "no-such-branch")
    assert err.value.exit_code == 2
    for n in range(3):
        (root / "a.py").write_text(f"def a():\n    return {n + 2}\n")
        _commit(root)
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{root}", str(clone)], check=True)
    with pytest.raises(ShallowClone) as err:
        analyze_commit(clone, "HEAD")
    assert err.value.code == "DIFF_SHALLOW_CLONE"
    assert "git fetch --unshallow" in err.value.hint and "fetch-depth: 0" in err.value.hint


def test_json_and_toon_outputs_carry_the_changes(make_repo) -> None:
    root = make_repo({"app.py": BASE_APP})
    (root / "app.py").write_text(BASE_APP.replace("return key\n", "return key.upper()\n"))
    diff = analyze_diff(root)
    data = diff.to_json()
    assert data["summary"]["modified"] == 1
    assert data["files"][0]["symbols"][0]["qualified_name"] == "Store.get"
    toon = diff.to_toon()
    assert "Store.get" in toon and "modified" in toon
    assert "{" not in toon.splitlines()[0]  # TOON, not JSON


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    bodies=st.lists(
        st.sampled_from(
            ["return 1", "return x + 1", "x = x * 2\n    return x", "if x:\n        return 0\n    return x"]
        ),
        min_size=1,
        max_size=4,
    ),
    changed=st.data(),
)
def test_unchanged_symbols_are_never_reported(make_repo, bodies: list[str], changed: st.DataObject) -> None:
    """Invariant: only the functions whose text changed appear in the diff, as modified."""
    source = "".join(f"def f{i}(x):\n    {b}\n\n\n" for i, b in enumerate(bodies))
    root = make_repo({"m.py": source})
    touched = changed.draw(st.sets(st.integers(0, len(bodies) - 1)))
    new = "".join(
        f"def f{i}(x):\n    {b}{'  # edited' if i in touched else ''}\n\n\n" for i, b in enumerate(bodies)
    )
    (root / "m.py").write_text(new)
    diff = analyze_diff(root)
    assert {s.qualified_name for s in diff.symbols} == {f"f{i}" for i in touched}
    assert all(s.change == "modified" for s in diff.symbols)


def test_staged_target_reviews_only_what_the_next_commit_records(make_repo) -> None:
    root = make_repo({"a.py": "def a():\n    return 1\n", "b.py": "def b():\n    return 2\n"})
    (root / "a.py").write_text("def a():\n    return 10\n")
    git(root, "add", "a.py")
    (root / "b.py").write_text("def b():\n    return 20\n")  # changed but not staged
    (root / "c.py").write_text("def c():\n    return 3\n")  # untracked
    diff = analyze_diff(root, None, "STAGED")
    assert diff.target == "STAGED"
    assert [(s.change, s.qualified_name) for s in diff.symbols] == [("modified", "a")]


def test_callers_come_from_the_call_graph_when_the_index_is_current(make_repo) -> None:
    from engine.config import load_settings
    from engine.index.indexer import index_repository
    from engine.repo.layout import RepoLayout
    from engine.store.callers import index_callers

    root = make_repo({"app.py": BASE_APP, "main.py": MAIN})
    index_repository(RepoLayout.for_path(root), load_settings(root).settings)
    (root / "app.py").write_text(BASE_APP.replace("return json.load(fh)", "return json.loads(fh.read())"))
    load = _by_name(analyze_diff(root, caller_graph=index_callers(root)))["load"]
    assert [(c.file, c.symbol, c.via) for c in load.callers] == [("main.py", "run", "call graph")]
    # The diff itself never opens the index: without the store's lookup, the text search answers.
    load = _by_name(analyze_diff(root))["load"]
    assert [c.via for c in load.callers] == ["text search"]
    # Between two commits the index says nothing about the target: the text search answers.
    git(root, "commit", "-qam", "loads")
    load = _by_name(analyze_commit(root, "HEAD", caller_graph=index_callers(root)))["load"]
    assert [(c.file, c.via) for c in load.callers] == [("main.py", "text search")]


def test_javascript_new_effects_through_require_aliases(make_repo) -> None:
    before = "function handler(req, res) {\n  res.send('ok');\n}\nmodule.exports = { handler };\n"
    root = make_repo({"app.js": before})
    (root / "app.js").write_text(
        "const { exec } = require('child_process');\nconst fs = require('fs');\n"
        "function handler(req, res, next) {\n  exec('ls ' + req.query.dir);\n"
        "  fs.writeFileSync('/tmp/x', req.body);\n  fetch('https://example.com');\n  res.send('ok');\n}\n"
        "module.exports = { handler };\n"
    )
    handler = _by_name(analyze_diff(root))["handler"]
    assert handler.signature_changed
    assert {(c.category, c.line) for c in handler.new_external_calls} == {
        ("subprocess", 4),
        ("filesystem", 5),
        ("network", 6),
    }
    assert handler.risk_before == "low" and handler.risk_after == "high"


def test_huge_file_lists_lines_and_still_finds_a_secret(make_repo) -> None:
    from engine.review.secrets import scan_files

    body = "".join(f"VALUE_{i} = {i}\n" for i in range(60_000))  # ~1 MB of Python
    root = make_repo({"big.py": body})
    key = "AKIA" + "QWERTYUIOPASDFGH"
    (root / "big.py").write_text(body.replace("VALUE_30000 = 30000\n", f'AWS = "{key}"\n'))
    diff = analyze_diff(root)
    f = diff.files[0]
    assert "lines only" in (f.note or "") and f.symbols == ()
    assert (f.lines_added, f.lines_removed) == (1, 1)
    assert [x.line for x in scan_files(diff.files)] == [30001]


_TEMPLATES = st.sampled_from(
    [
        "x = 1",
        "return {n}",
        "def inner(a):\n    return a",
        "class Inner:\n    pass",
        "for k, {n} in x:\n    y = {n}",
        "try:\n    pass\nexcept IOError as e:\n    raise ValueError() from e",
        "s = '%s' % x",
        "s = '{}'.format(x)",
        "s = f'{x!r}'",
        "super(A, self).f()",
        "with open(p, 'r') as fh:\n    data = fh.read()",
        "global g",
        "lambda q: q",
        "@overload\ndef f(a: int) -> int: ...",
        "z: int",
        "{n} = x.{n}",
    ]
)
_NAMES = st.sampled_from(["v", "w"])


@given(st.lists(_TEMPLATES, min_size=1, max_size=5), _NAMES, _NAMES, st.lists(_TEMPLATES, max_size=2))
def test_code_comparison_is_total(
    templates: list[str], old_name: str, new_name: str, extra: list[str]
) -> None:
    """Fingerprints, renames and parameters never raise, whatever two definitions hold
    (the same statements with a name swapped, and with statements added)."""
    import textwrap

    before = [t.replace("{n}", old_name) for t in templates]
    after = [t.replace("{n}", new_name) for t in templates + extra]

    from engine.semantic import surface

    def wrap(lines: list[str]) -> str:
        return "def f(self, x, *a, p=1, **k):\n" + textwrap.indent("\n".join(lines), "    ") + "\n"

    old, new = wrap(before), wrap(after)
    cls_old = "class A(object):\n" + textwrap.indent(old, "    ")
    cls_new = "class A:\n" + textwrap.indent(new, "    ")
    assert (surface.python_fingerprint(cls_old) == surface.python_fingerprint(cls_new)) in (True, False)
    assert (surface.python_fingerprint(old) == surface.python_fingerprint(new)) in (True, False)
    renames = surface.python_rename_pairs(old, new)
    assert renames is None or all(a != b for a, b in renames.pairs)
    params = surface.python_params(old)
    assert params is not None and [p.name for p in params][:2] == ["self", "x"]
    assert surface.parameter_changes(params, params) == ()


def test_formatting_around_a_joined_line_end_is_compared_beneath_the_text(make_repo, caplog) -> None:
    # waitress edbe6b80: ``"%s\r\n" % "\r\n".join(lines)`` normalized to an f-string Python 3.11
    # cannot write; every review of the function warned "could not compare ... Unable to avoid
    # backslash in f-string expression part" and compared it by its text alone.
    before = (
        "def header(lines, name):\n"
        '    block = "%s\\r\\n" % "\\r\\n".join(lines)\n'
        '    return "{}: {}".format(name, "\\n".join(lines)) + block\n'
    )
    root = make_repo({"pkg/task.py": before})
    after = before.replace(
        "def header(lines, name):\n", "def header(lines, name):\n    lines = lines[:100]\n"
    )
    (root / "pkg/task.py").write_text(after)
    git(root, "commit", "-qam", "cap the lines")
    with caplog.at_level("WARNING"):
        diff = analyze_commit(root, "HEAD")
    assert "could not compare" not in caplog.text
    [change] = [s for f in diff.files for s in f.symbols]
    assert change.code_delta is not None and change.code_delta[0] == ("lines = lines[:100]",)
