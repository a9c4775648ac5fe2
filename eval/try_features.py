"""Try candidate features for the file model offline, leave-one-repository-out, before coding
them into the query path.

    python -m codeagent.eval.try_features [--work DIR] [--only graph_in,a+b] [--per-repo]

Reads `train_ranker dump`'s cases (each candidate's FEATURES row, its path, and the symbol-graph
edges between candidates) and, for every extra feature in EXTRA (each computed from the case's
candidate list alone, so the query path could compute it the same way; `a+b` tries columns
together), fits the linear model on FEATURES plus that column (`train_ranker.fit_folds`: the
same loss, start, L2 and steps as `train`, all held-out repositories at once) and scores each
repository with the model trained on the others. Prints, per feature, pooled MRR@10 and Acc@1
beside the base model's, the paired bootstrap 95% interval of each gain over tasks, and the
worst repository's MRR@10 change: the bar to ship a feature is both gains above noise and no
repository losing more than 0.03. `--drop NAME` leaves a trailing feature out of the base (to
measure it as if it were new). Nothing it reads belongs in a commit.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ..query.ranking.learned import FEATURES
from .metrics import bootstrap_ci
from .train_ranker import L2, REPOS, STEPS, WORK, fit_folds, metrics

HAND, HISTORY, BODY, PRIOR, RECENCY = (FEATURES.index(f) for f in ("hand", "history", "body", "log_prior", "recency"))
SEEDS = 5  # the top candidates by the hand-set score whose neighbours are looked for


class Case:
    """One task's candidates: FEATURES rows, gold flags, paths and the graph edges between them."""

    def __init__(self, raw: dict) -> None:
        gold = set(raw["gold"])
        if tuple(raw["features"]) != FEATURES:
            raise SystemExit(f"features {raw['features']} are not this code's; dump again")
        self.x = np.asarray(raw["rows"], dtype=np.float64)
        self.y = np.asarray([p in gold for p in raw["paths"]], dtype=np.float64)
        self.paths: list[str] = raw["paths"]
        self.edges: list[list] = raw.get("edges", [])
        self.id: str = raw.get("id", "")
        self.cols: dict[str, np.ndarray] = {}  # columns computed elsewhere (eval/try_semantic)


def _seed_weights(v: np.ndarray, k: int = SEEDS) -> np.ndarray:
    """1 / (1 + rank) for the top `k` of `v` (a positive score only), 0 elsewhere."""
    w = np.zeros(len(v))
    for r, i in enumerate(np.argsort(-v, kind="stable")[:k]):
        if v[i] > 0:
            w[i] = 1.0 / (1.0 + r)
    return w


def _graph(case: Case, direction: str, seed_col: int = HAND, exact_only: bool = False,
           kinds: Sequence[str] = ()) -> np.ndarray:
    """For each candidate, the summed seed weight of the top candidates it has an edge to
    ("out": it uses them), from ("in": they use it) or either ("both"), itself left out."""
    w = _seed_weights(case.x[:, seed_col])
    out = np.zeros(len(case.paths))
    seen: set[tuple[int, int]] = set()
    for src, dst, kind, exact, _n in case.edges:
        if (exact_only and not exact) or (kinds and kind not in kinds):
            continue
        pairs = []
        if direction in ("out", "both"):
            pairs.append((src, dst))
        if direction in ("in", "both"):
            pairs.append((dst, src))
        for me, other in pairs:
            if (me, other) not in seen and w[other] > 0:
                seen.add((me, other))
                out[me] += w[other]
    return out


_TEST_MARK = re.compile(r"(?i)^(test_?|tests_?)|(_?test|_?tests|_?spec|\.test|\.spec|specs)$")


def _stem(path: str) -> str:
    name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    return _TEST_MARK.sub("", name).lower()


def _test_pair(case: Case, reverse: bool = False) -> np.ndarray:
    """For a source candidate, the share of the best hand-set score its best test candidate
    (same file stem once test marks are taken off, a lower role prior) holds; `reverse`: for a
    test, its source's."""
    hand, prior = case.x[:, HAND], case.x[:, PRIOR]
    top = max(float(hand.max()), 1e-9)
    by_stem: dict[str, list[int]] = {}
    for i, p in enumerate(case.paths):
        by_stem.setdefault(_stem(p), []).append(i)
    out = np.zeros(len(case.paths))
    for i, p in enumerate(case.paths):
        is_test = prior[i] < -0.05
        if is_test != reverse:
            continue
        mates = [j for j in by_stem[_stem(p)] if j != i and (prior[j] < -0.05) != is_test]
        if mates:
            out[i] = max(hand[j] for j in mates) / top
    return out


def _folder(case: Case, col: int, how: str) -> np.ndarray:
    """Evidence of the candidate's folder from its other candidates: the best `col` value
    ("max") or how many of the top 10 by the hand-set score share it ("top10")."""
    dirs = [p.rsplit("/", 1)[0] if "/" in p else "" for p in case.paths]
    v = case.x[:, col]
    top10 = set(np.argsort(-case.x[:, HAND], kind="stable")[:10].tolist())
    out = np.zeros(len(dirs))
    groups: dict[str, list[int]] = {}
    for i, d in enumerate(dirs):
        groups.setdefault(d, []).append(i)
    for i, d in enumerate(dirs):
        others = [j for j in groups[d] if j != i]
        if not others:
            continue
        if how == "max":
            out[i] = max(v[j] for j in others)
        else:
            out[i] = sum(j in top10 for j in others) / 10.0
    return out


def _since(case: Case) -> np.ndarray:
    """Commits since each candidate last changed, recovered from `recency` (inf: not in the window)."""
    r = case.x[:, RECENCY]
    with np.errstate(divide="ignore"):
        return np.where(r > 0, 50.0 * (1.0 / np.maximum(r, 1e-12) - 1.0), np.inf)


def _recent(case: Case, scale: float) -> np.ndarray:
    return 1.0 / (1.0 + _since(case) / scale)


def _recent_rank(case: Case) -> np.ndarray:
    """1 / (1 + rank) of the candidate by how recently it changed (ties share the best rank)."""
    since = np.round(_since(case), 3)
    uniq = np.unique(since[np.isfinite(since)])
    rank = {v: k for k, v in enumerate(uniq)}
    return np.asarray([1.0 / (1.0 + rank[v]) if np.isfinite(v) else 0.0 for v in since])


EXTRA: dict[str, Callable[[Case], np.ndarray]] = {
    "recent_0": lambda c: (_since(c) < 0.5).astype(float),
    "recent_1": lambda c: _recent(c, 1.0),
    "recent_2": lambda c: _recent(c, 2.0),
    "recent_5": lambda c: _recent(c, 5.0),
    "recent_rank": _recent_rank,
    "recent_5_x_body": lambda c: _recent(c, 5.0) * c.x[:, BODY],
    "recent_rank_x_history": lambda c: _recent_rank(c) * c.x[:, HISTORY],
    "recent_rank_x_body": lambda c: _recent_rank(c) * c.x[:, BODY],
    "recent_rank_top": lambda c: (_recent_rank(c) == 1.0).astype(float),
    "graph_out": lambda c: _graph(c, "out"),
    "graph_in": lambda c: _graph(c, "in"),
    "graph_both": lambda c: _graph(c, "both"),
    "graph_both_exact": lambda c: _graph(c, "both", exact_only=True),
    "graph_calls": lambda c: _graph(c, "both", kinds=("calls",)),
    "graph_hist_both": lambda c: _graph(c, "both", seed_col=HISTORY),
    "test_pair": _test_pair,
    "test_pair_rev": lambda c: _test_pair(c, reverse=True),
    "dir_history": lambda c: _folder(c, HISTORY, "max"),
    "dir_body": lambda c: _folder(c, BODY, "max"),
    "dir_top10": lambda c: _folder(c, HAND, "top10"),
}


def load(work: Path) -> dict[str, list[Case]]:
    data: dict[str, list[Case]] = {}
    for name in REPOS:
        path = work / "features" / f"{name}.jsonl"
        if path.exists():
            cases = [Case(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]
            data[name] = cases
    return data


def saved_tasks(work: Path, name: str) -> dict[str, dict]:
    """Task id -> the task (its query, its gold, the commit its index was built at) as the dump
    saved it under out/<repo>/commits.jsonl."""
    path = work / "out" / name / "commits.jsonl"
    return {t["id"]: t for t in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def pending(cache: Path, names: Iterable[str]) -> Iterator[tuple[str, Path]]:
    """(repo, cache/<repo>.jsonl) for each repository whose columns are not cached yet."""
    cache.mkdir(parents=True, exist_ok=True)
    for name in names:
        dest = cache / f"{name}.jsonl"
        if not dest.exists():
            yield name, dest


def attach(data: dict[str, list[Case]], cache: Path, suffix: str = ".jsonl") -> None:
    """Give each case the columns cached for it under cache/<repo><suffix> ({"id", "cols"} lines)."""
    for name, cases in data.items():
        by_id = {c.id: c for c in cases}
        for r in map(json.loads, (cache / f"{name}{suffix}").read_text(encoding="utf-8").splitlines()):
            by_id[r["id"]].cols.update({f: np.asarray(v, dtype=np.float64) for f, v in r["cols"].items()})


def per_task(cases: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray) -> np.ndarray:
    """(MRR@10, Acc@1) of each case under weights `w`."""
    return np.array([[m["mrr@10"], m["acc@1"]] for m in (metrics([c], lambda x: x @ w) for c in cases)]
                    ).reshape(len(cases), 2)


def loro(data: dict[str, list[tuple[np.ndarray, np.ndarray]]], l2: float, steps: int) -> dict[str, np.ndarray]:
    """repo -> per-task (MRR@10, Acc@1) of the model trained on the other repositories."""
    names = list(data)
    w = fit_folds([c for n in names for c in data[n]], [k for k, n in enumerate(names) for _ in data[n]],
                  len(names), l2, steps)
    return {n: per_task(data[n], w[k]) for k, n in enumerate(names)}


def options(doc: str) -> argparse.ArgumentParser:
    """The judging options (shared with eval/try_semantic)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=WORK)
    ap.add_argument("--only", default="", help="comma-separated EXTRA names, or a+b to try columns together")
    ap.add_argument("--boot", type=int, default=2000)
    ap.add_argument("--l2", type=float, default=L2)
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--per-repo", action="store_true")
    ap.add_argument("--drop", default="", help="trailing FEATURES left out of the base model")
    return ap


def judge(data: dict[str, list[Case]], extra: dict[str, Callable[[Case], np.ndarray]],
          args: argparse.Namespace) -> None:
    """Print the base model's LORO figures, then one table row per combination of `extra`
    columns (`args.only`, or each of `extra` alone): pooled figures, paired bootstrap 95%
    intervals of the gains, the worst repository."""
    keep = [i for i, f in enumerate(FEATURES) if f not in args.drop.split(",")]
    for cs in data.values():
        for c in cs:
            c.x = c.x[:, keep]
    base = {n: [(c.x, c.y) for c in cs] for n, cs in data.items()}
    b = loro(base, args.l2, args.steps)
    print(f"{sum(map(len, data.values()))} tasks from {len(data)} repositories: {', '.join(data)}")

    def widened(combo: str) -> dict[str, np.ndarray]:
        names = [combo] if combo in extra else combo.split("+")
        wide = {n: [(np.hstack([c.x] + [_column(extra[e](c)) for e in names]), c.y) for c in cs]
                for n, cs in data.items()}
        return loro(wide, args.l2, args.steps)

    judge_rows(b, {combo: (lambda combo=combo: widened(combo))
                   for combo in (args.only.split(",") if args.only else list(extra))}, args, f"{len(keep)} features")


def _column(v: np.ndarray) -> np.ndarray:
    return v[:, None] if v.ndim == 1 else v


def judge_rows(b: dict[str, np.ndarray], tried: dict[str, Callable[[], dict[str, np.ndarray]]],
               args: argparse.Namespace, label: str = "") -> None:
    """One table row per tried model against the base `b` (repo -> per-task MRR@10, Acc@1, each
    held out): pooled figures, paired bootstrap 95% intervals of the gains, the worst repository;
    `tried` maps a name to what computes its held-out figures (shared with eval/try_objectives)."""
    b_all = np.vstack(list(b.values()))
    print(f"base{f' ({label})' if label else ''}: MRR@10 {b_all[:, 0].mean():.3f} Acc@1 {b_all[:, 1].mean():.3f}")
    print("| tried | MRR@10 | Δ [95% CI] | Acc@1 | Δ [95% CI] | worst repo ΔMRR | repos < -0.03 |")
    print("|---|---:|---|---:|---|---|---:|")
    for name, run in tried.items():
        got = run()
        g_all = np.vstack(list(got.values()))
        d = g_all - b_all
        ci = [bootstrap_ci(d[:, k], seed=0, resamples=args.boot)[1:] for k in (0, 1)]
        per = {n: got[n][:, 0].mean() - b[n][:, 0].mean() for n in b}
        worst = min(per, key=per.get)
        print(f"| {name} | {g_all[:, 0].mean():.3f} | {d[:, 0].mean():+.3f} [{ci[0][0]:+.3f}, {ci[0][1]:+.3f}] | "
              f"{g_all[:, 1].mean():.3f} | {d[:, 1].mean():+.3f} [{ci[1][0]:+.3f}, {ci[1][1]:+.3f}] | "
              f"{worst.split('+')[-1]} {per[worst]:+.3f} | {sum(v < -0.03 for v in per.values())} |", flush=True)
        if args.per_repo:
            for n in b:
                print(f"    {n}: {b[n][:, 0].mean():.3f} -> {got[n][:, 0].mean():.3f}  "
                      f"Acc@1 {b[n][:, 1].mean():.3f} -> {got[n][:, 1].mean():.3f}")


def main() -> None:
    args = options(__doc__).parse_args()
    judge(load(args.work), EXTRA, args)

if __name__ == "__main__":
    main()
