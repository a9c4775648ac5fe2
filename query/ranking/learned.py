"""The file ranker's features and the learned model that weighs them.

Each candidate file of a query is described by FEATURES (pure: `feature_rows`); the model
shipped in the package (`file_model.json`, trained by `python -m codeagent.eval.train_ranker`
on the development set only, with leave-one-repository-out validation) scores them: a linear
model with one dot product, or boosted trees walked as flat arrays (numpy, all candidates at
once). Without the model file the hand-set score (`hand`, a feature too) ranks alone.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used (the read side loads it already)
    import numpy as np

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


def with_derived(x: np.ndarray, names: Sequence[str]) -> np.ndarray:
    """FEATURES' columns and after them the DERIVED ones `names` asks for, each relative to the
    query's other candidates (the same rows `feature_rows` gave, so no new evidence is needed)."""
    import numpy as np  # numpy loads with the read side's resident arrays already

    cols = [x]
    for name in names:
        cols.append(DERIVED[name](x[:, FEATURES.index("hand")])[:, None])
    return np.hstack(cols) if names else x


def _rank_rr(v: np.ndarray) -> np.ndarray:
    import numpy as np  # numpy loads with the read side's resident arrays already

    rank = np.empty(len(v))
    rank[np.argsort(-v, kind="stable")] = np.arange(len(v))
    return 1.0 / (1.0 + rank)


def _share_of_best(v: np.ndarray) -> np.ndarray:
    best = float(v.max()) if len(v) else 0.0
    return v / best if best > 0 else v


DERIVED = {"hand_rr": _rank_rr, "hand_rel": _share_of_best}


@dataclass(frozen=True, eq=False)
class TreeModel:
    """A sum of regression trees (gradient-boosted for ranking), optionally over a linear part.

    Held as complete binary trees of one `depth` (a shallower leaf repeats under a split that
    always goes left): tree t's internal node p is `feature[t * inner + p]` and `threshold[...]`,
    its children are 2p+1 (a value <= the threshold) and 2p+2, so walking `depth` levels is
    index arithmetic over every candidate and tree at once (numpy, no Python loop per tree)."""

    feature: np.ndarray  # (trees * inner,) column of the row with DERIVED columns after FEATURES
    threshold: np.ndarray  # (trees * inner,)
    value: np.ndarray  # (trees * 2**depth,) leaf values
    depth: int
    trees: int
    linear: np.ndarray | None = None  # weights over FEATURES added to the trees' sum
    derived: tuple[str, ...] = ()

    def score(self, rows: Sequence[Sequence[float]]) -> list[float]:
        import numpy as np  # numpy loads with the read side's resident arrays already

        if not len(rows):
            return []
        base = np.asarray(rows, dtype=np.float64)
        x = with_derived(base, self.derived)
        inner = 2 ** self.depth - 1
        flat = x.ravel()
        row_at = (np.arange(len(x)) * x.shape[1])[:, None]
        tree_at = np.arange(self.trees) * inner
        pos = np.zeros((len(x), self.trees), dtype=np.intp)
        for _ in range(self.depth):
            node = tree_at + pos
            pos = 2 * pos + 1 + (flat[row_at + self.feature[node]] > self.threshold[node])
        out = self.value[np.arange(self.trees) * (inner + 1) + pos - inner].sum(axis=1)
        if self.linear is not None:
            out = out + base @ self.linear
        return out.tolist()

    @classmethod
    def from_json(cls, data: Mapping) -> TreeModel:
        """From the file's node arrays (feature -1 marks a leaf; `roots` start each tree)."""
        import numpy as np  # numpy loads with the read side's resident arrays already

        depth, roots = int(data["depth"]), data["roots"]
        inner = 2 ** depth - 1
        feature = np.zeros(len(roots) * inner, dtype=np.intp)
        threshold = np.full(len(roots) * inner, np.inf)
        value = np.zeros(len(roots) * (inner + 1))

        def place(t: int, node: int, pos: int, level: int) -> None:
            if level == depth:
                value[t * (inner + 1) + pos - inner] = data["value"][node]
                return
            split = data["feature"][node] >= 0
            if split:
                feature[t * inner + pos] = data["feature"][node]
                threshold[t * inner + pos] = data["threshold"][node]
            place(t, data["left"][node] if split else node, 2 * pos + 1, level + 1)
            place(t, data["right"][node] if split else node, 2 * pos + 2, level + 1)

        for t, root in enumerate(roots):
            place(t, root, 0, 0)
        return cls(feature, threshold, value, depth, len(roots),
                   linear=None if data.get("linear") is None else np.asarray(data["linear"], dtype=np.float64),
                   derived=tuple(data.get("derived", ())))


@lru_cache(maxsize=1)
def shipped_model() -> FileModel | TreeModel | None:
    """The model in the package, or None when there is none (or it is for other features).
    The file says its kind: "linear" (one weight per feature, the default) or "trees"."""
    try:
        data = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return model_from_json(data)


def model_from_json(data: Mapping) -> FileModel | TreeModel | None:
    if tuple(data.get("features", ())) != FEATURES or not set(data.get("derived", ())) <= set(DERIVED):
        return None
    if data.get("kind", "linear") == "trees":
        return TreeModel.from_json(data)
    return FileModel(tuple(float(w) for w in data["weights"]))


def rank(cands: Sequence[Candidate], model: FileModel | TreeModel | None) -> list[tuple[str, float]]:
    """Candidates best first with their scores: the model's, else the hand-set (ties by path)."""
    scores = model.score(feature_rows(cands)) if model is not None else [c.hand for c in cands]
    return sorted(zip((c.path for c in cands), scores), key=lambda kv: (-kv[1], kv[0]))


def coverage(tf: Mapping[str, float], weights: Mapping[str, float]) -> float:
    total = sum(weights.values()) or 1.0
    return sum(w for t, w in weights.items() if tf.get(t, 0.0) > 0) / total
