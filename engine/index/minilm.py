"""A light runtime for BERT-family sentence encoders: numpy forward pass over safetensors weights.

Owns reading a sentence-transformers model directory (config, tokenizer.json, model.safetensors,
pooling) and turning texts into mean-pooled, L2-normalised vectors with numpy and the
``tokenizers`` library only, so a query is embedded without importing torch (about half a second
to load instead of several). It never downloads anything and never talks to Chroma.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import math
import struct
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.errors import EmbeddingUnavailable

if TYPE_CHECKING:
    import numpy as np

# Bytes of the little-endian length that opens a safetensors file (its JSON header follows).
SAFETENSORS_HEADER_LEN = 8
# safetensors dtype names the runtime can read; the BERT MiniLMs ship float32.
SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2"}
# Pooling modes this runtime implements (sentence-transformers' 1_Pooling/config.json).
MEAN_POOLING_KEY = "pooling_mode_mean_tokens"
# BLAS threads while this runtime encodes. OpenBLAS's extra threads spin while they wait for work,
# and on a machine whose cores are shared (other jobs, or torch and chromadb threads of our own)
# they steal the CPU the product needs: on a loaded 2-core machine MiniLM embedded 1.9 chunks/s
# with numpy's default (2 threads, 75 CPU-s for 256 chunks) and 8.2 with one (14 CPU-s). Its
# matrices (a batch of 64 chunks of <= 128 word pieces, 384 wide) are too small to gain more from
# a second core than the hand-offs cost. Set around each encode and given back after, so other
# numpy work of the process (and torch, which has its own threads) is left as it was.
LIGHT_BLAS_THREADS = 1
# The OpenBLAS builds numpy ships or links, and the names of their thread-count functions.
_OPENBLAS_SYMBOLS = (
    ("scipy_openblas_set_num_threads64_", "scipy_openblas_get_num_threads64_"),
    ("scipy_openblas_set_num_threads", "scipy_openblas_get_num_threads"),
    ("openblas_set_num_threads64_", "openblas_get_num_threads64_"),
    ("openblas_set_num_threads", "openblas_get_num_threads"),
)
_blas_control: list[tuple[Any, Any] | None] = []  # [] until looked up; [None] when there is none


def _find_blas_control() -> tuple[Any, Any] | None:
    """``(set_num_threads, get_num_threads)`` of the OpenBLAS numpy loaded, or None (another BLAS,
    or not Linux). Found among the libraries mapped into this process, as threadpoolctl does."""
    import numpy  # noqa: F401 - loads its BLAS, which is what is looked for

    try:
        maps = Path("/proc/self/maps").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    paths = dict.fromkeys(
        line.split(maxsplit=5)[-1]
        for line in maps.splitlines()
        if "openblas" in line.rpartition("/")[2].lower() and ".so" in line
    )
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for set_name, get_name in _OPENBLAS_SYMBOLS:
            setter, getter = getattr(lib, set_name, None), getattr(lib, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return setter, getter
    return None


@contextlib.contextmanager
def blas_threads(count: int) -> Iterator[None]:
    """Run the block with ``count`` BLAS threads, then give back the count there was."""
    if not _blas_control:
        _blas_control.append(_find_blas_control())
    control = _blas_control[0]
    if control is None:
        yield
        return
    setter, getter = control
    previous = int(getter())
    if previous == count:
        yield
        return
    setter(count)
    try:
        yield
    finally:
        setter(previous)


def _read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file as a read-only numpy view of one memory map."""
    import numpy as np

    with path.open("rb") as fh:
        (length,) = struct.unpack("<Q", fh.read(SAFETENSORS_HEADER_LEN))
        header = json.loads(fh.read(length))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=SAFETENSORS_HEADER_LEN + length)
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = SAFETENSORS_DTYPES.get(info["dtype"])
        if dtype is None:
            continue  # position ids (I64) and the like: not weights the forward pass reads
        start, end = info["data_offsets"]
        # A copy, not a view: the file's tensors need not be 4-byte aligned, and numpy hands
        # unaligned float arrays to a plain loop instead of BLAS (measured: 60x slower).
        tensors[name] = np.frombuffer(data[start:end], dtype=dtype).reshape(info["shape"]).astype(np.float32)
    return tensors


def is_light_model(model_dir: Path) -> bool:
    """Whether ``model_dir`` holds a BERT encoder with mean pooling in safetensors (what this runs)."""
    try:
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        config.get("model_type") == "bert"
        and config.get("hidden_act", "gelu") == "gelu"
        and config.get("position_embedding_type", "absolute") == "absolute"
        and bool(pooling.get(MEAN_POOLING_KEY))
        and (model_dir / "model.safetensors").is_file()
        and (model_dir / "tokenizer.json").is_file()
    )


class BertSentenceEncoder:
    """BERT encoder + mean pooling + L2 normalisation, the sentence-transformers recipe, in numpy.

    Float32 throughout: it agrees with the torch float32 path to ~1e-6 cosine (tested), so an index
    built by either is searched by the other.
    """

    def __init__(self, model_dir: Path, max_tokens: int) -> None:
        if not is_light_model(model_dir):
            raise EmbeddingUnavailable(
                f"{model_dir} is not a BERT sentence encoder with mean pooling in safetensors"
            )
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        positions = int(config.get("max_position_embeddings", 512))
        self.max_tokens = min(max_tokens, positions)
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_tokens)
        self.tokenizer.no_padding()
        self.w = _read_safetensors(model_dir / "model.safetensors")
        prefix = "bert." if "bert.embeddings.word_embeddings.weight" in self.w else ""
        self.prefix = prefix
        self._lock = threading.Lock()
        self._fused: list[tuple[Any, Any]] = []

    def _p(self, name: str) -> np.ndarray:
        return self.w[self.prefix + name]

    def _dense(self, name: str) -> np.ndarray:
        """A dense layer's weight transposed once into a contiguous matrix (``x @ w`` is one BLAS call)."""
        import numpy as np

        key = self.prefix + name + ".T"
        found = self.w.get(key)
        if found is None:
            found = np.ascontiguousarray(self._p(name + ".weight").T)
            self.w[key] = found
        return found

    def _qkv(self, layer: int) -> tuple[Any, Any]:
        """Query, key and value projections of one layer as one matrix (one product instead of three)."""
        import numpy as np

        while len(self._fused) <= layer:
            i = len(self._fused)
            base = f"encoder.layer.{i}.attention.self."
            weight = np.concatenate([self._p(base + f"{n}.weight") for n in ("query", "key", "value")]).T
            bias = np.concatenate([self._p(base + f"{n}.bias") for n in ("query", "key", "value")])
            self._fused.append((np.ascontiguousarray(weight), bias))
        return self._fused[layer]

    def _layer_norm(self, x: np.ndarray, name: str) -> np.ndarray:
        import numpy as np

        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        out: np.ndarray = (x - mean) / np.sqrt(var + self.eps) * self._p(name + ".weight") + self._p(
            name + ".bias"
        )
        return out

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Hidden states (batch, tokens, hidden) for padded ``ids`` with attention ``mask``."""
        import numpy as np

        batch, tokens = ids.shape
        x = (
            self._p("embeddings.word_embeddings.weight")[ids]
            + self._p("embeddings.position_embeddings.weight")[:tokens][None, :, :]
            + self._p("embeddings.token_type_embeddings.weight")[0][None, None, :]
        )
        x = self._layer_norm(x.astype(np.float32), "embeddings.LayerNorm")
        head = self.hidden // self.heads
        scale = 1.0 / math.sqrt(head)
        # Padding gets -inf-like scores so softmax gives it no weight (float32 finite, no NaNs).
        bias = ((1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9).astype(np.float32)
        for i in range(self.layers):
            base = f"encoder.layer.{i}."
            weight, b = self._qkv(i)
            qkv = x @ weight + b  # (batch, tokens, 3*hidden)
            qkv = qkv.reshape(batch, tokens, 3, self.heads, head).transpose(2, 0, 3, 1, 4)
            q, k, v = qkv[0], qkv[1], qkv[2]
            scores = (q @ k.transpose(0, 1, 3, 2)) * scale + bias
            scores -= scores.max(axis=-1, keepdims=True)
            np.exp(scores, out=scores)
            scores /= scores.sum(axis=-1, keepdims=True)
            context = (scores @ v).transpose(0, 2, 1, 3).reshape(batch, tokens, self.hidden)
            attended = context @ self._dense(base + "attention.output.dense") + self._p(
                base + "attention.output.dense.bias"
            )
            x = self._layer_norm(attended + x, base + "attention.output.LayerNorm")
            inner = x @ self._dense(base + "intermediate.dense") + self._p(base + "intermediate.dense.bias")
            inner = _gelu(inner)
            out = inner @ self._dense(base + "output.dense") + self._p(base + "output.dense.bias")
            x = self._layer_norm(out + x, base + "output.LayerNorm")
        return x

    def encode(self, texts: list[str], batch_size: int = 32) -> list[list[float]]:
        """Unit vectors for ``texts``; batches group texts of similar length to waste little padding."""
        import numpy as np

        if not texts:
            return []
        encodings = self.tokenizer.encode_batch(texts)
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        result: list[list[float]] = [[] for _ in texts]
        with self._lock, blas_threads(LIGHT_BLAS_THREADS):
            for start in range(0, len(order), batch_size):
                part = order[start : start + batch_size]
                width = max(len(encodings[i].ids) for i in part)
                ids = np.zeros((len(part), width), dtype=np.int64)
                mask = np.zeros((len(part), width), dtype=np.int64)
                for row, i in enumerate(part):
                    seq = encodings[i].ids
                    ids[row, : len(seq)] = seq
                    mask[row, : len(seq)] = 1
                hidden = self._forward(ids, mask)
                weights = mask[:, :, None].astype(np.float32)
                pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
                norms = np.linalg.norm(pooled, axis=1, keepdims=True)
                pooled = pooled / np.clip(norms, 1e-12, None)
                for row, i in enumerate(part):
                    result[i] = [float(v) for v in pooled[row]]
        return result


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact (erf) GELU, computed in place on ``x`` (numpy has no erf: see ``_erf``)."""
    import numpy as np

    half = x * np.float32(0.5)
    x *= np.float32(1.0 / math.sqrt(2.0))
    _erf(x)
    x += np.float32(1.0)
    x *= half
    return x


# Coefficients of the rational approximation of erf that Eigen and XLA use for float32 (|x| <= 4).
_ERF_ALPHA = (
    -2.72614225801306e-10,
    2.77068142495902e-08,
    -2.10102402082508e-06,
    -5.69250639462346e-05,
    -7.34990630326855e-04,
    -2.95459980854025e-03,
    -1.60960333262415e-02,
)
_ERF_BETA = (
    -1.45660718464996e-05,
    -2.13374055278905e-04,
    -1.68282697438203e-03,
    -7.37332916720468e-03,
    -1.42647390514189e-02,
)


def _erf(x: np.ndarray) -> None:
    """The error function to float32 precision, in place (|x| clipped at 4, where erf is 1 in float32)."""
    import numpy as np

    np.clip(x, -4.0, 4.0, out=x)
    x2 = x * x
    p = np.full_like(x, np.float32(_ERF_ALPHA[0]))
    for c in _ERF_ALPHA[1:]:
        p *= x2
        p += np.float32(c)
    p *= x
    q = np.full_like(x, np.float32(_ERF_BETA[0]))
    for c in _ERF_BETA[1:]:
        q *= x2
        q += np.float32(c)
    np.divide(p, q, out=x)
