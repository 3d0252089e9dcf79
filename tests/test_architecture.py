"""The engine's floors hold: the import contract passes, can fail, and the docs list the same floors.

The contract is ``[tool.importlinter]`` in pyproject.toml (run by ``lint-imports``, the first
step of ``make test``). These tests run the real ``lint-imports`` of this environment: on the
repository (it must pass), and on a copy of the source tree with a back-arrow added (it must
fail and name the broken contract), so a contract that no longer checks anything is caught.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
PACKAGES = ("engine", "semfora_tui", "semfora_cli")
# docs/architecture.md keeps the floor list between these two markers, one layer a line.
DOC_BEGIN = "<!-- layers:begin (checked against pyproject.toml by tests/test_architecture.py) -->"
DOC_END = "<!-- layers:end -->"


def _contracts() -> list[dict]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return config["tool"]["importlinter"]["contracts"]


def _lint_imports(cwd: Path) -> subprocess.CompletedProcess[str]:
    assert LINT_IMPORTS.is_file(), f"import-linter is not installed in this environment ({LINT_IMPORTS})"
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(cwd), "HOME": str(cwd)},
    )


def _copy_tree(dest: Path) -> Path:
    """The packages and the contract, copied to ``dest`` (never the repository itself)."""
    for package in PACKAGES:
        if (ROOT / package).is_dir():
            shutil.copytree(ROOT / package, dest / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


def test_the_import_contract_holds() -> None:
    proc = _lint_imports(ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout
    # An optional layer ("(engine.api) | (engine.tools)": the front door's name may change) must
    # still name something: a floor whose every alternative is gone would check nothing.
    (layers,) = [c for c in _contracts() if c["id"] == "layers"]
    for layer in layers["layers"]:
        names = [n.strip() for n in layer.split("|")]
        optional = [n.strip("()") for n in names if n.startswith("(")]
        if optional and len(optional) == len(names):
            paths = [ROOT / Path(*n.split(".")) for n in optional]
            assert any(p.is_dir() or p.with_suffix(".py").is_file() for p in paths), layer


@pytest.mark.parametrize(
    ("module", "source", "contracts"),
    [
        # The semantic floor is pure: reading the store from it is the arrow issue 15 removed.
        # (and through the store it would reach sqlite3: the pure-semantic contract sees that too).
        ("engine/semantic/_tmp_backarrow.py", "import engine.store.db\n", ("layers", "pure-semantic")),
        # The ground floor uses nothing above it.
        ("engine/repo/_tmp_backarrow.py", "from engine.config import Settings\n", ("layers",)),
        # Models and the search index are siblings (they share engine.services, not each other).
        ("engine/llm/_tmp_backarrow.py", "from engine.index import fts\n", ("layers", "siblings")),
        # The semantic floor is pure: no database (the overview moved up into the store for this).
        ("engine/semantic/_tmp_backarrow.py", "import sqlite3\n", ("pure-semantic",)),
        # The engine never imports a face.
        ("engine/_tmp_backarrow.py", "import textual\n", ("faces",)),
        # Inside the store, symbol search sits below the read API (the circle issue 15 removed).
        ("engine/store/symbol_search.py", "from engine.store import db\n", ("store",)),
        # The text-index pipeline sits below the indexer (the circle issue 15 removed).
        ("engine/index/pipeline.py", "from engine.index import indexer\n", ("indexing",)),
        # The vector searcher asks the service through its client, never the server module (the
        # lazy circle issue 15 removed), and the light runtime never reaches back into the providers.
        ("engine/index/vectors.py", "from engine.index import query_service\n", ("vector-service",)),
        ("engine/index/minilm.py", "from engine.index import embeddings\n", ("embedders",)),
        # The app never imports the command line (the command line opens the app, not back).
        ("semfora_tui/_tmp_backarrow.py", "import semfora_cli.output\n", ("layers",)),
        # The engine never calls back into the command line.
        ("engine/_tmp_backarrow.py", "import semfora_cli.main\n", ("faces",)),
        # The orchestrator sits under the front door, not over it.
        ("engine/orchestrator/_tmp_backarrow.py", "import engine.api\n", ("layers",)),
        # The read floor sits under the orchestrator: it never calls back into a turn.
        ("engine/query/_tmp_backarrow.py", "import engine.orchestrator.core\n", ("layers",)),
        # The orchestrator reads the index through the read floor, never the store directly
        # (a sideways arrow the floors alone allow: the store is below both).
        ("engine/orchestrator/context/_tmp_backarrow.py", "import engine.store.db\n", ("read-floor",)),
        ("engine/orchestrator/_tmp_backarrow.py", "from engine.index import hybrid\n", ("read-floor",)),
    ],
)
def test_a_back_arrow_breaks_the_contract(
    tmp_path: Path, module: str, source: str, contracts: tuple[str, ...]
) -> None:
    tree = _copy_tree(tmp_path / "tree")
    assert _lint_imports(tree).returncode == 0, "the copied tree should pass before the back-arrow"
    target = tree / module
    before = target.read_text(encoding="utf-8") if target.exists() else ""
    target.write_text(before + source, encoding="utf-8")  # a new module, or an import appended
    proc = _lint_imports(tree)
    report = " ".join(proc.stdout.split())  # lint-imports wraps long lines
    names = {c["id"]: c["name"] for c in _contracts()}
    assert proc.returncode != 0, proc.stdout
    for contract in contracts:
        assert f"{names[contract]} BROKEN" in report, proc.stdout
    assert f"{len(contracts)} broken" in report, proc.stdout  # and no other contract
    dotted = module.removesuffix(".py").replace("/", ".")
    assert dotted in report, proc.stdout  # the report names the offending module
    original = ROOT / module  # the repository itself is never touched
    assert not original.exists() or not original.read_text(encoding="utf-8").endswith(source)


def _doc_layers() -> list[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert DOC_BEGIN in text and DOC_END in text, "docs/architecture.md lost its layer list markers"
    block = text.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0]
    lines = [line.strip() for line in block.strip().strip("`").splitlines()]
    return [re.sub(r"\s+", " ", line) for line in lines if line and not line.startswith("```")]


def test_the_architecture_doc_lists_the_contract_layers() -> None:
    (layers,) = [c for c in _contracts() if c["id"] == "layers"]
    assert _doc_layers() == [re.sub(r"\s+", " ", layer) for layer in layers["layers"]]


# Settings the environment may set: the well-known aliases and SEMFORA_SECTION__KEY.
_SETTING_READ = re.compile(r"""\b(?:environ|env)(?:\.get)?[(\[]\s*["'](OLLAMA_HOST|SEMFORA_[A-Z0-9_]+)["']""")


def test_only_config_reads_settings_from_the_environment() -> None:
    """``SEMFORA_CHROMA_URL``, ``OLLAMA_HOST``, ``SEMFORA_MODEL``...: read in engine/config.py only,
    everyone else takes them from ``Settings`` (or ``config.named_by_environment``)."""
    offenders = []
    for path in sorted((ROOT / "engine").rglob("*.py")):
        if path == ROOT / "engine" / "config.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _SETTING_READ.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_git_command_goes_through_the_git_module() -> None:
    """One home for git: engine/repo/git.py runs every git process of the engine and of the faces
    (the app and the command line ask the engine, e.g. ``api.branch_name``, never git itself)."""
    spawn = re.compile(r"""\[\s*(?:git|["']git["'])\s*,""")
    offenders = []
    sources = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    for path in sources:
        if path == ROOT / "engine" / "repo" / "git.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if spawn.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not offenders, "\n".join(offenders)
