"""Adapt the file model to one repository from its own history, offline, before building it.

    MIRROR=DIR python -m codeagent.eval.try_adapt --work NEW [--only a,b] dump [--tasks 60]
    MIRROR=DIR python -m codeagent.eval.try_adapt --work OLDER dump --skip 60 --tasks 40 --clones NEW/clones
    python -m codeagent.eval.try_adapt --work NEW judge --base-work DUMPDIR [--older OLDER]
        [--ks 10,20,40,80] [--devset ../shared/devset] [--per-repo]

`dump` mines each development-set repository's newest `--tasks` commit tasks (`codeagent eval
--dataset commits --newest`, each task's index built at its own parent, as `train_ranker dump`
does) and keeps their features. `judge` splits them by age: the newest `--eval` (20) are the
evaluation tasks, the older ones (then those of the `--older` dumps) the repository's own
training tasks (the newest K of them, K in `--ks`). For each repository r the global model is fitted leave-one-repository-out on
`--base-work`'s dump (`train_ranker`'s loss, start, L2 and steps, without r), then adapted on
r's K older tasks: the same loss from the global weights, L2 towards them with a strength in
`--grid`, or the strength chosen by inner cross-validation on the older tasks alone (`cv`:
the best mean held-out MRR@10, the global weights themselves a candidate, ties to the
stronger pull). Also `own` (r's older tasks alone, from the hand-set score) and `pooled` (the
other repositories' tasks and r's older ones together). Each is judged on r's evaluation tasks
against the global model on the same tasks: pooled MRR@10 and Acc@1 with paired bootstrap 95%
intervals, the worst repository. Nothing it reads belongs in a commit.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from .train_ranker import L2, REPOS, STEPS, fit_folds
from .try_features import Case, judge_rows, load, per_task, saved_tasks

Pair = tuple[np.ndarray, np.ndarray]
GRID = (0.003, 0.03, 0.3, 3.0)  # L2 strengths towards the global weights (0.003 added after 0.3 and 3 barely moved them)
KS = (10, 20, 40)
KEEP = float("inf")  # the strength that keeps the global weights


def split(ids_newest_first: Sequence[str], n_eval: int, k: int) -> tuple[list[str], list[str]]:
    """(evaluation ids: the newest `n_eval`; training ids: the `k` newest of the older ones)."""
    ids = list(ids_newest_first)
    return ids[:n_eval], ids[n_eval:n_eval + k]


def choose(cv: dict[float, float]) -> float:
    """The strength with the best held-out score; among equals, the strongest pull."""
    best = max(cv.values())
    return max(l2 for l2, v in cv.items() if v >= best - 1e-12)


def folds_of(n: int, k: int = 5) -> list[int]:
    """Interleaved fold ids (tasks are in date order, so each fold spans the period)."""
    return [i % min(k, n) for i in range(n)]


def adapt(cases: list[Pair], w_global: np.ndarray, l2: float, steps: int = STEPS) -> np.ndarray:
    """The global weights adapted on `cases`: the shipped loss from them, L2 towards them."""
    if l2 == KEEP or not cases:
        return w_global
    return fit_folds(cases, [-1] * len(cases), 1, l2, steps, start=w_global)[0]


def inner_cv(cases: list[Pair], w_global: np.ndarray, grid: Sequence[float], steps: int = STEPS) -> dict[float, float]:
    """Strength -> mean held-out MRR@10 over the folds of `cases` (the global weights: KEEP)."""
    fold = folds_of(len(cases))
    k = max(fold) + 1
    out = {KEEP: float(per_task(cases, w_global)[:, 0].mean())}
    for l2 in grid:
        w = fit_folds(cases, fold, k, l2, steps, start=w_global)
        held = np.vstack([per_task([c], w[f]) for c, f in zip(cases, fold)])
        out[l2] = float(held[:, 0].mean())
    return out


def load_split(work: Path, name: str, n_eval: int) -> tuple[list[Case], list[Case]]:
    """(evaluation cases, older cases newest first) of one repository's dump, by the mined order."""
    order = list(saved_tasks(work, name))
    by_id = {c.id: c for c in load_one(work, name)}
    ev, old = split([i for i in order if i in by_id], n_eval, len(order))
    return [by_id[i] for i in ev], [by_id[i] for i in old]


def load_one(work: Path, name: str) -> list[Case]:
    path = work / "features" / f"{name}.jsonl"
    return [Case(json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def global_models(base_work: Path, steps: int) -> dict[str, np.ndarray]:
    """repo -> the global weights fitted on every base repository but it (and on all of them
    for a repository the base lacks)."""
    data = {n: [(c.x, c.y) for c in cs] for n, cs in load(base_work).items()}
    names = list(data)
    rows = fit_folds([c for n in names for c in data[n]], [k for k, n in enumerate(names) for _ in data[n]],
                     len(names) + 1, L2, steps)
    return {**{n: rows[k] for k, n in enumerate(names)}, "": rows[len(names)]}


class Setup:
    """What every variant needs: the base dump (repo -> tasks), the global model of each
    target repository, and each target's evaluation and older tasks."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.base = {n: [(c.x, c.y) for c in cs] for n, cs in load(args.base_work).items()}
        self.globals = global_models(args.base_work, args.steps)
        self.targets: dict[str, tuple[list[Pair], list[Pair]]] = {}
        self.ids: dict[str, list[str]] = {}
        for name in REPOS:
            if (args.work / "features" / f"{name}.jsonl").exists() and name in (args.only.split(",") if args.only else REPOS):
                ev, old = load_split(args.work, name, args.eval)
                old += [c for more in args.older if (more / "features" / f"{name}.jsonl").exists()
                        for c in load_split(more, name, 0)[1]]
                self.targets[name] = ([(c.x, c.y) for c in ev], [(c.x, c.y) for c in old])
                self.ids[name] = [c.id for c in ev]
        self.chosen: dict[tuple[int, str], float] = {}

    def w_global(self, name: str) -> np.ndarray:
        return self.globals.get(name, self.globals[""])

    def scored(self, weights: Callable[[str, list[Pair]], np.ndarray], k: int) -> dict[str, np.ndarray]:
        """repo -> per-task (MRR@10, Acc@1) on its evaluation tasks under weights(repo, its k older tasks)."""
        return {n: per_task(ev, weights(n, old[:k])) for n, (ev, old) in self.targets.items()}

    def cv(self, name: str, old: list[Pair], grid: Sequence[float], steps: int) -> np.ndarray:
        l2 = choose(inner_cv(old, self.w_global(name), grid, steps)) if len(old) >= 2 else KEEP
        self.chosen[(len(old), name)] = l2
        return adapt(old, self.w_global(name), l2, steps)

    def pooled(self, name: str, old: list[Pair], steps: int) -> np.ndarray:
        rest = [c for n, cs in self.base.items() if n != name for c in cs] + old
        return fit_folds(rest, [-1] * len(rest), 1, L2, steps)[0]


def variants(s: Setup, args: argparse.Namespace) -> dict[str, Callable[[], dict[str, np.ndarray]]]:
    """Row name -> what computes its held-out figures, for every K and way of adapting."""
    grid = [float(v) for v in args.grid.split(",")]
    out: dict[str, Callable[[], dict[str, np.ndarray]]] = {}
    for k in (int(v) for v in args.ks.split(",")):
        for l2 in grid:
            out[f"adapt L2 {l2:g}, K={k}"] = lambda k=k, l2=l2: s.scored(
                lambda n, old: adapt(old, s.w_global(n), l2, args.steps), k)
        out[f"adapt L2 by inner CV, K={k}"] = lambda k=k: s.scored(lambda n, old: s.cv(n, old, grid, args.steps), k)
        out[f"own tasks only, K={k}"] = lambda k=k: s.scored(
            lambda n, old: fit_folds(old, [-1] * len(old), 1, L2, args.steps)[0], k)
        out[f"pooled with the others', K={k}"] = lambda k=k: s.scored(lambda n, old: s.pooled(n, old, args.steps), k)
    return {name: run for name, run in out.items() if not args.rows or any(r in name for r in args.rows.split(";"))}


def references(s: Setup, args: argparse.Namespace) -> dict[str, dict[str, np.ndarray]]:
    """repo -> {"auto": the dump's own run of the shipped model, "bm25-strong": the development
    set script's baseline} per evaluation task (MRR@10, Acc@1)."""
    devset = _devset(args.devset)
    out: dict[str, dict[str, np.ndarray]] = {}
    for name, ids in s.ids.items():
        rep = json.loads((args.work / "out" / name / "report.json").read_text(encoding="utf-8"))
        auto = {q["id"]: q["metrics"] for q in rep["datasets"]["commits"]["queries"] if q["mode"] == "auto"}
        row = {"auto": np.array([[auto[i]["mrr@10"], auto[i]["acc@1"]] for i in ids])}
        if devset is not None:
            tasks, cache, got = saved_tasks(args.work, name), {}, []
            for i in ids:
                t = tasks[i]
                ranked = devset.bm25_rank(devset.tree_docs(str(args.work / "clones" / name), t["ref"], cache),
                                          t["query"])[:10]
                m = devset.case_metrics(next((r for r, p in enumerate(ranked) if p in set(t["gold_files"])), None))
                got.append([m["mrr@10"], m["acc@1"]])
            row["bm25-strong"] = np.array(got)
        out[name] = row
    return out


def _devset(path: Path | None):
    """The development set script as a module (its bm25-strong functions), when it is there."""
    script = path / "run_devset.py" if path else None
    if script is None or not script.exists():
        return None
    spec = importlib.util.spec_from_file_location("run_devset", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def summary(s: Setup, refs: dict[str, dict[str, np.ndarray]], base: dict[str, np.ndarray],
            best: dict[str, np.ndarray], label: str, ks: str = "") -> None:
    """Per repository: the references, the global model and `best` on the evaluation tasks."""
    cols = ["bm25-strong", "auto", "global (LORO)", label]
    print(f"\n| repository | eval | older | " + " | ".join(f"{c} MRR@10" for c in cols) + " | Δ | "
          + " | ".join(f"{c} Acc@1" for c in cols) + f" | inner CV's L2 (K={ks.replace(',', '/')}) |")
    print("|---|---:|---:|" + "---:|" * (2 * len(cols) + 1) + "---|")
    pooled: dict[str, list[np.ndarray]] = {c: [] for c in cols}
    for n in s.targets:
        got = {**refs.get(n, {}), "global (LORO)": base[n], label: best[n]}
        for c in cols:
            pooled[c] += [got[c]] if c in got else []
        fmt = lambda c, j: f"{got[c][:, j].mean():.3f}" if c in got else "—"  # noqa: E731
        lam = "/".join(f"{v:g}" for (k, m), v in sorted(s.chosen.items()) if m == n)
        print(f"| {n} | {len(s.ids[n])} | {len(s.targets[n][1])} | " + " | ".join(fmt(c, 0) for c in cols)
              + f" | {best[n][:, 0].mean() - base[n][:, 0].mean():+.3f} | " + " | ".join(fmt(c, 1) for c in cols)
              + f" | {lam} |")
    allv = {c: np.vstack(v) for c, v in pooled.items() if v}
    print(f"| pooled | {sum(map(len, s.ids.values()))} | | " + " | ".join(
        f"{allv[c][:, 0].mean():.3f}" if c in allv else "—" for c in cols) + " | | " + " | ".join(
        f"{allv[c][:, 1].mean():.3f}" if c in allv else "—" for c in cols) + " | |")


def judge(args: argparse.Namespace) -> None:
    s = Setup(args)
    if not s.targets:
        raise SystemExit(f"no features under {args.work / 'features'}: run `dump` first")
    base = s.scored(lambda n, old: s.w_global(n), 0)
    print(f"{sum(map(len, s.ids.values()))} evaluation tasks of {len(s.targets)} repositories; older tasks: "
          + ", ".join(f"{n.split('+')[-1]} {len(old)}" for n, (_, old) in s.targets.items()))
    runs = variants(s, args)
    results: dict[str, dict[str, np.ndarray]] = {}
    judge_rows(base, {name: (lambda name=name, run=run: results.setdefault(name, run())) for name, run in runs.items()},
               args, "the global model, leave-one-repository-out")
    pick = f"{args.summary}, K={max(map(int, args.ks.split(',')))}"
    if pick in results:
        summary(s, references(s, args), base, results[pick], pick, args.ks)


def dump(args: argparse.Namespace) -> None:
    """Each repository's newest `--tasks` commit tasks with their features (train_ranker dump's
    layout under --work), with the CPU seconds each run took."""
    mirror = Path(os.environ["MIRROR"])
    (args.work / "features").mkdir(parents=True, exist_ok=True)
    for name in (args.only.split(",") if args.only else REPOS):
        clone, out = (args.clones or args.work / "clones") / name, args.work / "out" / name
        if not clone.is_dir():
            subprocess.run(["git", "clone", "-q", "--no-checkout", str(mirror / name / "repo"), str(clone)], check=True)
        out.mkdir(parents=True, exist_ok=True)
        feats = args.work / "features" / f"{name}.jsonl"
        feats.unlink(missing_ok=True)
        before = os.times()
        r = subprocess.run([args.bin, "eval", "--repo", str(clone), "--dataset", "commits", "--newest",
                            "--skip", str(args.skip), "--limit", str(args.tasks), "--modes", "auto,auto-no-history,bm25-file",
                            "--embedder", "none", "--workdir", str(args.work / "eval" / name),
                            "--save-dataset", str(out), "--out", str(out / "report.json"),
                            "--features-out", str(feats), "--quiet"], capture_output=True, text=True)
        after = os.times()
        cpu = after.children_user + after.children_system - before.children_user - before.children_system
        print(f"{name}: exit {r.returncode}, {cpu:.0f} s CPU for {args.tasks} tasks", file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, required=True, help="this experiment's dump (newest tasks per repository)")
    ap.add_argument("--only", default="")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump")
    d.add_argument("--bin", default="codeagent")
    d.add_argument("--tasks", type=int, default=60)
    d.add_argument("--skip", type=int, default=0, help="leave the newest N out (a further dump of older tasks: judge --older)")
    d.add_argument("--clones", type=Path, default=None, help="where the clones are (default: --work's)")
    j = sub.add_parser("judge")
    j.add_argument("--base-work", type=Path, required=True, help="train_ranker dump's directory (the global model's tasks)")
    j.add_argument("--eval", type=int, default=20)
    j.add_argument("--older", type=Path, action="append", default=[],
                   help="a dump of still older tasks (`dump --skip`), appended to the older ones; repeatable")
    j.add_argument("--summary", default="adapt L2 by inner CV", help="the row, at the largest K, of the per-repository table")
    j.add_argument("--ks", default=",".join(map(str, KS)))
    j.add_argument("--grid", default=",".join(map(str, GRID)))
    j.add_argument("--rows", default="", help="only the rows whose name holds one of these (;-separated)")
    j.add_argument("--steps", type=int, default=STEPS)
    j.add_argument("--boot", type=int, default=2000)
    j.add_argument("--per-repo", action="store_true")
    j.add_argument("--devset", type=Path, default=None,
                   help="the development set's directory (../shared/devset: run_devset.py's bm25-strong)")
    args = ap.parse_args()
    dump(args) if args.cmd == "dump" else judge(args)


if __name__ == "__main__":
    main()
