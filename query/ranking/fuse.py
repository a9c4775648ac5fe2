"""Rank fusion, and the per-intent weights that steer it (pure; BM25 is bm25.py).

No I/O here: retrievers (symbols.py, fulltext.py, grep.py, and any registered later, such as
the semantic one) produce ordered candidate lists; `fuse` merges them.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

from .. import intent as intents

RRF_K = 60

# Which retriever's list counts how much, per query intent (auto / hybrid modes).
INTENT_WEIGHTS: dict[str, dict[str, float]] = {
    intents.SYMBOL: {"symbol": 1.0, "text": 0.35, "path": 0.2, "semantic": 0.3},
    intents.PATH: {"path": 1.0, "symbol": 0.3, "text": 0.3, "semantic": 0.2},
    intents.ERROR: {"text": 1.0, "symbol": 0.3, "path": 0.0, "semantic": 0.4},
    intents.NATURAL_LANGUAGE: {"text": 1.0, "symbol": 0.5, "path": 0.1, "semantic": 1.0},
}


def fuse(lists: Mapping[str, Sequence[Hashable]], weights: Mapping[str, float],
         k: int = RRF_K) -> list[tuple[Hashable, float]]:
    """Weighted reciprocal rank fusion: score(x) = sum_i w_i / (k + rank_i(x)).

    `lists` maps a retriever name to its keys, best first; a key in several lists adds up.
    Ties keep the order of first appearance (lists in the given order).
    """
    scores: dict[Hashable, float] = {}
    order: dict[Hashable, int] = {}
    for name, keys in lists.items():
        w = weights.get(name, 0.0)
        if w <= 0:
            continue
        for rank, key in enumerate(keys, 1):
            scores[key] = scores.get(key, 0.0) + w / (k + rank)
            order.setdefault(key, len(order))
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))


def blend_weights(intent: str, semantic_weight: float | None = None) -> dict[str, float]:
    """Fusion weights for an intent; `semantic_weight` (0..1) rescales semantic vs lexical."""
    base = dict(INTENT_WEIGHTS.get(intent, INTENT_WEIGHTS[intents.NATURAL_LANGUAGE]))
    if semantic_weight is None:
        return base
    s = min(max(semantic_weight, 0.0), 1.0)
    return {name: (w * s if name == "semantic" else w * (1.0 - s)) for name, w in base.items()}
