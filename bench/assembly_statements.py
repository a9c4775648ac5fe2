"""Where a cold build's assembly spends its time, statement by statement.

    python bench/assembly_statements.py REPO [--store DIR] [--top 40] [--json OUT] [-- BUILD ARGS]
    python bench/assembly_statements.py REPO --baseline PYTHON [--rounds 2] [--store DIR]

Runs `codeagent build REPO --store DIR` in this process (DIR: a fresh temporary directory
unless given; it is emptied first) with every DuckDB connection the build opens wrapped: each
statement a call sends (a script is cut into its statements and run one by one, as DuckDB
would) is timed, wall and process CPU (DuckDB's threads included; during the row batches the
postings job runs beside the caller, so a statement's CPU there also counts that job's).
Prints the statements by CPU, the step totals, and the load average; --json writes every
statement's figures (compare two scales' files with --compare A.json B.json: each
statement's growth, by the same text).

With --baseline (the Python of another checkout's environment, whose codeagent is the previous
code), this script runs cold builds of REPO in subprocesses, the previous code and this one
alternated `--rounds` times, and prints the medians of each one's process CPU and wall, and the
CPU of the statements that write term_postings (their insert, and the previous code's sort),
with the ratio this / previous and the load average of each run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import duckdb

RECORDS: list[tuple[str, float, float]] = []


def _label(sql: str) -> str:
    return re.sub(r"\s+", " ", sql).strip()[:160]


class _Timed:
    """A DuckDB connection or cursor whose execute() is timed statement by statement."""

    def __init__(self, con) -> None:
        self._con = con

    def execute(self, sql, *args, **kw):
        statements = self._con.extract_statements(sql) if not args and not kw else None
        if statements is None or len(statements) <= 1:
            return self._one(sql, *args, **kw)
        for statement in statements:
            result = self._one(statement.query)
        return result

    def _one(self, sql, *args, **kw):
        w, c = time.perf_counter(), time.process_time()
        try:
            out = self._con.execute(sql, *args, **kw)
        finally:
            RECORDS.append((_label(sql), time.perf_counter() - w, time.process_time() - c))
        return self if out is self._con else out

    def cursor(self):
        return _Timed(self._con.cursor())

    def __getattr__(self, name):
        return getattr(self._con, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._con.close()


def _install() -> None:
    real = duckdb.connect

    def connect(*args, **kw):
        return _Timed(real(*args, **kw))

    duckdb.connect = connect


def _summary(records: list[tuple[str, float, float]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"wall": 0.0, "cpu": 0.0, "n": 0})
    for label, wall, cpu in records:
        row = out[label]
        row["wall"] += wall
        row["cpu"] += cpu
        row["n"] += 1
    return dict(out)


def _compare(a: Path, b: Path, top: int) -> None:
    sa, sb = (json.loads(p.read_text()) for p in (a, b))
    rows = sorted(sb.items(), key=lambda kv: -kv[1]["cpu"])[:top]
    print(f"{'cpu A':>8} {'cpu B':>8} {'B/A':>6}  statement")
    for label, fb in rows:
        fa = sa.get(label, {"cpu": 0.0})
        ratio = fb["cpu"] / fa["cpu"] if fa["cpu"] > 0.01 else float("nan")
        print(f"{fa['cpu']:8.2f} {fb['cpu']:8.2f} {ratio:6.2f}  {label[:120]}")
    print(f"total: {sum(v['cpu'] for v in sa.values()):.1f} -> {sum(v['cpu'] for v in sb.values()):.1f} s CPU")


_PROCESS = re.compile(r"this process ([0-9.]+) s CPU, ([0-9.]+) s wall; load average ([0-9.]+)")


def _one_build(python: str, repo: Path, store: Path, build_args: list[str]) -> dict[str, float]:
    """One cold build by `python`'s codeagent, timed by this script in a subprocess."""
    out = store.with_suffix(".json")
    run = subprocess.run([python, __file__, str(repo), "--store", str(store), "--json", str(out), "--top", "0",
                          *build_args], capture_output=True, text=True, check=True)
    cpu, wall, load = map(float, _PROCESS.search(run.stderr).groups())
    statements = json.loads(out.read_text())
    postings = sum(f["cpu"] for label, f in statements.items() if "term_postings" in label)
    shutil.rmtree(store, ignore_errors=True)
    return {"cpu": cpu, "wall": wall, "postings": postings, "load": load}


def _alternate(repo: Path, baseline: str, rounds: int, store: Path, build_args: list[str]) -> None:
    codes = {"previous": baseline, "this": sys.executable}
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in codes}
    for i in range(rounds):
        for name, python in (codes.items() if i % 2 == 0 else reversed(codes.items())):
            runs[name].append(_one_build(python, repo, store / name, build_args))
            r = runs[name][-1]
            print(f"round {i + 1} {name:8}: CPU {r['cpu']:.1f} s, wall {r['wall']:.1f} s, "
                  f"term_postings statements {r['postings']:.2f} s CPU, load {r['load']:.1f}", flush=True)
    median = {name: {k: statistics.median(r[k] for r in rs) for k in ("cpu", "wall", "postings")}
              for name, rs in runs.items()}
    for k in ("cpu", "wall", "postings"):
        a, b = median["previous"][k], median["this"][k]
        print(f"median {k:8}: previous {a:.2f} s, this {b:.2f} s, ratio {b / a:.2f}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path, nargs="?")
    ap.add_argument("--store", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"))
    ap.add_argument("--baseline", help="the previous code's Python: alternate cold builds with it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("build_args", nargs="*")
    args = ap.parse_args()
    if args.compare:
        _compare(*args.compare, args.top)
        return
    if args.baseline:
        store = args.store or Path(tempfile.mkdtemp(prefix="codeagent-stmts-"))
        store.mkdir(parents=True, exist_ok=True)
        _alternate(args.repo, args.baseline, args.rounds, store, args.build_args)
        return
    store = args.store or Path(tempfile.mkdtemp(prefix="codeagent-stmts-"))
    shutil.rmtree(store, ignore_errors=True)
    _install()
    from codeagent.cli import main as cli  # after the patch: the build connects through it

    os.environ["CODEAGENT_DAEMON"] = "0"
    w, c = time.perf_counter(), time.process_time()
    try:
        cli(["build", str(args.repo), "--store", str(store), "--json", *args.build_args], standalone_mode=True)
    except SystemExit as exit_:
        if exit_.code not in (0, None):
            raise
    wall, cpu = time.perf_counter() - w, time.process_time() - c
    summary = _summary(RECORDS)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1))
    print(f"\n{'cpu s':>8} {'wall s':>8} {'n':>5}  statement", file=sys.stderr)
    for label, f in sorted(summary.items(), key=lambda kv: -kv[1]["cpu"])[:args.top]:
        print(f"{f['cpu']:8.2f} {f['wall']:8.2f} {f['n']:5d}  {label[:120]}", file=sys.stderr)
    timed = sum(f["cpu"] for f in summary.values())
    print(f"statements: {timed:.1f} s CPU; this process {cpu:.1f} s CPU, {wall:.1f} s wall; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", file=sys.stderr)


if __name__ == "__main__":
    main()
