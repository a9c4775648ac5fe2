"""Derive the static word-piece table the `static` embedder ships (run once, offline).

    python -m codeagent.embedders.derive_static OUT.npz   # needs the `neural` extra

Each MiniLM word piece is run alone through the model ([CLS] piece [SEP], mean pooling:
the model2vec recipe), the 384-d outputs are reduced by PCA to DIM dimensions and stored as
int8 with one scale per row. The vocabulary travels in the same file.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from .minilm import MiniLMEmbedder, model_dir

DIM = 128
BATCH = 512


def piece_vectors(model, vocab: list[str]) -> np.ndarray:
    ids = np.asarray(range(len(vocab)), dtype=np.int64)
    cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
    out = np.zeros((len(vocab), model.dim), dtype=np.float32)
    started = time.perf_counter()
    for start in range(0, len(ids), BATCH):
        chunk = ids[start:start + BATCH]
        seq = np.stack([np.full_like(chunk, cls), chunk, np.full_like(chunk, sep)], axis=1)
        out[start:start + len(chunk)] = model._forward(seq, np.ones(seq.shape, dtype=np.float32))
        print(f"\r{start + len(chunk)}/{len(ids)} {time.perf_counter() - started:.0f}s", end="",
              file=sys.stderr)
    print(file=sys.stderr)
    return out


def reduce(vectors: np.ndarray, dim: int = DIM) -> tuple[np.ndarray, np.ndarray]:
    """PCA to `dim`, then int8 rows with a per-row scale."""
    centered = vectors - vectors.mean(0)
    _u, _s, vt = np.linalg.svd(centered, full_matrices=False)
    reduced = centered @ vt[:dim].T
    scale = np.abs(reduced).max(1, keepdims=True) / 127.0
    scale[scale == 0] = 1.0
    return np.round(reduced / scale).astype(np.int8), scale.astype(np.float32).ravel()


def main(out: Path) -> None:
    model = MiniLMEmbedder()
    vocab = (model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    table, scale = reduce(piece_vectors(model, vocab))
    np.savez_compressed(out, table=table, scale=scale, vocab=np.asarray(vocab))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
