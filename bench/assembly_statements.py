"""Where a cold build's assembly spends its time, statement by statement.

    python bench/assembly_statements.py REPO [--store DIR] [--top 40] [--json OUT] [-- BUILD ARGS]

Runs `codeagent build REPO --store DIR` in this process (DIR: a fresh temporary directory
unless given; it is emptied first) with every DuckDB connection the build opens wrapped: each
statement a call sends (a script is cut into its statements and run one by one, as DuckDB
would) is timed, wall and process CPU (DuckDB's threads included; during the row batches the
postings job runs beside the caller, so a statement's CPU there also counts that job's).
Prints the statements by CPU, the step totals, and the load average; --json writes every
statement's figures (compare two scales' files with --compare A.json B.json: each
statement's growth, by the same text).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path, nargs="?")
    ap.add_argument("--store", type=Path)
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--compare", type=Path, nargs=2, metavar=("A", "B"))
    ap.add_argument("build_args", nargs="*")
    args = ap.parse_args()
    if args.compare:
        _compare(*args.compare, args.top)
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
