"""Search latency of two versions of the code, query by query in turn, on the same index.

    python bench/interleaved.py --before PYTHON [--dest DIR] [--rounds N]

Two worker processes, PYTHON's codeagent ("before") and this interpreter's ("after"), open
the stdlib corpus index (bench/corpus.py, built by bench/query.py or here) as the server does
(a long-lived view, warmed up) and answer bench/query.py's query sets: auto on natural language,
on report-length queries, on two-word terms, and BM25 text search as a control. The driver
sends each query to one, then the other, alternating which goes first, so both see the same
load at the same moments: on a shared machine the ratio is the figure to read. Each answer
reports its wall and CPU time (the process's, DuckDB's threads included); the table gives
p50/p95 of both per kind.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import percentile  # noqa: E402

KINDS = ("auto natural language", "auto report-length", "auto 2 terms", "bm25 natural language")


def worker(dest: Path) -> None:
    """Answer 'kind<TAB>index' lines with 'cpu_ms wall_ms' (one long-lived view)."""
    from query import NL_QUERIES, TERM_QUERIES, report_queries

    from codeagent.query import IndexFollower, SearchRequest, search, search_text

    sets = dict(zip(KINDS, (NL_QUERIES, report_queries(dest), TERM_QUERIES, NL_QUERIES)))
    follower = IndexFollower(dest, ref="main")
    with follower.view() as view:
        def run(kind: str, q: str) -> None:
            search_text(view, q) if kind == "bm25 natural language" else search(view, SearchRequest(q))

        for kind, queries in sets.items():  # warm: the resident tables load on first use
            for q in queries:
                run(kind, q)
        print("ready", flush=True)
        for line in sys.stdin:
            kind, i = line.rstrip("\n").split("\t")
            cpu, wall = time.process_time(), time.perf_counter()
            run(kind, sets[kind][int(i)])
            print(f"{(time.process_time() - cpu) * 1000} {(time.perf_counter() - wall) * 1000}", flush=True)
    follower.close()


def drive(before: str, dest: Path, rounds: int) -> None:
    from query import NL_QUERIES, TERM_QUERIES, report_queries

    from codeagent.indexer.build import BuildOptions, build
    from corpus import stdlib_repo

    build(BuildOptions(repo=stdlib_repo(dest), rev="main"))
    sizes = dict(zip(KINDS, map(len, (NL_QUERIES, report_queries(dest), TERM_QUERIES, NL_QUERIES))))
    cmd = [__file__, "--worker", "--dest", str(dest)]
    procs = {"before": subprocess.Popen([before, *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True),
             "after": subprocess.Popen([sys.executable, *cmd], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)}
    for p in procs.values():
        if p.stdout.readline().strip() != "ready":
            raise SystemExit("a worker did not start")
    got = {(k, w, m): [] for k in KINDS for w in procs for m in ("wall", "cpu")}
    loads, turn = [os.getloadavg()[0]], 0
    for _ in range(rounds):
        for kind in KINDS:
            for i in range(sizes[kind]):
                turn += 1
                for who in (("before", "after") if turn % 2 else ("after", "before")):
                    procs[who].stdin.write(f"{kind}\t{i}\n")
                    procs[who].stdin.flush()
                    cpu, wall = map(float, procs[who].stdout.readline().split())
                    got[(kind, who, "cpu")].append(cpu)
                    got[(kind, who, "wall")].append(wall)
        loads.append(os.getloadavg()[0])
    for p in procs.values():
        p.stdin.close()
        p.wait()
    print(f"{rounds} rounds; load average (1 min) {min(loads):.1f}-{max(loads):.1f}")
    print("| query kind | n | time | before p50 / p95 ms | after p50 / p95 ms | after / before (p50, p95) |")
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        for m in ("wall", "cpu"):
            b, a = got[(kind, "before", m)], got[(kind, "after", m)]
            mb, ma, pb, pa = statistics.median(b), statistics.median(a), percentile(b, 95), percentile(a, 95)
            print(f"| {kind} | {len(a)} | {m} | {mb:.1f} / {pb:.1f} | {ma:.1f} / {pa:.1f} | "
                  f"{ma / mb:.2f}x, {pa / pb:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="an interpreter with the previous code installed")
    ap.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.dest)
    elif not args.before:
        ap.error("--before PYTHON is required")
    else:
        drive(args.before, args.dest, args.rounds)


if __name__ == "__main__":
    main()
