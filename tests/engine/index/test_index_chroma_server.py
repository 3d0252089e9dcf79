"""The Chroma server path: a real `chroma run` on 127.0.0.1, indexed and searched through HttpClient."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from engine.config import load_settings
from engine.index.hybrid import search
from engine.index.chroma import chroma_client, chroma_store, collection_name
from engine.index.vectors import VectorIndexer
from engine.store.indexer import index_repository

CHROMA = str(Path(sys.executable).with_name("chroma"))
# A cold `chroma run` on a busy 2-core machine takes a few seconds to bind.
STARTUP_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def chroma_server(tmp_path: Path):
    port = _free_port()
    proc = subprocess.Popen(
        [CHROMA, "run", "--path", str(tmp_path / "chroma-data"), "--host", "127.0.0.1", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_SECONDS
    try:
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail("chroma run did not start")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


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
