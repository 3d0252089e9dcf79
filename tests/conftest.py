"""Shared fixtures: isolated XDG directories and small real git repositories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEMFORA = str(Path(sys.executable).with_name("semfora"))

pytest_plugins = ["tests.fakes.fixtures"]


# The caches a careless test could write to, fixed before any test moves XDG_CACHE_HOME.
REAL_CACHES = tuple(
    dict.fromkeys(
        Path(base) / "semfora"
        for base in (os.environ.get("XDG_CACHE_HOME") or "", str(Path.home() / ".cache"))
        if base
    )
)


def _entries(caches: tuple[Path, ...]) -> set[tuple[Path, str]]:
    found: set[tuple[Path, str]] = set()
    for cache in caches:
        try:
            found |= {(cache, name) for name in os.listdir(cache)}
        except OSError:
            continue
    return found


def _our_repo_ids(temp_root: Path, names: set[str]) -> set[str]:
    """Cache-directory names of this session's repositories among ``names`` (their slug matches a dir)."""
    from engine.repo.layout import RepoLayout

    slugs = {name.rsplit("-", 1)[0] for name in names}
    ids: set[str] = set()
    for dirpath, dirnames, _files in os.walk(temp_root):
        for d in list(dirnames):
            if d in slugs:
                ids.add(RepoLayout(Path(dirpath) / d).repo_id)
        dirnames[:] = [d for d in dirnames if d not in (".git", "node_modules")]
    return ids & names


@pytest.fixture(autouse=True)
def _no_writes_to_the_real_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """Fail any test after which one of this session's repositories has state in the real
    ~/.cache/semfora (a subprocess that lost XDG_CACHE_HOME). Other processes on the machine
    writing there are not blamed: only directories of repositories under this session's temp
    root count."""
    before = _entries(REAL_CACHES)
    yield
    new = _entries(REAL_CACHES) - before
    if not new:
        return
    temp_root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        temp_root = temp_root.parent  # every worker's repositories
    ours = _our_repo_ids(temp_root, {name for _cache, name in new})
    if ours:
        where = ", ".join(sorted(str(cache / name) for cache, name in new if name in ours))
        pytest.fail(f"{request.node.nodeid} wrote to the real cache: {where}")


@pytest.fixture(autouse=True)
def _isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own cache/config home and no real credentials or services."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    for var in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_BASE_URL",
        "SEMFORA_MODEL",
        "SEMFORA_CHROMA_URL",
        "SEMFORA_BUDGET",
    ):
        monkeypatch.delenv(var, raising=False)
    # Nothing listens here: services are "down" unless a test starts a fake one.
    monkeypatch.setenv("OLLAMA_HOST", "http://127.0.0.1:9")
    monkeypatch.setenv("SEMFORA_EMBEDDING", "none")
    # No background vector query service outliving a test; its own tests switch it on.
    monkeypatch.setenv("SEMFORA_SEARCH__VECTOR_SERVICE", "off")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("ANONYMIZED_TELEMETRY", "False")


def git(root: Path, *args: str) -> str:
    env = dict(os.environ)
    env.update(
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@example.com",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@example.com",
    )
    proc = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=True
    )
    return proc.stdout


RepoFactory = Callable[..., Path]


@pytest.fixture
def make_repo(tmp_path: Path) -> RepoFactory:
    """Create a git repository from ``{relative_path: text}`` and commit it."""

    counter = {"n": 0}

    def factory(files: dict[str, str | bytes], *, commit: bool = True, git_init: bool = True) -> Path:
        counter["n"] += 1
        root = tmp_path / f"repo{counter['n']}"
        root.mkdir()
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        if git_init:
            git(root, "init", "-q", "-b", "main")
            if commit:
                git(root, "add", "-A")
                git(root, "commit", "-q", "-m", "initial")
        return root

    return factory


def run_semfora(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    input: str | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """Run the real `semfora` console script."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    return subprocess.run(
        [SEMFORA, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=full_env,
        input=input,
        timeout=timeout,
        check=False,
    )


def run_fresh_python(code: str, *args: str, cache: Path) -> Any:
    """Run ``code`` in a fresh interpreter (no thread of this test process in it) with its own
    cache directory, and return the JSON it prints last."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(cache)},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])
