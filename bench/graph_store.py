"""The graph step's full recompute on an assembly a build left, this code against another's.

    python bench/graph_store.py DB [--baseline PYTHON] [--rounds 2]

DB: an assembled index.duckdb (e.g. STORE/assembled/<id>/index.duckdb of a cold build of
bench/scale.py's 10x corpus), copied to a temporary file per run and never written. Each run
(a subprocess: `--one`) recomputes the whole symbol graph under the assembly's derived-step
DuckDB limit and prints its process CPU, wall, edge count and an order-free hash of the
edges. With --baseline (the Python of another checkout's environment) the previous code and
this one alternate `--rounds` times; printed: each run, the medians, the ratio this /
previous, whether the edges are the same, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LIMIT = "640MiB"  # the 10x corpus's derived-step limit under the default budget


def _one(db: Path) -> dict:
    import duckdb

    from codeagent.indexer.assemble.graph import symbol_graph

    with tempfile.TemporaryDirectory(prefix="codeagent-graph-") as tmp:
        copy = Path(tmp) / "index.duckdb"
        shutil.copyfile(db, copy)
        con = duckdb.connect(str(copy))
        con.execute(f"SET memory_limit = '{LIMIT}'")
        c, w = time.process_time(), time.perf_counter()
        symbol_graph(con, None)
        cpu, wall = time.process_time() - c, time.perf_counter() - w
        edges, digest = con.execute("SELECT count(*), sum(hash(src_id, src_line, dst_id, kind, confidence, target))"
                                    " FROM edges").fetchone()
        con.close()
    return {"cpu": cpu, "wall": wall, "edges": edges, "hash": str(digest), "load": os.getloadavg()[0]}


def _run(python: str, db: Path) -> dict:
    out = subprocess.run([python, __file__, str(db), "--one"], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("db", type=Path)
    ap.add_argument("--baseline", help="the previous code's Python: alternate with it")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        print(json.dumps(_one(args.db)))
        return
    codes = {"previous": args.baseline, "this": sys.executable} if args.baseline else {"this": sys.executable}
    runs: dict[str, list[dict]] = {name: [] for name in codes}
    for i in range(args.rounds):
        for name, python in (codes.items() if i % 2 == 0 else reversed(codes.items())):
            r = _run(python, args.db)
            runs[name].append(r)
            print(f"round {i + 1} {name:8}: CPU {r['cpu']:.1f} s, wall {r['wall']:.1f} s, "
                  f"{r['edges']} edges, load {r['load']:.1f}", flush=True)
    median = {name: {k: statistics.median(r[k] for r in rs) for k in ("cpu", "wall")} for name, rs in runs.items()}
    for k in ("cpu", "wall"):
        line = ", ".join(f"{name} {m[k]:.2f} s" for name, m in median.items())
        ratio = f", ratio {median['this'][k] / median['previous'][k]:.2f}" if "previous" in median else ""
        print(f"median {k:4}: {line}{ratio}")
    hashes = {r["hash"] for rs in runs.values() for r in rs}
    print(f"edges the same in every run: {len(hashes) == 1}; "
          f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
