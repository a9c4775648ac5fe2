"""The file ranker's features and the learned model that weighs them.

Each candidate file of a query is described by FEATURES (pure: `feature_rows`); the model
shipped in the package (`file_model.json`, trained by `python -m codeagent.eval.train_ranker`
on the development set only, with leave-one-repository-out validation) scores them with one
dot product. Without the model file the hand-set score (`hand`, a feature too) ranks alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

FEATURES = ("hand", "body", "history", "chunk", "named", "log_prior", "body_rr", "history_rr",
            "coverage", "log_len", "recency", "churn", "defines")
MODEL_FILE = Path(__file__).with_name("file_model.json")


@dataclass(frozen=True)
class Candidate:
    """What the file ranking knows of one file, as numbers."""

    path: str
    hand: float  # the hand-set score (ranking.files.score_files)
    body: float  # body BM25 / the query's best
    history: float  # history BM25 / the query's best
    chunk_rank: int | None
    named: bool
    prior: float  # the role prior
    length: float
    coverage: float  # share of the query's weight the file's body or path holds
    last_change: int | None = None  # commits since the file last changed (None: not in the window)
    touches: int = 0  # commits of the window that changed it
    defines: float = 0.0  # 1 / how many candidates define the query's most specific identifier it defines


def feature_rows(cands: Sequence[Candidate]) -> list[list[float]]:
    """One row of FEATURES per candidate (pure)."""
    body_rank = {c.path: i for i, c in enumerate(sorted(cands, key=lambda c: (-c.body, c.path)))}
    hist_rank = {c.path: i for i, c in enumerate(sorted(cands, key=lambda c: (-c.history, c.path)))}
    rows = []
    for c in cands:
        rows.append([
            c.hand, c.body, c.history,
            0.0 if c.chunk_rank is None else 1.0 / (1.0 + c.chunk_rank / 3.0),
            1.0 if c.named else 0.0,
            math.log(max(c.prior, 1e-3)),
            1.0 / (1.0 + body_rank[c.path]) if c.body > 0 else 0.0,
            1.0 / (1.0 + hist_rank[c.path]) if c.history > 0 else 0.0,
            c.coverage,
            math.log1p(max(c.length, 0.0)) / 10.0,
            0.0 if c.last_change is None else 1.0 / (1.0 + c.last_change / 50.0),
            math.log1p(c.touches) / 5.0,
            c.defines,
        ])
    return rows


@dataclass(frozen=True)
class FileModel:
    """A linear scorer over FEATURES."""

    weights: tuple[float, ...]

    def score(self, rows: Sequence[Sequence[float]]) -> list[float]:
        import numpy as np  # numpy loads with the read side's resident arrays already

        if not rows:
            return []
        return (np.asarray(rows, dtype=np.float64) @ np.asarray(self.weights, dtype=np.float64)).tolist()


@lru_cache(maxsize=1)
def shipped_model() -> FileModel | None:
    """The model in the package, or None when there is none (or it is for other features)."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if tuple(data.get("features", ())) != FEATURES:
        return None
    return FileModel(tuple(float(w) for w in data["weights"]))


def rank(cands: Sequence[Candidate], model: FileModel | None) -> list[tuple[str, float]]:
    """Candidates best first with their scores: the model's, else the hand-set (ties by path)."""
    scores = model.score(feature_rows(cands)) if model is not None else [c.hand for c in cands]
    return sorted(zip((c.path for c in cands), scores), key=lambda kv: (-kv[1], kv[0]))


def coverage(tf: Mapping[str, float], weights: Mapping[str, float]) -> float:
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if tf.get(t, 0.0) > 0) / total
