"""Try other training objectives and per-task normalisations for the file model,
leave-one-repository-out, judged against the shipped one (the same 13 features).

    python -m codeagent.eval.try_objectives [--work DIR] [--only pairwise,softmax@rank] [--per-repo]

The shipped model (`train_ranker.fit`) is fitted listwise: the softmax cross-entropy of the
gold files among each task's candidates. Tried here, each a VARIANT `loss@transform`:
- losses: `softmax` (the shipped one), `listmle` (Plackett-Luce likelihood of the gold files
  ranked first, in the model's own order), `pairwise` (RankNet: log-loss of each gold file
  against each of the top `--top` non-gold candidates by the current score), `lambda`
  (the same pairs, each weighted by what swapping the two would change in reciprocal rank);
- transforms, per task (each feature relative to the task's other candidates): `raw`, `max`
  (divided by its largest magnitude among them), `rank` (1 / (1 + its rank among them)), `z`
  (standardised among them), `raw+max` and `raw+rank` (both column sets).
Each is fitted like `train` (full-batch Adam from the hand-set score, L2 towards it) and judged
like `try_features` (paired bootstrap over tasks, worst repository). Nothing it reads belongs
in a commit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..query.ranking.learned import FEATURES
from .try_features import judge_rows, load, options, per_task

Transform = Callable[[np.ndarray], np.ndarray]
GradFn = Callable[["Padded", np.ndarray], np.ndarray]
MAX_GOLD = 8


def _max_norm(x: np.ndarray) -> np.ndarray:
    top = np.abs(x).max(axis=0)
    return np.divide(x, top, out=np.zeros_like(x), where=top > 0)


def _rank_norm(x: np.ndarray) -> np.ndarray:
    """1 / (1 + rank) of each value in its column, ties sharing the best rank."""
    out = np.empty_like(x)
    for f in range(x.shape[1]):
        col = x[:, f]
        uniq = np.unique(-col)
        out[:, f] = 1.0 / (1.0 + np.searchsorted(uniq, -col))
    return out


def _z_norm(x: np.ndarray) -> np.ndarray:
    sd = x.std(axis=0)
    return np.divide(x - x.mean(axis=0), sd, out=np.zeros_like(x), where=sd > 0)


TRANSFORMS: dict[str, Transform] = {
    "raw": lambda x: x,
    "max": lambda x: np.hstack([x[:, :1], _max_norm(x[:, 1:])]),
    "rank": lambda x: np.hstack([x[:, :1], _rank_norm(x[:, 1:])]),
    "z": lambda x: np.hstack([x[:, :1], _z_norm(x[:, 1:])]),
    "raw+max": lambda x: np.hstack([x, _max_norm(x)]),
    "raw+rank": lambda x: np.hstack([x, _rank_norm(x)]),
}
"""The hand-set score (column 0, where the fit starts) stays raw in the replacing transforms."""


@dataclass
class Padded:
    """Cases padded to one width: features, gold flags, live candidates, gold positions."""

    x: np.ndarray  # (cases, width, features)
    y: np.ndarray  # (cases, width)
    live: np.ndarray  # (cases, width) bool
    gold: np.ndarray  # (cases, MAX_GOLD) index of each gold candidate, 0 where none
    has: np.ndarray  # (cases, MAX_GOLD) bool
    top: int = 10

    @classmethod
    def of(cls, cases: list[tuple[np.ndarray, np.ndarray]], top: int) -> Padded:
        n_feat, width = cases[0][0].shape[1], max(len(y) for _, y in cases)
        p = cls(np.zeros((len(cases), width, n_feat)), np.zeros((len(cases), width)),
                np.zeros((len(cases), width), dtype=bool), np.zeros((len(cases), MAX_GOLD), dtype=int),
                np.zeros((len(cases), MAX_GOLD), dtype=bool), top)
        for c, (xc, yc) in enumerate(cases):
            p.x[c, :len(yc)], p.y[c, :len(yc)], p.live[c, :len(yc)] = xc, yc, True
            g = np.nonzero(yc)[0][:MAX_GOLD]
            p.gold[c, :len(g)], p.has[c, :len(g)] = g, True
        return p


def _softmax(s: np.ndarray, mask: np.ndarray) -> np.ndarray:
    s = np.where(mask, s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


def grad_softmax(d: Padded, s: np.ndarray) -> np.ndarray:
    """d loss / d score of -log Σ_gold softmax (the shipped objective); s is (cases, k, width)."""
    p = _softmax(s, d.live[:, None, :])
    yp = d.y[:, None, :] * p
    return p - yp / np.maximum(yp.sum(axis=2, keepdims=True), 1e-300)


def grad_listmle(d: Padded, s: np.ndarray) -> np.ndarray:
    """Plackett-Luce: the gold files first, best-scored first, then the rest."""
    sg = np.take_along_axis(s, np.broadcast_to(d.gold[:, None, :], s.shape[:2] + (MAX_GOLD,)), axis=2)
    sg = np.where(d.has[:, None, :], sg, -np.inf)
    order = np.argsort(-sg, axis=2, kind="stable")
    gold_sorted = np.take_along_axis(np.broadcast_to(d.gold[:, None, :], sg.shape), order, axis=2)
    has_sorted = np.take_along_axis(np.broadcast_to(d.has[:, None, :], sg.shape), order, axis=2)
    remaining = np.broadcast_to(d.live[:, None, :], s.shape).copy()
    grad = np.zeros_like(s)
    cs, ks = np.meshgrid(np.arange(s.shape[0]), np.arange(s.shape[1]), indexing="ij")
    for i in range(MAX_GOLD):
        on = has_sorted[:, :, i]
        p = _softmax(s, remaining)
        g = gold_sorted[:, :, i]
        step = p.copy()
        step[cs, ks, g] -= 1.0
        grad += np.where(on[:, :, None], step, 0.0)
        remaining[cs, ks, g] &= ~on
    return grad / np.maximum(d.has.sum(axis=1), 1)[:, None, None]


def grad_pairwise(d: Padded, s: np.ndarray, weighted: bool = False) -> np.ndarray:
    """RankNet: softplus(s_j - s_g) for each gold g and each of the top non-gold j by score,
    averaged over the case's pairs; `weighted` scales a pair by |1/(1+r_g) - 1/(1+r_j)|."""
    ng = np.where(d.live[:, None, :] & (d.y[:, None, :] == 0), s, -np.inf)
    top = np.argsort(-ng, axis=2, kind="stable")[:, :, :d.top]  # (c, k, T)
    ok = np.isfinite(np.take_along_axis(ng, top, axis=2))
    gidx = np.broadcast_to(d.gold[:, None, :], s.shape[:2] + (MAX_GOLD,))
    sg = np.take_along_axis(s, gidx, axis=2)  # (c, k, G)
    sj = np.take_along_axis(s, top, axis=2)  # (c, k, T)
    mask = d.has[:, None, :, None] & ok[:, :, None, :]
    sig = 1.0 / (1.0 + np.exp(-(sj[:, :, None, :] - sg[:, :, :, None])))  # (c, k, G, T)
    if weighted:
        rank = np.argsort(np.argsort(-np.where(d.live[:, None, :], s, -np.inf), axis=2, kind="stable"), axis=2)
        rg = np.take_along_axis(rank, gidx, axis=2)
        rj = np.take_along_axis(rank, top, axis=2)
        sig = sig * np.abs(1.0 / (1.0 + rg[:, :, :, None]) - 1.0 / (1.0 + rj[:, :, None, :]))
    sig = np.where(mask, sig, 0.0) / np.maximum(mask.sum(axis=(2, 3), keepdims=True), 1)
    grad = np.zeros_like(s)
    cs, ks = np.meshgrid(np.arange(s.shape[0]), np.arange(s.shape[1]), indexing="ij")
    for g in range(MAX_GOLD):
        grad[cs, ks, gidx[:, :, g]] -= sig[:, :, g, :].sum(axis=2)
    for t in range(top.shape[2]):
        grad[cs, ks, top[:, :, t]] += sig[:, :, :, t].sum(axis=2)
    return grad


LOSSES: dict[str, GradFn] = {
    "softmax": grad_softmax,
    "listmle": grad_listmle,
    "pairwise": grad_pairwise,
    "lambda": lambda d, s: grad_pairwise(d, s, weighted=True),
}


def fit_folds_loss(cases: list[tuple[np.ndarray, np.ndarray]], fold: list[int], k: int, loss: GradFn,
                   l2: float, steps: int, top: int = 10, lr: float = 0.05) -> np.ndarray:
    """`train_ranker.fit_folds` with the loss's score gradient `loss` (k leave-one-out fits at
    once; `softmax` gives fit_folds' weights)."""
    d = Padded.of(cases, top)
    taught = d.y.any(axis=1)
    t = (np.asarray(fold)[None, :] != np.arange(k)[:, None]) & taught[None, :]
    t = t / t.sum(axis=1, keepdims=True)
    w0 = np.zeros(d.x.shape[2])
    w0[FEATURES.index("hand")] = 4.0
    w = np.tile(w0, (k, 1))
    m, v = np.zeros_like(w), np.zeros_like(w)
    b1, b2 = 0.9, 0.999
    for step in range(1, steps + 1):
        s = np.einsum("cmf,kf->ckm", d.x, w)
        gs = np.where(d.live[:, None, :], loss(d, s), 0.0)
        grad = l2 * (w - w0) + np.einsum("kc,ckf->kf", t, np.einsum("ckm,cmf->ckf", gs, d.x))
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        w = w - lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
    return w


def loro_variant(data: dict[str, list[tuple[np.ndarray, np.ndarray]]], variant: str,
                 args) -> dict[str, np.ndarray]:
    """repo -> per-task (MRR@10, Acc@1) of the variant's model trained on the other repositories."""
    loss, _, form = variant.partition("@")
    tf = TRANSFORMS[form or "raw"]
    names = list(data)
    wide = {n: [(tf(x), y) for x, y in data[n]] for n in names}
    w = fit_folds_loss([c for n in names for c in wide[n]], [k for k, n in enumerate(names) for _ in wide[n]],
                       len(names), LOSSES[loss], args.l2, args.steps, args.top)
    return {n: per_task(wide[n], w[k]) for k, n in enumerate(names)}


VARIANTS = [f"{loss}@{form}" for loss in LOSSES for form in TRANSFORMS if f"{loss}@{form}" != "softmax@raw"]


def main() -> None:
    ap = options(__doc__)
    ap.add_argument("--top", type=int, default=10, help="non-gold candidates per gold file (pairwise)")
    args = ap.parse_args()
    data = {n: [(c.x, c.y) for c in cs] for n, cs in load(args.work).items()}
    base = loro_variant(data, "softmax@raw", args)
    judge_rows(base, {v: (lambda v=v: loro_variant(data, v, args)) for v in
                      (args.only.split(",") if args.only else VARIANTS)}, args)


if __name__ == "__main__":
    main()
