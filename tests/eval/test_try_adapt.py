"""The adaptation trial's pure parts: the split by age, the choice of strength, and that
adapting pulls towards the global weights as the L2 says."""

from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from codeagent.eval import try_adapt as ta
from codeagent.eval.train_ranker import fit_folds
from codeagent.query.ranking.learned import FEATURES


def _cases(seed: int, n: int, signal: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Tasks whose gold file is the one with the largest value in column `signal`."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        x = rng.random((8, len(FEATURES)))
        y = np.zeros(8)
        y[int(np.argmax(x[:, signal]))] = 1.0
        out.append((x, y))
    return out


@given(st.lists(st.text(min_size=1), unique=True, max_size=30), st.integers(0, 10), st.integers(0, 30))
def test_split_is_newest_first_and_disjoint(ids, n_eval, k):
    ev, old = ta.split(ids, n_eval, k)
    assert ev == ids[:n_eval] and old == ids[n_eval:n_eval + k]
    assert not set(ev) & set(old)


def test_choose_takes_the_best_and_the_strongest_pull_among_equals():
    assert ta.choose({ta.KEEP: 0.5, 0.03: 0.7, 0.3: 0.6}) == 0.03
    assert ta.choose({ta.KEEP: 0.7, 0.03: 0.7, 3.0: 0.7}) == ta.KEEP
    assert ta.choose({ta.KEEP: 0.4, 0.03: 0.6, 3.0: 0.6}) == 3.0


def test_folds_interleave_and_never_outnumber_tasks():
    assert ta.folds_of(7) == [0, 1, 2, 3, 4, 0, 1]
    assert ta.folds_of(3) == [0, 1, 2]


def test_adapting_moves_less_the_stronger_the_pull():
    w_global = fit_folds(_cases(0, 30, signal=1), [-1] * 30, 1, 0.03, 200)[0]
    own = _cases(1, 20, signal=2)
    moved = [np.linalg.norm(ta.adapt(own, w_global, l2, 200) - w_global) for l2 in (0.03, 0.3, 3.0)]
    assert moved[0] > moved[1] > moved[2] > 0
    assert ta.adapt(own, w_global, ta.KEEP) is w_global and ta.adapt([], w_global, 0.03) is w_global
    w = ta.adapt(own, w_global, 0.03, 200)
    assert w[2] > w_global[2]  # the repository's own signal gains weight


def test_inner_cv_scores_every_strength_on_held_out_tasks():
    w_global = fit_folds(_cases(0, 30, signal=1), [-1] * 30, 1, 0.03, 200)[0]
    cv = ta.inner_cv(_cases(1, 20, signal=2), w_global, (0.03, 3.0), 200)
    assert set(cv) == {ta.KEEP, 0.03, 3.0} and all(0.0 <= v <= 1.0 for v in cv.values())
    assert cv[0.03] > cv[ta.KEEP]  # the repository's own signal, learnt from other folds, helps
