"""What history costs: the history step of a build, and query latency with and without it.

    python bench/history.py REPO [--rounds 3] [--queries 30]

REPO is any git clone with history (a development-set repository, say). Builds its HEAD~1
into a fresh store (the first history view: every commit of the window mined), then HEAD
(one commit mined), then a one-file work-tree edit (the view of HEAD reused), and prints the
history step's seconds and bytes, per 1,000 commits. Then times `search` in process on the
HEAD index, natural-language queries (the subjects of the repository's newest commits, read at
run time) and report-length ones (several messages with a traceback of the repository's own
paths, 2-25k characters), with the history field on and off (`history=False`, the ablation),
alternating, and prints p50/p95 of each and the ratio. Nothing it reads is kept.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from codeagent.format.history import view_dir
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import SearchRequest, open_index, search


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def _cpu() -> float:
    t = os.times()
    return t.user + t.system


def build_costs(repo: Path, store: Path) -> None:
    head = _git(repo, "rev-parse", "HEAD").strip()
    parent = _git(repo, "rev-parse", "HEAD~1").strip()
    rows = []
    for label, rev in (("first view (HEAD~1)", parent), ("next commit (HEAD)", head)):
        r = build(BuildOptions(repo=repo, store_dir=store, rev=rev))
        h = r.history or {}
        size = _size(view_dir(store, rev))
        per_k = 1000.0 / max(h.get("commits", 0), 1)
        rows.append((label, h.get("commits", 0), h.get("mined", 0), h.get("seconds", 0.0), size,
                     h.get("seconds", 0.0) * per_k, size * per_k))
    print("| build | commits in view | mined | history s | view bytes | s per 1k commits | bytes per 1k commits |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, n, mined, sec, size, spk, bpk in rows:
        print(f"| {label} | {n} | {mined} | {sec:.3f} | {size:,} | {spk:.3f} | {bpk:,.0f} |")


def edit_cost(repo: Path, store: Path, rounds: int) -> None:
    """A one-file work-tree edit's build, with and without the history step (CPU seconds)."""
    work = Path(tempfile.mkdtemp(prefix="hist-edit-"))
    try:
        subprocess.run(["git", "clone", "-q", str(repo), str(work / "r")], check=True)
        target = next(p for p in sorted((work / "r").rglob("*.py")) + sorted((work / "r").rglob("*.go"))
                      + sorted((work / "r").rglob("*.rs")) + sorted((work / "r").rglob("*.js")) if ".git" not in p.parts)
        out = {True: [], False: []}
        for history in (True, False):
            build(BuildOptions(repo=work / "r", store_dir=work / f"s{history}", history=history))
        for i in range(rounds):
            for history in (True, False) if i % 2 == 0 else (False, True):
                with open(target, "a", encoding="utf-8") as fh:
                    fh.write(f"\n# edit {i} {history}\n")
                time.sleep(0.2)  # past the stat cache's racy window (sources.RACY_NS)
                c = _cpu()
                build(BuildOptions(repo=work / "r", store_dir=work / f"s{history}", history=history))
                out[history].append(_cpu() - c)
        on, off = statistics.median(out[True]), statistics.median(out[False])
        print(f"\none-file edit build, CPU s median of {rounds}: history on {on:.3f}, off {off:.3f}, ratio {on / off:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def queries(repo: Path, n: int) -> tuple[list[str], list[str]]:
    subjects = [s for s in _git(repo, "log", "--no-merges", f"--max-count={n * 3}", "--format=%s").splitlines()
                if len(s.split()) >= 3][:n]
    bodies = _git(repo, "log", "--no-merges", "--max-count=400", "--format=%B%x00").split("\0")
    paths = [p for p in _git(repo, "ls-files").splitlines() if p.endswith((".py", ".go", ".rs", ".js", ".ts"))]
    rnd = random.Random(7)
    reports = []
    for _ in range(max(n // 3, 5)):
        frames = "\n".join(f'  File "/src/{rnd.choice(paths)}", line {rnd.randint(1, 900)}, in handler'
                           for _ in range(rnd.randint(3, 12))) if paths else ""
        text = "\n\n".join(rnd.sample(bodies, min(len(bodies), rnd.randint(3, 40))))
        reports.append((text + "\nTraceback (most recent call last):\n" + frames + "\nValueError: bad input")[:25000])
    return subjects, reports


def latency(repo: Path, store: Path, rounds: int, n: int) -> None:
    nl, reports = queries(repo, n)
    times: dict[tuple[str, bool], list[float]] = {}
    head = _git(repo, "rev-parse", "HEAD").strip()
    with open_index(repo, store, f"commits/{head}") as view:
        for kind, qs in (("natural language", nl), ("report-length", reports)):
            for q in qs[:2]:
                search(view, SearchRequest(q, limit=10))  # warm
            for r in range(rounds):
                for history in (True, False) if r % 2 == 0 else (False, True):
                    for q in qs:
                        t = time.perf_counter()
                        search(view, SearchRequest(q, limit=10, history=history))
                        times.setdefault((kind, history), []).append((time.perf_counter() - t) * 1000)
    print(f"\n| queries ({rounds} rounds) | history on p50 / p95 ms | off p50 / p95 ms | p95 ratio |")
    print("|---|---|---|---:|")
    for kind in ("natural language", "report-length"):
        on, off = sorted(times[(kind, True)]), sorted(times[(kind, False)])
        p = lambda xs, q: xs[min(len(xs) - 1, int(q * len(xs)))]  # noqa: E731
        print(f"| {kind} ({len(on) // rounds}) | {p(on, .5):.1f} / {p(on, .95):.1f} | {p(off, .5):.1f} / {p(off, .95):.1f} "
              f"| {p(on, .95) / p(off, .95):.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--queries", type=int, default=30)
    a = ap.parse_args()
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)
    store = Path(tempfile.mkdtemp(prefix="hist-bench-"))
    try:
        build_costs(a.repo.resolve(), store)
        latency(a.repo.resolve(), store, a.rounds, a.queries)
        edit_cost(a.repo.resolve(), store, a.rounds)
    finally:
        shutil.rmtree(store, ignore_errors=True)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}", file=sys.stderr)


if __name__ == "__main__":
    main()
