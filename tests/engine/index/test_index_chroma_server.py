"""The Chroma server path: a real `chroma run` on 127.0.0.1, indexed and searched through HttpClient."""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from engine.config import load_settings
from engine.index.chroma import chroma_client, chroma_store, collection_name
from engine.index.hybrid import search
from engine.index.indexer import index_repository
from engine.index.vectors import VectorIndexer
from engine.repo.layout import RepoLayout
from tests.conftest import git, run_semfora
from tests.engine.index.conftest import AUTH_PY, README, ROUTES_PY

CHROMA = str(Path(sys.executable).with_name("chroma"))
# A cold `chroma run` on a busy 2-core machine takes a few seconds to bind.
STARTUP_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ChromaServer:
    """A real `chroma run` on 127.0.0.1 that a test can stop, restart and wipe (same port, same URL)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> ChromaServer:
        self.proc = subprocess.Popen(
            [CHROMA, "run", "--path", str(self.data), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                if httpx.get(f"{self.url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("chroma run did not start")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def wipe(self) -> None:
        """What an operator's reset does: the server comes back empty at the same address."""
        self.stop()
        shutil.rmtree(self.data)
        self.start()


@pytest.fixture
def chroma_server_control(tmp_path: Path) -> Iterator[ChromaServer]:
    server = ChromaServer(tmp_path / "chroma-data").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroma_server(chroma_server_control: ChromaServer) -> str:
    return chroma_server_control.url


def test_index_and_search_through_a_chroma_server(
    chroma_server, fake_ollama, monkeypatch, indexed_repo
) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", chroma_server)
    layout, _ = indexed_repo()
    settings = load_settings(layout.root).settings
    assert settings.search.chroma_url == chroma_server
    report = VectorIndexer(layout, settings).run()
    assert report.enabled and report.embedded > 0 and report.pending == 0
    assert not layout.chroma_dir.exists()  # nothing embedded locally
    client = chroma_client(chroma_store(layout, settings))
    assert type(client).__name__ != "PersistentClient"
    col = client.get_collection(collection_name(layout, "ollama:nomic-embed-text"))
    assert col.count() == report.embedded

    (layout.root / "app/routes.py").unlink()
    index_repository(layout, settings)
    again = VectorIndexer(layout, settings).run()
    assert again.deleted > 0 and col.count() == report.embedded - again.deleted

    hits = search(layout, settings, "strip the credentials of a request", mode="vector")
    assert hits and hits[0].file == "app/auth.py"
    assert all(h.sources["vector"] for h in hits) and all(h.sources["fts"] is None for h in hits)


def test_an_unreachable_chroma_server_turns_vectors_off(fake_ollama, monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", f"http://127.0.0.1:{_free_port()}")
    layout, _ = indexed_repo()
    settings = load_settings(layout.root).settings
    report = VectorIndexer(layout, settings).run()
    assert not report.enabled and "not reachable" in report.reason


def test_a_chroma_server_that_never_answers_does_not_hang(fake_ollama, monkeypatch, indexed_repo) -> None:
    from engine.index import chroma

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # accepts connections (kernel backlog) but never replies
    try:
        monkeypatch.setattr(chroma, "CHROMA_CONNECT_TIMEOUT", 0.5)
        monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
        monkeypatch.setenv("SEMFORA_CHROMA_URL", f"http://127.0.0.1:{listener.getsockname()[1]}")
        layout, _ = indexed_repo()
        settings = load_settings(layout.root).settings
        started = time.monotonic()
        report = VectorIndexer(layout, settings).run()
        assert not report.enabled and "not reachable" in report.reason
        assert time.monotonic() - started < 3
    finally:
        listener.close()


# --- what a user sees through the real command, against a real server -----------------------

FILES = {"app/auth.py": AUTH_PY, "app/routes.py": ROUTES_PY, "README.md": README}
VECTOR_QUERY = "strip the credentials of a request"


def _cli_env(tmp_path: Path, url: str | None) -> dict[str, str]:
    env = {"SEMFORA_EMBEDDING": "ollama:nomic-embed-text", "HOME": str(tmp_path / "home")}
    if url:
        env["SEMFORA_CHROMA_URL"] = url
    return env


def _json(proc: subprocess.CompletedProcess[str]) -> dict:
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def _index(root: Path, env: dict[str, str]) -> dict:
    proc = run_semfora("index", "--path", str(root), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    return _json(proc)["vectors"]


def _vector_files(root: Path, env: dict[str, str]) -> tuple[list[str], list[str]]:
    proc = run_semfora("search", VECTOR_QUERY, "--path", str(root), "--mode", "vector", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = _json(proc)
    return [r["file"] for r in data["results"] if r["sources"]["vector"]], data["warnings"]


def test_search_context_and_mcp_answer_without_vectors_when_the_server_is_stopped(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    root = make_repo(FILES)
    env = _cli_env(tmp_path, chroma_server_control.url)
    assert _index(root, env)["embedded"] > 0
    chroma_server_control.stop()

    proc = run_semfora("search", "strip authorization header", "--path", str(root), env=env)
    assert proc.returncode == 0 and "app/auth.py" in proc.stdout, proc.stderr
    assert proc.stderr.count("vector search is off for now") == 1 and "not reachable" in proc.stderr

    data = _json(run_semfora("search", "authorization", "--path", str(root), "--json", env=env))
    assert data["results"] and all(r["sources"]["vector"] is None for r in data["results"])
    assert len(data["warnings"]) == 1

    proc = run_semfora(
        "context", "where is the authorization header stripped", "--path", str(root), "--json", env=env
    )
    assert proc.returncode == 0, proc.stderr
    items = _json(proc)["items"]
    assert any(i["file"] == "app/auth.py" and i["kind"] != "overview" for i in items)

    vectors = _index(root, env)  # index carries on too, and says why vectors are off
    assert vectors["enabled"] is False and "not reachable" in vectors["reason"]
    assert not (tmp_path / "home" / ".cache" / "chroma").exists()  # chroma's default model never fetched


def test_a_wiped_server_is_noticed_reported_by_doctor_and_reembedded(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    root = make_repo(FILES)
    env = _cli_env(tmp_path, chroma_server_control.url)
    first = _index(root, env)["embedded"]
    assert _vector_files(root, env)[0][0] == "app/auth.py"
    chroma_server_control.wipe()

    files, warnings = _vector_files(root, env)
    assert files == [] and any("missing from the Chroma server" in w for w in warnings)

    doctor = _json(run_semfora("doctor", "--path", str(root), "--json", env=env))
    check = next(c for c in doctor["checks"] if c["name"] == "vectors")
    assert (
        check["status"] == "warn" and check["data"]["missing"] == first and check["code"] == "DOCTOR_VECTORS"
    )
    # It said the chunks were embedded in the server, then that all of them were missing from it.
    assert (
        f"{first} of {first} chunks were embedded with ollama:nomic-embed-text, but the Chroma server at "
        in (check["detail"])
    )
    assert check["detail"].endswith("holds none of them (wiped or replaced)"), check["detail"]

    again = _index(root, env)
    assert again["missing"] == first and again["embedded"] == first and "re-embedding" in again["message"]
    files, warnings = _vector_files(root, env)
    assert files[0] == "app/auth.py" and warnings == []
    assert _index(root, env)["embedded"] == 0  # verified and complete: nothing more to do


def test_switching_an_embedded_index_to_a_server_reembeds_and_says_so(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    root = make_repo(FILES)
    local = _cli_env(tmp_path, None)
    first = _index(root, local)["embedded"]
    server = _cli_env(tmp_path, chroma_server_control.url)

    files, warnings = _vector_files(root, server)
    assert files == [] and any("built in the embedded store" in w for w in warnings)
    # doctor said the chunks were embedded in the server and all missing from it: they are where
    # they were written, and setting the URL back would use them.
    doctor = _json(run_semfora("doctor", "--path", str(root), "--json", env=server))
    check = next(c for c in doctor["checks"] if c["name"] == "vectors")
    assert check["code"] == "DOCTOR_VECTORS" and check["data"]["recorded_store"].startswith("embedded:")
    assert "were embedded with ollama:nomic-embed-text in the embedded store at " in check["detail"]
    assert f"not in the Chroma server at {chroma_server_control.url}" in check["detail"], check["detail"]
    assert "unset SEMFORA_CHROMA_URL" in check["fix"] and "missing" not in check["detail"]
    back = _json(run_semfora("doctor", "--path", str(root), "--json", env=local))
    assert next(c for c in back["checks"] if c["name"] == "vectors")["status"] == "ok"

    moved = _index(root, server)
    assert moved["embedded"] == first and moved["missing"] == first
    assert "vector store changed from the embedded store" in moved["message"]
    assert _vector_files(root, server)[0][0] == "app/auth.py"
    assert _vector_files(root, server)[1] == []


def test_two_clones_on_one_server_keep_their_own_vectors(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    first = make_repo(FILES)
    second = make_repo(FILES)
    for root in (first, second):  # two clones of one remote
        git(root, "remote", "add", "origin", "https://example.invalid/team/app.git")
    env = _cli_env(tmp_path, chroma_server_control.url)
    _index(first, env)
    (second / "app/auth.py").unlink()
    _index(second, env)

    assert _vector_files(first, env)[0][0] == "app/auth.py"
    assert "app/auth.py" not in _vector_files(second, env)[0]
    names = {c.name for c in chromadb_client(chroma_server_control.url).list_collections()}
    assert len([n for n in names if n.startswith("sf-chunks-")]) == 2


def chromadb_client(url: str):
    import chromadb

    port = int(url.rsplit(":", 1)[1])
    return chromadb.HttpClient(host="127.0.0.1", port=port)


def test_a_second_ask_and_context_with_vectors_on_a_server(
    chroma_server_control, fake_ollama, fake_anthropic, make_repo, tmp_path
) -> None:
    root = make_repo(FILES)
    env = _cli_env(tmp_path, chroma_server_control.url)
    _index(root, env)
    for _ in range(2):
        fake_anthropic.reply("The middleware strips the Authorization header in `should_strip_auth`.")
        proc = run_semfora(
            "ask", "explain how the authorization header is stripped", "--path", str(root), env=env
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    names = {c.name for c in chromadb_client(chroma_server_control.url).list_collections()}
    assert not any(n.startswith("sf-turns-") for n in names)  # turn memory keeps its own vectors
    layout = RepoLayout.for_path(root)
    assert not layout.chroma_dir.exists()  # nothing written to a local store
    assert list(layout.cache_dir.rglob("turn_vectors.jsonl"))  # the two turns' vectors, beside the log


def test_a_second_ask_and_context_with_embedded_vectors_do_not_crash(
    fake_ollama, fake_anthropic, make_repo, tmp_path, monkeypatch
) -> None:
    """Turn memory and the index share the process's one embedded client (it used to open a second one)."""
    monkeypatch.delenv("ANONYMIZED_TELEMETRY", raising=False)  # as in a user's shell
    root = make_repo(FILES)
    env = _cli_env(tmp_path, None)
    _index(root, env)
    for _ in range(2):
        fake_anthropic.reply("The middleware strips the Authorization header in `should_strip_auth`.")
        proc = run_semfora(
            "ask", "explain how the authorization header is stripped", "--path", str(root), env=env
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        proc = run_semfora(
            "context",
            "explain how the authorization header is stripped",
            "--path",
            str(root),
            "--json",
            env=env,
        )
        assert proc.returncode == 0 and _json(proc)["items"], proc.stderr
    assert not (tmp_path / "home" / ".cache" / "chroma").exists()


MANY = {f"pkg/m{i}.py": f"def func_{i}(a):\n    return a + {i}\n" for i in range(40)}


def test_a_server_stopped_mid_build_keeps_the_count_says_what_is_left_and_resumes(
    chroma_server_control, fake_ollama, monkeypatch, indexed_repo
) -> None:
    """The build used to end 'vectors off (... stopped answering)': the 32 chunks it had embedded,
    the ones left and how to finish were not said."""
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", chroma_server_control.url)
    layout, _ = indexed_repo(MANY)
    settings = load_settings(layout.root).settings

    def progress(message: str, done: int, total: int) -> None:
        if done >= 32 and chroma_server_control.proc is not None:
            chroma_server_control.stop()

    report = VectorIndexer(layout, settings).run(progress=progress)
    assert report.enabled and report.embedded == 32 and report.pending == report.total - 32
    assert "stopped answering" in report.message
    assert f"{report.pending} chunks are not embedded yet" in report.message
    assert "semfora index" in report.message

    chroma_server_control.start()
    from engine.index.chroma import reset_clients

    reset_clients()
    again = VectorIndexer(layout, settings).run()
    assert again.embedded == report.pending and again.pending == 0


def test_ollama_refusing_mid_build_is_an_embedding_stop_not_a_chroma_one(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """An error answer from Ollama (a model removed mid-build) was reported as the Chroma store
    having stopped answering."""
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    layout, _ = indexed_repo(MANY)
    settings = load_settings(layout.root).settings

    def progress(message: str, done: int, total: int) -> None:
        if done >= 32:
            fake_ollama.strict_models = True
            fake_ollama.models = ["qwen2.5-coder:7b"]  # `ollama rm nomic-embed-text`

    report = VectorIndexer(layout, settings).run(progress=progress)
    assert report.enabled and report.embedded == 32 and report.pending > 0
    assert "embedding stopped" in report.message and "not found" in report.message
    assert "Chroma" not in report.message and "stopped answering" not in report.message


def test_index_says_a_store_switch_once(chroma_server_control, fake_ollama, make_repo, tmp_path) -> None:
    """It was said three times: two `warning:` lines, then the same as `vectors: a; b`."""
    root = make_repo(FILES)
    first = _index(root, _cli_env(tmp_path, None))["embedded"]
    proc = run_semfora("index", "--path", str(root), env=_cli_env(tmp_path, chroma_server_control.url))
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("vector store changed from the embedded store") == 1, proc.stderr
    assert proc.stderr.count(f"{first} of {first} embedded chunks were missing") == 1, proc.stderr
    assert re.search(
        rf"in [\d.]+s; vectors: {first} embedded in [\d.]+s \(ollama:nomic-embed-text\)", proc.stdout
    )


def test_a_server_url_with_or_without_its_scheme_is_one_store(
    chroma_server_control, fake_ollama, monkeypatch, indexed_repo
) -> None:
    """`127.0.0.1:PORT` then `http://127.0.0.1:PORT/` was announced as a switch of store, and every
    id of the collection was listed again to check it."""
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    bare = chroma_server_control.url.removeprefix("http://")
    monkeypatch.setenv("SEMFORA_CHROMA_URL", bare)
    layout, _ = indexed_repo()
    assert VectorIndexer(layout, load_settings(layout.root).settings).run().embedded > 0
    monkeypatch.setenv("SEMFORA_CHROMA_URL", chroma_server_control.url + "/")
    again = VectorIndexer(layout, load_settings(layout.root).settings).run()
    assert again.embedded == 0 and "changed" not in again.message, again.message
    assert again.store == f"server:{chroma_server_control.url}"


def test_doctor_probes_the_server_index_uses_and_names_its_port(
    chroma_server_control, monkeypatch, make_repo
) -> None:
    """Written as HOST:PORT (which index and search accept), the server failed doctor with
    'UnsupportedProtocol'; and a server down was to be started on port 8000 whatever the URL said."""
    from engine.doctor import run_doctor

    root = make_repo(FILES)
    monkeypatch.setenv("SEMFORA_CHROMA_URL", chroma_server_control.url.removeprefix("http://"))
    chroma = next(c for c in run_doctor(root, network=True).checks if c.name == "chroma")
    assert chroma.status == "ok", chroma.detail
    port = _free_port()
    monkeypatch.setenv("SEMFORA_CHROMA_URL", f"127.0.0.1:{port}")
    chroma = next(c for c in run_doctor(root, network=True).checks if c.name == "chroma")
    assert chroma.status == "fail" and f"--port {port}" in (chroma.fix or ""), chroma.fix


@pytest.fixture
def vector_service(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The shared query service switched on for this test's commands, stopped at the end."""
    from engine.index.query_client import stop_service

    monkeypatch.setenv("SEMFORA_SEARCH__VECTOR_SERVICE", "auto")
    try:
        yield {"SEMFORA_SEARCH__VECTOR_SERVICE": "auto"}
    finally:
        stop_service()


def test_a_server_wiped_under_a_warm_searcher_says_so_and_vector_mode_still_answers(
    chroma_server_control, fake_ollama, vector_service, make_repo, tmp_path
) -> None:
    """The query service (like the app) keeps the collection it opened. After the server was wiped,
    `search --mode vector` printed "no results" with "the Chroma server ... stopped answering:
    Collection [<uuid>] does not exist.", and for the next 15 s every search said only that bare
    line. The server answered all along: the collection is missing, and `semfora index` fixes it."""
    root = make_repo(FILES)
    env = {**_cli_env(tmp_path, chroma_server_control.url), **vector_service}
    _index(root, env)
    assert _vector_files(root, env)[0][0] == "app/auth.py"  # the service holds the collection now
    chroma_server_control.wipe()

    for _ in range(2):
        proc = run_semfora("search", VECTOR_QUERY, "--path", str(root), "--mode", "vector", "--json", env=env)
        assert proc.returncode == 0, proc.stderr
        data = _json(proc)
        assert [r["file"] for r in data["results"]][:1] == ["app/auth.py"]  # full text answered
        assert all(r["sources"]["vector"] is None for r in data["results"])
        (warning,) = data["warnings"]
        assert "missing from the Chroma server" in warning and "run `semfora index`" in warning, warning
        assert "stopped answering" not in warning and "does not exist" not in warning, warning
        assert "showing full-text and symbol results instead" in warning


def test_a_rebuild_on_a_server_is_searched_at_once_by_a_warm_searcher(
    chroma_server_control, fake_ollama, vector_service, make_repo, tmp_path
) -> None:
    """`semfora index --rebuild` makes the server's collection again under its name. The query
    service (like the app) still held the old one: the first search after the rebuild had no vector
    results and said the collection was missing (before: that the server stopped answering)."""
    root = make_repo(FILES)
    env = {**_cli_env(tmp_path, chroma_server_control.url), **vector_service}
    _index(root, env)
    assert _vector_files(root, env)[0][0] == "app/auth.py"
    proc = run_semfora("index", "--rebuild", "--path", str(root), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rebuilt = _json(proc)["vectors"]  # the vectors of unchanged chunks are kept, none embedded again
    assert rebuilt["pending"] == 0 and rebuilt["current"] == rebuilt["total"] and "kept" in rebuilt["message"]
    files, warnings = _vector_files(root, env)
    assert files[:1] == ["app/auth.py"] and warnings == []


def test_index_with_the_server_stopped_counts_what_the_index_holds(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    """`index --json` with the server down said `total: 0, pending: 0`: nothing left to embed, as if
    the repository had no chunks, where a script needed to know that a file was still not embedded."""
    root = make_repo(FILES)
    env = _cli_env(tmp_path, chroma_server_control.url)
    built = _index(root, env)
    chroma_server_control.stop()
    (root / "app/billing.py").write_text("def charge(invoice):\n    return invoice.total\n", encoding="utf-8")
    down = _index(root, env)
    assert down["enabled"] is False and "not reachable" in down["reason"]
    assert down["total"] == built["total"] + 1 and down["current"] == built["total"]
    assert down["pending"] == 1 and down["missing"] is None  # the store could not be looked at
    assert down["store"] == f"server:{chroma_server_control.url}"


def test_doctor_after_switching_back_to_a_store_that_holds_the_vectors(
    chroma_server_control, fake_ollama, make_repo, tmp_path
) -> None:
    """Back on the embedded store after a spell on a server, doctor said the vectors were "not in the
    embedded store" and told the user to embed them there, where every one of them still was."""
    root = make_repo(FILES)
    embedded = _cli_env(tmp_path, None)
    built = _index(root, embedded)
    _index(root, _cli_env(tmp_path, chroma_server_control.url))  # now recorded in the server
    proc = run_semfora("doctor", "--path", str(root), "--json", env=embedded)
    check = next(c for c in _json(proc)["checks"] if c["name"] == "vectors")
    assert check["status"] == "ok", check
    assert check["data"]["missing"] == 0 and check["data"]["embedded"] == built["current"]
    assert "records the switch" in check["detail"]
    assert _index(root, embedded)["embedded"] == 0  # and indeed nothing needed embedding
