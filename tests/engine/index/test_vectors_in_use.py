"""Vectors as a user lives with them: skipped, deleted, restarted, switched; always said, never lost."""

from __future__ import annotations

import json
import shutil

from engine.repo.layout import RepoLayout
from tests.conftest import run_semfora
from tests.engine.index.conftest import AUTH_PY, README, ROUTES_PY

FILES = {"app/auth.py": AUTH_PY, "app/routes.py": ROUTES_PY, "README.md": README}
ENV = {"SEMFORA_EMBEDDING": "ollama:nomic-embed-text"}


def _index_json(root, *extra: str) -> dict:
    proc = run_semfora("index", "--path", str(root), "--json", *extra, env=ENV)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def test_index_no_vectors_json_still_says_what_the_index_holds(fake_ollama, make_repo) -> None:
    """`index --no-vectors --json` gave only `{"enabled": false, "reason": "--no-vectors"}`: a script
    could not tell whether the repository had vectors, nor how many chunks lacked them."""
    root = make_repo(FILES)
    built = _index_json(root)["vectors"]
    assert built["enabled"] and built["pending"] == 0
    assert built["current"] == built["total"] > 0

    (root / "app/billing.py").write_text("def charge(invoice):\n    return invoice.total\n", encoding="utf-8")
    skipped = _index_json(root, "--no-vectors")["vectors"]
    assert skipped["enabled"] is False and skipped["reason"] == "--no-vectors"
    assert skipped["provider"] == "ollama:nomic-embed-text"
    assert skipped["embedded"] == 0  # none this run
    assert skipped["total"] == built["total"] + 1
    assert skipped["current"] == built["total"] and skipped["pending"] == 1
    assert skipped["missing"] is None  # the store was not opened
    assert skipped["store"] == built["store"]
    assert "semfora index" in skipped["message"]

    # The store deleted under it: seen without opening Chroma, and counted as missing.
    shutil.rmtree(RepoLayout.for_path(root).chroma_dir)
    gone = _index_json(root, "--no-vectors")["vectors"]
    assert gone["missing"] == built["total"] and gone["current"] == 0
    assert gone["pending"] == gone["total"] and "is gone" in gone["message"]
    assert not RepoLayout.for_path(root).chroma_dir.exists()  # and not made again by looking


def test_index_no_vectors_json_on_a_repository_never_embedded(make_repo) -> None:
    root = make_repo(FILES)
    vectors = _index_json(root, "--no-vectors")["vectors"]
    assert vectors["current"] == 0 and vectors["pending"] == vectors["total"] > 0
    assert vectors["missing"] is None and vectors["store"] == ""


def _doctor_vectors(root) -> dict:
    proc = run_semfora("doctor", "--path", str(root), "--json", env=ENV)
    assert "Traceback" not in proc.stderr, proc.stderr
    return next(c for c in json.loads(proc.stdout)["checks"] if c["name"] == "vectors")


def test_doctor_on_a_deleted_store_says_so_and_makes_no_store(fake_ollama, make_repo) -> None:
    """Checking a deleted embedded store opened a Chroma client on its path, which made an empty
    `chroma/` there: the check wrote, and the next look found a store that was never built."""
    root = make_repo(FILES)
    built = _index_json(root)["vectors"]
    chroma = RepoLayout.for_path(root).chroma_dir
    shutil.rmtree(chroma)
    check = _doctor_vectors(root)
    assert check["status"] == "warn" and check["code"] == "DOCTOR_VECTORS"
    assert check["data"]["missing"] == built["current"] and "holds none" in check["detail"]
    assert not chroma.exists()


def _search(root, query: str, *extra: str, env: dict | None = None) -> dict:
    proc = run_semfora("search", query, "--path", str(root), "--json", *extra, env={**ENV, **(env or {})})
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout)


def test_the_query_service_notices_a_deleted_store(fake_ollama, make_repo) -> None:
    """The warm service answered from the store it had open after `chroma/` was deleted (or failed
    as if a server had stopped); it says the vectors are gone, and search answers from full text."""
    from engine.index import query_client

    on = {"SEMFORA_SEARCH__VECTOR_SERVICE": "auto"}
    root = make_repo(FILES)
    _index_json(root)
    try:
        warm = _search(root, "strip the credentials of a request", "--mode", "vector", env=on)
        assert warm["warnings"] == [] and any(r["sources"]["vector"] for r in warm["results"])
        chroma = RepoLayout.for_path(root).chroma_dir
        shutil.rmtree(chroma)
        after = _search(root, "strip the credentials of a request", env=on)
        assert len(after["warnings"]) == 1, after["warnings"]
        assert "was deleted" in after["warnings"][0] and "semfora index" in after["warnings"][0]
        assert after["results"] and all(r["sources"]["vector"] is None for r in after["results"])
        assert not chroma.exists()  # searching made no empty store
        # `semfora index` re-embeds, and the same service serves the new store.
        assert _index_json(root)["vectors"]["missing"] > 0
        again = _search(root, "strip the credentials of a request", "--mode", "vector", env=on)
        assert again["warnings"] == [] and any(r["sources"]["vector"] for r in again["results"])
    finally:
        query_client.stop_service()


def test_a_warm_in_process_searcher_notices_a_deleted_store(fake_ollama, monkeypatch, make_repo) -> None:
    """The app and the MCP server search in-process: the same, without a service."""
    from engine.api import Engine, search

    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    root = make_repo(FILES)
    _index_json(root)
    with Engine.open(root) as engine:
        warm = search(engine, "strip the credentials of a request", mode="vector", every_warning=True)
        assert not warm.warnings and any(r["sources"]["vector"] for r in warm.to_json()["results"])
        shutil.rmtree(engine.layout.chroma_dir)
        gone = search(engine, "strip the credentials of a request", every_warning=True)
        assert any("was deleted" in w for w in gone.warnings), gone.warnings
        assert gone.hits and all(r["sources"]["vector"] is None for r in gone.to_json()["results"])
        assert not engine.layout.chroma_dir.exists()
        _index_json(root)
        back = search(engine, "strip the credentials of a request", mode="vector", every_warning=True)
        assert not back.warnings and any(r["sources"]["vector"] for r in back.to_json()["results"])


def _restart_ollama(port: int):
    """An Ollama that comes up on the port the process was told about (breaker cooled down)."""
    from engine.services.ollama import breaker_for
    from tests.fakes.fake_ollama import FakeOllama

    fake = FakeOllama(port=port).start()
    breaker_for(fake.url).reset()
    return fake


def test_a_long_lived_searcher_uses_an_ollama_that_came_up_after_it(
    fake_ollama, monkeypatch, make_repo
) -> None:
    """The MCP server (and the app) chose the embedder once: Ollama down at their start meant
    vectors off until they were restarted. They ask again (here without waiting the interval)."""
    from engine.api import Engine, search
    from engine.index import vectors

    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setattr(vectors, "VECTORS_RECHECK_SECONDS", 0.0)
    root = make_repo(FILES)
    _index_json(root)
    port = fake_ollama.port
    fake_ollama.stop()
    with Engine.open(root) as engine:
        off = search(engine, "strip the credentials of a request", every_warning=True)
        assert any("vector search is off for now" in w for w in off.warnings), off.warnings
        assert all(r["sources"]["vector"] is None for r in off.to_json()["results"])
        back = _restart_ollama(port)
        try:
            on = search(engine, "strip the credentials of a request", every_warning=True)
        finally:
            back.stop()
        assert not on.warnings, on.warnings
        assert any(r["sources"]["vector"] for r in on.to_json()["results"])


def test_turn_memory_uses_an_ollama_that_came_up_later_and_misses_no_turn(
    fake_ollama, monkeypatch, make_repo
) -> None:
    """One failure made turn memory lexical for the rest of the process, and the turns of that time
    had no vector: once vectors were back, recall never found them."""
    from engine.config import load_settings
    from engine.orchestrator import memory
    from engine.orchestrator.core import _turn_embedder
    from engine.orchestrator.memory import Episode, SessionStore, TurnRecall

    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    monkeypatch.setattr(memory, "VECTORS_RETRY_SECONDS", 0.0)
    layout = RepoLayout.for_path(make_repo({"a.py": "x = 1\n"}))
    port = fake_ollama.port
    fake_ollama.stop()
    store = SessionStore(layout)
    recall = TurnRecall(
        layout, store.episodes, embed=_turn_embedder(layout, load_settings(layout.root).settings)
    )
    turn = Episode(
        0.0, "s", "r1", "add retry with backoff to fetch_page", "edit", (), "done", ("a.py",), "ok"
    )
    store.episodes.append(turn)
    recall.remember(turn)
    assert recall.mode == "lexical"
    back = _restart_ollama(port)
    try:
        hits = recall.recall("add retry with backoff to fetch_page")
    finally:
        back.stop()
    assert recall.mode == "vector"
    assert [(h.episode.run_id, h.source) for h in hits] == [("r1", "vector")]


def test_searches_during_a_vector_build_see_its_progress(fake_ollama, monkeypatch, make_repo) -> None:
    """A warm searcher (the app, the service) learnt of another process's vectors only when its
    build ended: during a long build every search said "covers 192 of 1,354 chunks" and used those
    192, and a build stopped part way (Ollama gone) was never seen at all."""
    from engine.api import build_vectors
    from engine.config import load_settings
    from engine.index.vectors import VectorSearcher

    monkeypatch.setenv("SEMFORA_EMBEDDING", "ollama:nomic-embed-text")
    files = {
        f"app/mod{i}.py": "".join(
            f"def handler_{i}_{j}(request):\n    return request.get('field_{i}_{j}')\n\n\n" for j in range(8)
        )
        for i in range(16)
    }
    root = make_repo(files)
    assert run_semfora("index", "--no-vectors", "--path", str(root)).returncode == 0
    layout = RepoLayout.for_path(root)
    settings = load_settings(root).settings
    seen: list[tuple[int, int]] = []  # (chunks the build reported, chunks the warm searcher knows)

    def progress(_phase: str, done: int, total: int) -> None:
        if 0 < done < total:  # the child goes on embedding while the parent looks
            searcher = VectorSearcher.for_repo(layout, settings)
            assert searcher.unavailable() == ""
            known = int(searcher.notice.split(" covers ")[1].split(" of ")[0].replace(",", ""))
            seen.append((done, known))

    report = build_vectors(layout, settings, progress=progress)
    assert report.enabled and report.pending == 0
    assert len(seen) >= 2, seen
    assert all(known >= done for done, known in seen), seen
    final = VectorSearcher.for_repo(layout, settings)
    assert final.unavailable() == "" and final.notice == ""  # the end of the build is seen too


def test_index_rebuild_keeps_the_vectors_of_unchanged_chunks(fake_ollama, make_repo) -> None:
    """`semfora index --rebuild` (or a damaged index.db rebuilt) threw every vector away and embedded
    the whole tree again; the store itself records each vector's chunk and content hash."""
    root = make_repo(FILES)
    built = _index_json(root)["vectors"]
    (root / "app/routes.py").write_text(
        ROUTES_PY.replace("another location", "a new place"), encoding="utf-8"
    )
    before = len(fake_ollama.requests_to("/api/embed"))
    rebuilt = _index_json(root, "--rebuild")["vectors"]
    assert rebuilt["enabled"] and rebuilt["pending"] == 0 and rebuilt["missing"] == 0
    assert 0 < rebuilt["embedded"] < built["embedded"]  # only the changed chunk(s)
    assert "kept" in rebuilt["message"] and rebuilt["current"] == rebuilt["total"]
    embedded_texts = [
        t
        for r in fake_ollama.requests_to("/api/embed")[before:]
        for t in r.body.get("input", [])
        if "dimension" not in t
    ]
    assert embedded_texts and all("app/routes.py" in t for t in embedded_texts), embedded_texts
    found = _search(root, "send the client to another location", "--mode", "vector")
    assert found["warnings"] == [] and any(r["sources"]["vector"] for r in found["results"])


def test_doctor_on_a_damaged_store_says_so_and_leaves_the_repair_to_index(fake_ollama, make_repo) -> None:
    """Doctor opened the damaged store to count it, which set it aside, made an empty one and forgot
    the record, then reported "2 of 2 embedded ... holds none (wiped or replaced)": a check that
    repaired, and said something else than what it found."""
    root = make_repo(FILES)
    built = _index_json(root)["vectors"]
    layout = RepoLayout.for_path(root)
    db = layout.chroma_dir / "chroma.sqlite3"
    db.write_bytes(b"\xff" * max(db.stat().st_size, 8192))
    check = _doctor_vectors(root)
    assert check["status"] == "warn" and check["code"] == "DOCTOR_VECTORS"
    assert "is damaged" in check["detail"] and check["data"]["missing"] == built["current"]
    assert db.read_bytes()[:4] == b"\xff" * 4 and not list(layout.cache_dir.glob("chroma.corrupt-*"))
    repaired = run_semfora("index", "--path", str(root), env=ENV)
    assert repaired.returncode == 0 and "was damaged" in repaired.stderr, repaired.stderr
    assert _doctor_vectors(root)["status"] == "ok"
