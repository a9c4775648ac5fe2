"""A full assembly's postings step alone, the two ways to get term_postings in term order.

    python bench/postings_step.py STORE [--ref REF] [--memory 1G] [--rounds 2] [--under DIR ...]

Reads the manifest STORE's ref points to (a store a cold build left) and, in a fresh DuckDB
database under STORE's tmp/ per run, does what a full assembly does with its postings: per
batch of the budget's size, the shards' postings rows (`postings_rows`); then term_postings in
term order, either by the previous code's way (each batch inserted as it comes, then one
`CREATE TABLE ... ORDER BY term`: `sort`) or this code's (each batch spooled, then merged into
the table: `merge`), under the DuckDB limits the assembly sets (its inserting share, then its
derived share). The two alternate `--rounds` times; printed per run and as medians: the
process CPU and wall of the final step (the sort, or the merge and its insert) and of the
whole step, the database's size, and the load average. `--under DIR` (repeatable) keeps the
files under those directories only: on the 10x corpus of bench/scale.py, `--under c00` is the
1x corpus's files and `--under c00 --under c01 --under c02` the 3x's, so one 10x store gives
the step's growth.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import time
from pathlib import Path

import pyarrow as pa

from codeagent.format.assembly import TABLES_SQL
from codeagent.format.manifest import load_manifest
from codeagent.indexer.assemble.base import checkpoint, connect
from codeagent.indexer.assemble.postings_merge import PostingsRuns
from codeagent.indexer.assemble.tables import batches, entry_shards
from codeagent.indexer.assemble.term_postings import insert_postings, sort_postings
from codeagent.indexer.budget import memory_budget
from codeagent.refs import WORKTREE_REF
from codeagent.store import Store


def _run(store: Store, manifest, mode: str, memory, under: set[str]) -> dict[str, float]:
    work = store.tmp_dir / f"postings-bench-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    con = connect(work / "index.duckdb", (memory.duckdb_limit, work / "spill"))
    merge = PostingsRuns(work / "runs", memory.postings_round_rows) if mode == "merge" else None
    try:
        con.execute(TABLES_SQL)
        w0, c0 = time.perf_counter(), time.process_time()
        indexed = [f for f in manifest.files if f.indexed and (not under or f.path.split("/")[0] in under)]
        for run in batches(indexed, memory.assembly_batch_bytes):
            shards = entry_shards(con, store, run, {})
            insert_postings(con, shards, pa.array([f.path for f in run], pa.string()),
                            merge.add if merge else None)
        con.execute(f"SET memory_limit = '{memory.derived_duckdb_limit}B'")
        w1, c1 = time.perf_counter(), time.process_time()
        if merge is not None:
            merge.insert_into(con)
        else:
            sort_postings(con)
        w2, c2 = time.perf_counter(), time.process_time()
        checkpoint(con)
        rows = con.execute("SELECT count(*) FROM term_postings").fetchone()[0]
        con.close()
        return {"final_cpu": c2 - c1, "final_wall": w2 - w1, "cpu": time.process_time() - c0,
                "wall": time.perf_counter() - w0, "rows": rows,
                "mb": (work / "index.duckdb").stat().st_size / 1e6, "load": os.getloadavg()[0]}
    finally:
        con.close()
        if merge is not None:
            merge.close()
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("store", type=Path)
    ap.add_argument("--ref", default=WORKTREE_REF)
    ap.add_argument("--memory")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--under", action="append", default=[], help="keep the files under this top directory")
    args = ap.parse_args()
    store, memory = Store(args.store), memory_budget(args.memory)
    manifest = load_manifest(store, store.read_ref(args.ref))
    runs: dict[str, list[dict[str, float]]] = {"sort": [], "merge": []}
    for i in range(args.rounds):
        for mode in ("sort", "merge") if i % 2 == 0 else ("merge", "sort"):
            r = _run(store, manifest, mode, memory, set(args.under))
            runs[mode].append(r)
            print(f"round {i + 1} {mode:5}: final step {r['final_cpu']:.1f} s CPU / {r['final_wall']:.1f} s wall; "
                  f"whole {r['cpu']:.1f} s CPU / {r['wall']:.1f} s wall; {r['rows']} rows, {r['mb']:.0f} MB; "
                  f"load {r['load']:.1f}", flush=True)
    for key in ("final_cpu", "final_wall", "cpu", "wall", "mb"):
        a, b = (statistics.median(r[key] for r in runs[m]) for m in ("sort", "merge"))
        print(f"median {key:10}: sort (previous) {a:.2f}, merge (this) {b:.2f}, ratio {b / a:.2f}")
    print(f"load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
