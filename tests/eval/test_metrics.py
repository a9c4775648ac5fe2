"""Metrics against hand-computed examples (ties, empty results, repeats) and brute force."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.eval.metrics import (bootstrap_ci, file_metrics, hit_at_k, ndcg_at_k, percentile,
                                    recall_at_k, reciprocal_rank, symbol_metrics, tie_groups)

approx = pytest.approx


def test_no_ties_gold_third():
    ranking = [("a", 4.0), ("b", 3.0), ("c", 2.0), ("d", 1.0)]
    assert file_metrics(ranking, {"c"}) == {"acc@1": 0.0, "acc@5": 1.0, "acc@10": 1.0, "mrr@10": approx(1 / 3)}


def test_gold_below_cutoff_scores_zero():
    ranking = [(f"f{i}", 100.0 - i) for i in range(12)]
    assert hit_at_k(ranking, {"f10"}, 10) == 0.0
    assert reciprocal_rank(ranking, {"f10"}, 10) == 0.0
    assert hit_at_k(ranking, {"f9"}, 10) == 1.0
    assert reciprocal_rank(ranking, {"f9"}, 10) == approx(0.1)


def test_three_way_tie_one_gold():
    ranking = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    assert hit_at_k(ranking, {"c"}, 1) == approx(1 / 3)
    assert hit_at_k(ranking, {"c"}, 2) == approx(2 / 3)
    assert reciprocal_rank(ranking, {"c"}, 10) == approx((1 + 1 / 2 + 1 / 3) / 3)  # 11/18


def test_three_way_tie_two_gold():
    ranking = [("a", 1.0), ("b", 1.0), ("c", 1.0)]
    # Of the 6 orders, 4 put a gold item first and 2 put it second: (4 * 1 + 2 * 1/2) / 6.
    assert reciprocal_rank(ranking, {"b", "c"}, 10) == approx(5 / 6)
    assert hit_at_k(ranking, {"b", "c"}, 1) == approx(2 / 3)


def test_tie_straddling_the_cutoff():
    ranking = [("x", 2.0), ("a", 1.0), ("b", 1.0), ("g", 1.0)]
    assert hit_at_k(ranking, {"g"}, 2) == approx(1 / 3)
    assert reciprocal_rank(ranking, {"g"}, 2) == approx(1 / 3 * 1 / 2)
    assert reciprocal_rank(ranking, {"g"}, 10) == approx((1 / 2 + 1 / 3 + 1 / 4) / 3)


def test_empty_ranking_and_no_match():
    assert file_metrics([], {"a"}) == {"acc@1": 0.0, "acc@5": 0.0, "acc@10": 0.0, "mrr@10": 0.0}
    assert symbol_metrics([], {0}) == {"recall@1": 0.0, "recall@5": 0.0, "recall@10": 0.0, "ndcg@10": 0.0}
    assert file_metrics([("b", 1.0)], {"a"})["acc@10"] == 0.0
    assert recall_at_k([("a", 1.0)], set(), 5) == 0.0


def test_repeated_keys_count_once_at_first_position():
    ranking = [("a", 3.0), ("a", 2.0), ("b", 1.0)]
    assert reciprocal_rank(ranking, {"b"}, 10) == approx(1 / 2)
    assert tie_groups([("a", 1.0), ("b", 1.0), ("a", 1.0)]) == [["a", "b"]]


def test_none_scores_never_tie():
    assert tie_groups([("a", None), ("b", None)]) == [["a"], ["b"]]
    assert reciprocal_rank([("a", None), ("b", None)], {"b"}, 10) == approx(1 / 2)


def test_recall_with_ties():
    ranking = [("x", 1.0), ("g1", 1.0), ("y", 0.5), ("g2", 0.5)]
    assert recall_at_k(ranking, {"g1", "g2"}, 1) == approx(0.25)
    assert recall_at_k(ranking, {"g1", "g2"}, 2) == approx(0.5)
    assert recall_at_k(ranking, {"g1", "g2"}, 3) == approx(0.75)
    assert recall_at_k(ranking, {"g1", "g2"}, 5) == approx(1.0)


def test_ndcg_hand_computed():
    assert ndcg_at_k([("x", 3.0), ("g", 2.0)], {"g"}, 10) == approx(1 / math.log2(3))
    assert ndcg_at_k([("g", 3.0), ("x", 2.0)], {"g"}, 10) == approx(1.0)
    # tie: g is first or second with probability 1/2 each
    assert ndcg_at_k([("x", 1.0), ("g", 1.0)], {"g"}, 10) == approx(0.5 + 0.5 / math.log2(3))
    # two gold, one found at rank 2: DCG 1/log2(3), ideal 1 + 1/log2(3)
    assert ndcg_at_k([("x", 2.0), ("g1", 1.0)], {"g1", "g2"}, 10) == approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3)))


def test_percentiles_interpolate_linearly():
    assert percentile([10, 20, 30, 40], 50) == approx(25.0)
    assert percentile([10, 20, 30, 40], 95) == approx(38.5)
    assert percentile([7.0], 95) == 7.0
    assert math.isnan(percentile([], 50))


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    mean, low, high = bootstrap_ci(values, seed=3)
    assert mean == approx(0.7)
    assert low <= mean <= high and 0.0 <= low < high <= 1.0
    assert bootstrap_ci(values, seed=3) == (mean, low, high)
    assert bootstrap_ci([0.5] * 8, seed=1) == (0.5, 0.5, 0.5)
    assert all(math.isnan(v) for v in bootstrap_ci([], seed=1))


def _brute_force(ranking, gold, k, metric):
    """Average the metric over every order of every tie group (no ties left)."""
    groups = tie_groups(ranking)
    values = []
    for perm in itertools.product(*(itertools.permutations(g) for g in groups)):
        flat = [(key, None) for group in perm for key in group]
        values.append(metric(flat, gold, k))
    return sum(values) / len(values)


@settings(max_examples=150, deadline=None)
@given(scores=st.lists(st.integers(0, 2), min_size=0, max_size=6),
       gold_mask=st.lists(st.booleans(), min_size=6, max_size=6),
       k=st.integers(1, 6))
def test_tie_aware_metrics_equal_the_average_over_orders(scores, gold_mask, k):
    ranking = [(f"d{i}", float(s)) for i, s in enumerate(sorted(scores, reverse=True))]
    gold = {f"d{i}" for i in range(6) if gold_mask[i]} | {"absent"}
    for metric in (hit_at_k, reciprocal_rank, recall_at_k, ndcg_at_k):
        assert metric(ranking, gold, k) == approx(_brute_force(ranking, gold, k, metric)), metric.__name__
