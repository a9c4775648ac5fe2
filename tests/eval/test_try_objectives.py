"""The objective trial: each loss's score gradient is the derivative of its loss (checked by
finite differences), `softmax` is the shipped fit, and the per-task transforms are relative to
the task's candidates."""

from __future__ import annotations

import numpy as np
import pytest

from codeagent.eval import try_objectives as tob
from codeagent.eval.train_ranker import fit_folds
from codeagent.query.ranking.learned import FEATURES


def _cases(seed: int, n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(3, 14))
        x = rng.random((k, len(FEATURES)))
        y = np.zeros(k)
        y[rng.choice(k, size=int(rng.integers(1, 3)), replace=False)] = 1.0
        out.append((x, y))
    return out


def _loss(name: str, d: tob.Padded, s: np.ndarray, top_idx: np.ndarray | None = None) -> float:
    """The loss itself, written plainly per case (the pairwise ones over the pairs `top_idx` held
    fixed: the gradient is taken with the top non-gold set held, as the fit does each step)."""
    total = 0.0
    for c in range(s.shape[0]):
        live = d.live[c]
        sc, yc = s[c, 0], np.where(live, d.y[c], 0.0)
        sc = np.where(live, sc, -np.inf)
        gold = np.nonzero(yc)[0]
        if name == "softmax":
            lse = np.log(np.exp(sc).sum())  # padding scores -inf: exp 0
            total += lse - np.log(np.exp(sc[gold]).sum())
        elif name == "listmle":
            rest = np.ones(len(sc), dtype=bool)
            for g in gold[np.argsort(-sc[gold], kind="stable")]:
                total += (np.log(np.exp(sc[rest]).sum()) - sc[g]) / len(gold)
                rest[g] = False
        else:
            pairs = [(g, j) for g in gold for j in top_idx[c] if live[j] and not d.y[c, j]]
            total += sum(np.log1p(np.exp(sc[j] - sc[g])) for g, j in pairs) / len(pairs)
    return total


@pytest.mark.parametrize("name", ["softmax", "listmle", "pairwise"])
def test_each_gradient_is_the_derivative_of_its_loss(name: str) -> None:
    d = tob.Padded.of(_cases(1, 6), top=3)
    rng = np.random.default_rng(2)
    s = np.where(d.live[:, None, :], rng.normal(size=(6, 1, d.x.shape[1])), 0.0)
    ng = np.where(d.live & (d.y == 0), s[:, 0], -np.inf)
    top_idx = np.argsort(-ng, axis=1, kind="stable")[:, :3]
    g = np.where(d.live[:, None, :], tob.LOSSES[name](d, s), 0.0)
    eps = 1e-6
    for c in range(6):
        for m in np.nonzero(d.live[c])[0]:
            up, down = s.copy(), s.copy()
            up[c, 0, m] += eps
            down[c, 0, m] -= eps
            num = (_loss(name, d, up, top_idx) - _loss(name, d, down, top_idx)) / (2 * eps)
            assert g[c, 0, m] == pytest.approx(num, abs=1e-5)


def test_softmax_is_the_shipped_fit() -> None:
    cases = _cases(3, 24)
    fold = [i % 3 for i in range(len(cases))]
    got = tob.fit_folds_loss(cases, fold, 3, tob.LOSSES["softmax"], l2=0.03, steps=40)
    assert np.allclose(got, fit_folds(cases, fold, 3, l2=0.03, steps=40), rtol=0, atol=1e-12)


def test_a_weighted_pair_weighs_what_swapping_it_changes() -> None:
    # gold first, the best non-gold second: |1 - 1/2|; the third is not among the top 1
    d = tob.Padded.of([(np.zeros((3, len(FEATURES))), np.array([1.0, 0.0, 0.0]))], top=1)
    s = np.array([[[2.0, 1.0, 0.0]]])
    plain, weighted = tob.LOSSES["pairwise"](d, s), tob.LOSSES["lambda"](d, s)
    assert weighted[0, 0, 1] == pytest.approx(plain[0, 0, 1] * 0.5)
    assert weighted[0, 0, 2] == 0.0


def test_transforms_are_relative_to_the_task() -> None:
    x = np.array([[3.0, 2.0, -1.0], [1.0, 4.0, -2.0], [2.0, 4.0, 0.0]])
    assert tob.TRANSFORMS["max"](x).tolist() == [[3.0, 0.5, -0.5], [1.0, 1.0, -1.0], [2.0, 1.0, 0.0]]
    assert tob.TRANSFORMS["rank"](x)[:, 1:].tolist() == [[0.5, 0.5], [1.0, 1 / 3], [1.0, 1.0]]
    z = tob.TRANSFORMS["z"](x)
    assert z[:, 0].tolist() == [3.0, 1.0, 2.0]  # the hand-set score stays as it is
    assert np.allclose(z[:, 1:].mean(axis=0), 0.0) and np.allclose(z[:, 1:].std(axis=0), 1.0)
    assert tob.TRANSFORMS["raw+max"](x).shape == (3, 6)
    assert tob.TRANSFORMS["max"](np.zeros((2, 3))).tolist() == [[0.0] * 3] * 2
