"""Retrieval metrics, pure: ranked lists in, numbers out.

A ranking is a list of (key, score) in rank order. Items with equal scores next to each other
form a tie group whose internal order is arbitrary, so every metric is its expected value over
all orders of each tie group (McSherry & Najork, "Computing information retrieval performance
measures efficiently in the presence of tied scores", 2008). A `None` score never ties.
Repeated keys count once, at their first (best) position. An empty ranking scores 0.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from math import comb

import numpy as np

FILE_METRICS = ("acc@1", "acc@5", "acc@10", "mrr@10")
SYMBOL_METRICS = ("recall@1", "recall@5", "recall@10", "ndcg@10")
QUALITY_METRICS = FILE_METRICS + SYMBOL_METRICS

Ranking = Sequence[tuple[Hashable, "float | None"]]


def tie_groups(ranking: Ranking) -> list[list[Hashable]]:
    """Runs of equal score in rank order, repeated keys dropped after their first position."""
    groups: list[list[Hashable]] = []
    seen: set = set()
    last: object = object()
    for key, score in ranking:
        if key in seen:
            continue
        seen.add(key)
        if groups and score is not None and score == last:
            groups[-1].append(key)
        else:
            groups.append([key])
        last = score if score is not None else object()
    return groups


def _positions(groups: list[list[Hashable]], gold: set) -> list[tuple[int, int, int]]:
    """(start rank 1-based, group size, gold items in group) per tie group."""
    out, start = [], 1
    for group in groups:
        out.append((start, len(group), sum(1 for key in group if key in gold)))
        start += len(group)
    return out


def hit_at_k(ranking: Ranking, gold: set, k: int) -> float:
    """Probability that at least one gold item is in the top k."""
    for start, n, g in _positions(tie_groups(ranking), gold):
        if start > k:
            return 0.0
        if g:
            m = min(k - start + 1, n)
            return 1.0 - comb(n - g, m) / comb(n, m)
    return 0.0


def reciprocal_rank(ranking: Ranking, gold: set, k: int) -> float:
    """Expected 1/rank of the first gold item, 0 when it is below rank k."""
    for start, n, g in _positions(tie_groups(ranking), gold):
        if start > k:
            return 0.0
        if g:
            total = comb(n, g)
            return sum(comb(n - j, g - 1) / total / (start + j - 1)
                       for j in range(1, n + 1) if start + j - 1 <= k)
    return 0.0


def recall_at_k(ranking: Ranking, gold: set, k: int) -> float:
    """Expected share of the gold items found in the top k."""
    if not gold:
        return 0.0
    found = 0.0
    for start, n, g in _positions(tie_groups(ranking), gold):
        if start > k:
            break
        found += g * min(k - start + 1, n) / n
    return found / len(gold)


def ndcg_at_k(ranking: Ranking, gold: set, k: int) -> float:
    """Expected binary-relevance nDCG@k."""
    if not gold:
        return 0.0
    dcg = 0.0
    for start, n, g in _positions(tie_groups(ranking), gold):
        if start > k:
            break
        dcg += sum(g / n / math.log2(p + 1) for p in range(start, min(start + n, k + 1)))
    ideal = sum(1 / math.log2(p + 1) for p in range(1, min(len(gold), k) + 1))
    return dcg / ideal


def file_metrics(ranking: Ranking, gold_files: set) -> dict[str, float]:
    return {"acc@1": hit_at_k(ranking, gold_files, 1), "acc@5": hit_at_k(ranking, gold_files, 5),
            "acc@10": hit_at_k(ranking, gold_files, 10),
            "mrr@10": reciprocal_rank(ranking, gold_files, 10)}


def symbol_metrics(ranking: Ranking, gold: set) -> dict[str, float]:
    return {"recall@1": recall_at_k(ranking, gold, 1), "recall@5": recall_at_k(ranking, gold, 5),
            "recall@10": recall_at_k(ranking, gold, 10), "ndcg@10": ndcg_at_k(ranking, gold, 10)}


def percentile(values: Sequence[float], p: float) -> float:
    """Linear interpolation between closest ranks (numpy's default); NaN for no values."""
    if not values:
        return float("nan")
    return float(np.percentile(np.asarray(values, dtype=float), p))


def bootstrap_ci(values: Sequence[float], seed: int, resamples: int = 1000,
                 level: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): percentile bootstrap over queries, reproducible for a seed."""
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, arr.size, size=(resamples, arr.size))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(arr.mean()), float(low), float(high)
