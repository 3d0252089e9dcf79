"""An embedded vector store is written by a child process that never held a credential.

Chroma's HNSW files can carry whatever the writing process's memory held (docs/security.md), so
``build_vectors`` runs the embedded build in ``python -m engine.index.vector_writer`` with the
credential variables removed, and relays its progress, its report, its errors and a cancel.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engine.errors import EmbeddingUnavailable, SemforaError
from engine.index import vectors
from engine.index.chroma import chroma_client, chroma_store, collection_name
from engine.index.hybrid import search
from engine.index.vector_writer import build_vectors
from tests.conftest import run_semfora

# Two Ollama batches (32 + 8 chunks), so a build can be stopped between them.
FORTY_CHUNKS = {f"pkg/m{i}.py": f"def func_{i}(a):\n    return a + {i}\n" for i in range(40)}
PLANTED = "sk-ant-api03-" + "Q" * 40 + "writerTEST"


def _writer_children() -> list[int]:
    """Live children of this process running the vector writer."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = next((line.split()[1] for line in status.splitlines() if line.startswith("PPid:")), "")
        if ppid == str(os.getpid()) and b"engine.index.vector_writer" in cmdline:
            found.append(int(entry.name))
    return found


def _use_ollama(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setenv("ANTHROPIC_API_KEY", PLANTED)


def test_an_embedded_store_is_written_by_a_child_without_the_api_key(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    _use_ollama(monkeypatch)
    layout, settings = indexed_repo()
    environments: list[bytes] = []
    record = fake_ollama.record

    def record_and_look(request) -> None:  # noqa: ANN001 - runs in the fake server's thread
        if request.path == "/api/embed":
            for pid in _writer_children():
                try:
                    environments.append(Path(f"/proc/{pid}/environ").read_bytes())
                except OSError:
                    continue
        record(request)

    monkeypatch.setattr(fake_ollama, "record", record_and_look)
    steps: list[tuple[str, int, int]] = []
    report = build_vectors(layout, settings, progress=lambda p, d, t: steps.append((p, d, t)))
    assert report.enabled and report.embedded > 0 and report.pending == 0
    assert steps and steps[-1][1] == steps[-1][2] == report.embedded  # progress relayed with counts
    assert environments, "the embedding requests must come from the writer child"
    assert all(b"ANTHROPIC_API_KEY=" not in env and PLANTED.encode() not in env for env in environments)
    assert all(b"OLLAMA_HOST=" in env for env in environments)  # the rest of the environment is kept
    assert os.environ["ANTHROPIC_API_KEY"] == PLANTED  # this process keeps its own
    for path in layout.chroma_dir.rglob("*"):
        if path.is_file():
            assert PLANTED.encode() not in path.read_bytes(), path
    # This process reads what the child wrote.
    hits = search(layout, settings, "send the client to another location", mode="vector")
    assert hits and hits[0].symbol == "redirect"


def test_a_cancel_stops_the_child_after_its_batch_and_the_next_build_resumes(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    _use_ollama(monkeypatch)
    layout, settings = indexed_repo(FORTY_CHUNKS)
    cancel = threading.Event()

    def progress(_phase: str, done: int, _total: int) -> None:
        if done >= 32:
            cancel.set()

    first = build_vectors(layout, settings, progress=progress, cancel=cancel)
    assert first.cancelled and first.pending > 0 and first.embedded >= 32
    second = build_vectors(layout, settings)
    assert second.embedded == first.pending and not second.cancelled and second.pending == 0
    assert _writer_children() == []


def test_an_error_in_the_child_comes_back_as_the_same_typed_error(
    monkeypatch, indexed_repo, tmp_path
) -> None:
    layout, settings = indexed_repo()
    monkeypatch.setenv("SEMFORA_EMBEDDING", f"sentence-transformers:{tmp_path / 'no-such-model'}")
    from engine.config import load_settings

    settings = load_settings(layout.root).settings
    with pytest.raises(EmbeddingUnavailable) as caught:
        build_vectors(layout, settings)
    assert caught.value.exit_code == 2 and "no-such-model" in caught.value.message


def test_a_child_killed_mid_build_is_a_clear_error_and_nothing_is_left_running(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    _use_ollama(monkeypatch)
    layout, settings = indexed_repo(FORTY_CHUNKS)

    def progress(_phase: str, done: int, _total: int) -> None:
        if done > 0:
            for pid in _writer_children():
                os.kill(pid, signal.SIGKILL)

    with pytest.raises(SemforaError, match=r"ended without an answer \(exit -9\)"):
        build_vectors(layout, settings, progress=progress)
    assert _writer_children() == []
    # The chunks embedded before the kill stay recorded; the next build embeds the rest.
    again = build_vectors(layout, settings)
    assert again.pending == 0 and again.embedded > 0


def _hnsw_files(layout) -> dict[str, tuple[int, int, str]]:  # noqa: ANN001
    """The embedded store's HNSW files as written: inode, mtime and content digest."""
    found = {}
    for path in sorted(layout.chroma_dir.rglob("*.bin")):
        stat = path.stat()
        found[str(path.relative_to(layout.chroma_dir))] = (
            stat.st_ino,
            stat.st_mtime_ns,
            hashlib.sha256(path.read_bytes()).hexdigest(),
        )
    return found


def _vector_search_in_a_fresh_process(layout, query: str) -> list[dict]:  # noqa: ANN001
    """`semfora search --mode vector` as its own process, with the API key in its environment."""
    proc = run_semfora("search", query, "--path", str(layout.root), "--mode", "vector", "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return [r for r in json.loads(proc.stdout)["results"] if r["sources"]["vector"]]


@pytest.mark.parametrize("store", ["built now", "one chunk", "two batches", "made by an older semfora"])
def test_a_process_that_only_reads_the_embedded_store_writes_none_of_its_files(
    store: str, fake_ollama, monkeypatch, indexed_repo
) -> None:
    """Chroma rebuilds and writes HNSW files that were never persisted, from any process that opens
    them, ``length.bin`` from memory it never clears: the app or `ask` would write their key there.
    After a build, readers (which hold the key) must only load what the writer child left."""
    _use_ollama(monkeypatch)
    if store == "one chunk":
        layout, settings = indexed_repo({"app/redirect.py": "def redirect(client):\n    return client\n"})
        query = "redirect"
    elif store == "two batches":
        # The first batch makes the sync point; the second stays in Chroma's log, which readers
        # replay in memory.
        layout, settings = indexed_repo(FORTY_CHUNKS)
        query = "add seven to a"
    else:
        layout, settings = indexed_repo()
        query = "send the client to another location"
    if store == "made by an older semfora":
        # Its collection kept Chroma's default threshold (1,000 changes between sync points).
        old_build = (
            "import sys\n"
            "from engine.config import load_settings\n"
            "from engine.index import vectors\n"
            "from engine.repo.layout import RepoLayout\n"
            "vectors.COLLECTION_METADATA = {'hnsw:space': 'cosine'}\n"
            "vectors._FirstSync.begin = lambda self, collection: collection\n"
            "vectors._FirstSync.wrote = lambda self, count, collection: collection\n"
            "vectors._FirstSync.finish = lambda self, collection: None\n"
            "layout = RepoLayout.for_path(sys.argv[1])\n"
            "assert vectors.VectorIndexer(layout, load_settings(layout.root).settings).run().embedded\n"
        )
        subprocess.run([sys.executable, "-c", old_build, str(layout.root)], check=True, timeout=120)
        before = _hnsw_files(layout)
        _vector_search_in_a_fresh_process(layout, query)
        assert _hnsw_files(layout) != before, "the old store is rebuilt by readers: the test must see it"
        assert build_vectors(layout, settings).embedded == 0  # nothing to embed; the store is settled
    else:
        report = build_vectors(layout, settings)
        assert report.pending == 0 and report.embedded == report.total
        if store == "one chunk":
            assert report.total == 1
    written = _hnsw_files(layout)
    assert written, "the writer must leave HNSW files"
    for _ in range(2):
        assert _vector_search_in_a_fresh_process(layout, query)
        assert _hnsw_files(layout) == written
    # The first sync point made, later builds sync at Chroma's default pace again.
    collection = chroma_client(chroma_store(layout, settings)).get_collection(
        collection_name(layout, "ollama:nomic-embed-text"), embedding_function=None
    )
    assert collection.configuration["hnsw"]["sync_threshold"] == vectors.SYNC_THRESHOLD
