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
from pathlib import Path

import numpy as np

from ..query.ranking.learned import FEATURES, MODEL_FILE

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
    gold candidate teach nothing and are left out)."""
    cases = [(x, y) for x, y in cases if y.any()]
    w0 = np.zeros(len(FEATURES))
    w0[FEATURES.index("hand")] = 4.0  # the hand-set score alone, at a softmax temperature that fits it
    w = w0.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    lr, b1, b2 = 0.05, 0.9, 0.999
    for t in range(1, steps + 1):
        grad = l2 * (w - w0)  # pulled towards the hand-set score, not towards nothing
        for x, y in cases:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            q = y * p / (y * p).sum()
            grad += (x.T @ (p - q)) / len(cases)
        m = b1 * m + (1 - b1) * grad
        v = b2 * v + (1 - b2) * grad * grad
        w -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + 1e-8)
    return w


def metrics(cases: list[tuple[np.ndarray, np.ndarray]], w: np.ndarray) -> dict[str, float]:
    out = {"acc@1": 0.0, "acc@5": 0.0, "mrr@10": 0.0}
    for x, y in cases:
        order = np.argsort(-(x @ w), kind="stable")
        hits = np.nonzero(y[order])[0]
        if hits.size:
            r = int(hits[0])
            out["acc@1"] += r < 1
            out["acc@5"] += r < 5
            out["mrr@10"] += 1.0 / (r + 1) if r < 10 else 0.0
    return {k: v / max(len(cases), 1) for k, v in out.items()}


def train(args: argparse.Namespace) -> None:
    data = load(args.work)
    if not data:
        raise SystemExit(f"no features under {args.work / 'features'}: run `dump` first")
    hand = np.zeros(len(FEATURES))
    hand[FEATURES.index("hand")] = 1.0
    print("| held-out repository | cases | hand MRR@10 | learned (LORO) MRR@10 | hand Acc@1 | learned Acc@1 |")
    print("|---|---:|---:|---:|---:|---:|")
    pooled_h, pooled_l = [], []
    for name, cases in data.items():
        w = fit([c for other, cs in data.items() if other != name for c in cs], args.steps, args.l2)
        h, lrn = metrics(cases, hand), metrics(cases, w)
        pooled_h += [metrics([c], hand) for c in cases]
        pooled_l += [metrics([c], w) for c in cases]
        print(f"| {name} | {len(cases)} | {h['mrr@10']:.3f} | {lrn['mrr@10']:.3f} | {h['acc@1']:.3f} | {lrn['acc@1']:.3f} |")
    mean = lambda rows, k: sum(r[k] for r in rows) / max(len(rows), 1)  # noqa: E731
    print(f"| pooled | {len(pooled_h)} | {mean(pooled_h, 'mrr@10'):.3f} | {mean(pooled_l, 'mrr@10'):.3f} "
          f"| {mean(pooled_h, 'acc@1'):.3f} | {mean(pooled_l, 'acc@1'):.3f} |")
    w = fit([c for cs in data.values() for c in cs], args.steps, args.l2)
    print("weights: " + ", ".join(f"{f}={x:.3f}" for f, x in zip(FEATURES, w)))
    if args.write:
        MODEL_FILE.write_text(json.dumps({"features": list(FEATURES), "weights": [round(float(x), 6) for x in w],
                                          "trained_on": sorted(data), "cases": sum(map(len, data.values())),
                                          "l2": args.l2, "steps": args.steps}, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {MODEL_FILE}")


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
    args = ap.parse_args()
    dump(args) if args.cmd == "dump" else train(args)


if __name__ == "__main__":
    main()
