"""Train the file model (query/ranking/learned.py) on the development set, one command each step.

    MIRROR=DIR python -m codeagent.eval.train_ranker dump [--limit 20] [--only a,b]
    python -m codeagent.eval.train_ranker train [--write]

`dump` runs `codeagent eval --dataset commits` on every development-set repository found under
MIRROR (fetched as OWNER+NAME/repo; the list is the development set's, ../shared/devset), in
the same work directory as the development-set script (~/.cache/codeagent-devset), and keeps
each case's candidate files with their features. `train` fits a linear listwise model
(softmax cross-entropy over each case's candidates, L2 towards the hand-set score, full-batch Adam in numpy), reports
leave-one-repository-out figures beside the hand-set score on the same cases, and with
`--write` stores the model trained on every repository as query/ranking/file_model.json. Nothing it
reads or writes besides that model file belongs in a commit: not the tasks, not the features.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ..query.ranking.learned import FEATURES, MODEL_FILE, model_from_json
from . import train_trees  # lightgbm (the `train` extra) is imported only when trees are fitted

Scorer = Callable[[np.ndarray], np.ndarray]
WORK = Path(os.path.expanduser("~/.cache/codeagent-devset"))
REPOS = """python-attrs+attrs Textualize+rich psf+black spf13+cobra go-chi+chi labstack+echo
clap-rs+clap hyperium+hyper expressjs+express axios+axios sindresorhus+got square+retrofit
FasterXML+jackson-core AutoMapper+AutoMapper serilog+serilog Alamofire+Alamofire square+okhttp
sinatra+sinatra jqlang+jq""".split()
L2 = 3e-2  # the shipped file_model.json's: `train --write` reproduces it byte for byte
STEPS = 400


def dump(args: argparse.Namespace) -> None:
    mirror = Path(os.environ["MIRROR"])
    (args.work / "features").mkdir(parents=True, exist_ok=True)
    for name in REPOS:
        if args.only and name not in args.only.split(","):
            continue
        src = mirror / name / "repo"
        if not src.is_dir():
            print(f"skip {name}: not fetched", file=sys.stderr)
            continue
        clone = args.work / "clones" / name
        if not clone.is_dir():
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(src), str(clone)], check=True)
        out = args.work / "out" / name
        out.mkdir(parents=True, exist_ok=True)
        feats = args.work / "features" / f"{name}.jsonl"
        feats.unlink(missing_ok=True)
        r = subprocess.run([args.bin, "eval", "--repo", str(clone), "--dataset", "commits", "--limit",
                            str(args.limit), "--modes", "auto,auto-no-history,bm25-file", "--embedder", "none",
                            "--workdir", str(args.work / "eval" / name), "--save-dataset", str(out),
                            "--out", str(out / "report.json"), "--features-out", str(feats), "--quiet"],
                           capture_output=True, text=True)
        print(f"{name}: exit {r.returncode} {r.stderr.strip().splitlines()[-1:] if r.returncode else ''}",
              file=sys.stderr, flush=True)


def load(work: Path) -> dict[str, list[tuple[np.ndarray, np.ndarray]]]:
    """repo -> [(features of each candidate, 1 for a gold file)] per case."""
    data: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {}
    for name in REPOS:
        path = work / "features" / f"{name}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            case = json.loads(line)
            if tuple(case["features"]) != FEATURES:
                raise SystemExit(f"{path}: features {case['features']} are not this code's; dump again")
            gold = set(case["gold"])
            x = np.asarray(case["rows"], dtype=np.float64)
            y = np.asarray([p in gold for p in case["paths"]], dtype=np.float64)
            data.setdefault(name, []).append((x, y))
    return data


def fit(cases: list[tuple[np.ndarray, np.ndarray]], steps: int = STEPS, l2: float = L2) -> np.ndarray:
    """Weights minimising the mean softmax cross-entropy of the gold files (cases without a
    gold candidate teach nothing and are left out): full-batch Adam from the hand-set score,
    L2 towards it."""
    return fit_folds(cases, [-1] * len(cases), 1, l2, steps)[0]


def fit_folds(cases: list[tuple[np.ndarray, np.ndarray]], fold: list[int], k: int, l2: float,
              steps: int, start: np.ndarray | None = None) -> np.ndarray:
    """`fit` for k training sets at once (vectorised over padded candidate lists): row j of
    the result is trained on every case whose fold is not j, so folds 0..k-1 held out one at
    a time give leave-one-out models (eval/try_features). Columns after FEATURES start at 0.
    `start` (weights) replaces the hand-set score as the start and the L2 centre (eval/try_adapt)."""
    n_feat, width = cases[0][0].shape[1], max(len(y) for _, y in cases)
    x = np.zeros((len(cases), width, n_feat))
    y = np.zeros((len(cases), width))
    live = np.zeros((len(cases), width), dtype=bool)
    for c, (xc, yc) in enumerate(cases):
        x[c, :len(yc)], y[c, :len(yc)], live[c, :len(yc)] = xc, yc, True
    taught = y.any(axis=1)
    t = (np.asarray(fold)[None, :] != np.arange(k)[:, None]) & taught[None, :]  # (k, cases)
    t = t / t.sum(axis=1, keepdims=True)
    w0 = np.zeros(n_feat)
    w0[FEATURES.index("hand")] = 4.0
    if start is not None:
        w0 = np.asarray(start, dtype=np.float64)
    w = np.tile(w0, (k, 1))
    m, v = np.zeros_like(w), np.zeros_like(w)
    lr, b1, b2 = 0.05, 0.9, 0.999
    for step in range(1, steps + 1):
        s = np.einsum("cmf,kf->ckm", x, w)
        s = np.where(live[:, None, :], s, -np.inf)
        p = np.exp(s - s.max(axis=2, keepdims=True))
        p /= p.sum(axis=2, keepdims=True)
        yp = y[:, None, :] * p
        q = yp / np.maximum(yp.sum(axis=2, keepdims=True), 1e-300)
        grad = l2 * (w - w0) + np.einsum("kc,ckf->kf", t, np.einsum("ckm,cmf->ckf", p - q, x))
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        w = w - lr * (m / (1 - b1 ** step)) / (np.sqrt(v / (1 - b2 ** step)) + 1e-8)
    return w


def metrics(cases: list[tuple[np.ndarray, np.ndarray]], score: Scorer) -> dict[str, float]:
    out = {"acc@1": 0.0, "acc@5": 0.0, "mrr@10": 0.0}
    for x, y in cases:
        order = np.argsort(-score(x), kind="stable")
        hits = np.nonzero(y[order])[0]
        if hits.size:
            r = int(hits[0])
            out["acc@1"] += r < 1
            out["acc@5"] += r < 5
            out["mrr@10"] += 1.0 / (r + 1) if r < 10 else 0.0
    return {k: v / max(len(cases), 1) for k, v in out.items()}


def fit_kind(kind: str, cases: list[tuple[np.ndarray, np.ndarray]],
             args: argparse.Namespace) -> tuple[Scorer, dict]:
    """The model of `kind` fitted on the cases: how it scores a case's rows, and its JSON."""
    if kind == "trees":
        model = train_trees.export(train_trees.fit_trees(cases), train_trees.DERIVED, None)
        scorer = model_from_json(model)
        return (lambda x: np.asarray(scorer.score(x))), {**model, "params": train_trees.PARAMS}
    w = fit(cases, args.steps, args.l2)
    return (lambda x: x @ w), {"features": list(FEATURES), "weights": [round(float(v), 6) for v in w],
                                "l2": args.l2, "steps": args.steps}  # no "kind": linear is the default


def train(args: argparse.Namespace) -> None:
    data = load(args.work)
    if not data:
        raise SystemExit(f"no features under {args.work / 'features'}: run `dump` first")
    kinds = ["linear"] + (["trees"] if args.kind == "trees" else [])
    cols = ["hand"] + kinds
    print("| held-out repository | cases | " + " | ".join(f"{k} MRR@10" for k in cols) + " | "
          + " | ".join(f"{k} Acc@1" for k in cols) + " |")
    print("|---|---:|" + "---:|" * (2 * len(cols)))
    pooled: dict[str, list[dict[str, float]]] = {k: [] for k in cols}
    for name, cases in data.items():
        rest = [c for other, cs in data.items() if other != name for c in cs]
        scorers = {"hand": lambda x: x[:, FEATURES.index("hand")], **{k: fit_kind(k, rest, args)[0] for k in kinds}}
        got = {k: metrics(cases, scorers[k]) for k in cols}
        for k in cols:
            pooled[k] += [metrics([c], scorers[k]) for c in cases]
        print(f"| {name} | {len(cases)} | " + " | ".join(f"{got[k]['mrr@10']:.3f}" for k in cols) + " | "
              + " | ".join(f"{got[k]['acc@1']:.3f}" for k in cols) + " |")
    mean = lambda rows, k: sum(r[k] for r in rows) / max(len(rows), 1)  # noqa: E731
    print(f"| pooled | {len(pooled['hand'])} | " + " | ".join(f"{mean(pooled[k], 'mrr@10'):.3f}" for k in cols) + " | "
          + " | ".join(f"{mean(pooled[k], 'acc@1'):.3f}" for k in cols) + " |")
    _, model = fit_kind(args.kind, [c for cs in data.values() for c in cs], args)
    if args.kind == "linear":
        print("weights: " + ", ".join(f"{f}={x:.3f}" for f, x in zip(FEATURES, model["weights"])))
    if args.write:
        head = {k: model.pop(k) for k in ("kind", "features", "weights") if k in model}
        model = {**head, "trained_on": sorted(data), "cases": sum(map(len, data.values())), **model}
        MODEL_FILE.write_text(json.dumps(model, indent=None if args.kind == "trees" else 1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_FILE} ({MODEL_FILE.stat().st_size} bytes)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=WORK)
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--bin", default="codeagent")
    d.add_argument("--limit", type=int, default=20)
    d.add_argument("--only", default="")
    t = sub.add_parser("train")
    t.add_argument("--write", action="store_true")
    t.add_argument("--steps", type=int, default=STEPS)
    t.add_argument("--l2", type=float, default=L2)
    t.add_argument("--kind", choices=("linear", "trees"), default="linear",
                   help="linear (numpy only) or boosted trees (needs the `train` extra: lightgbm)")
    args = ap.parse_args()
    dump(args) if args.cmd == "dump" else train(args)


if __name__ == "__main__":
    main()
