"""Symbol-graph throughput on the stdlib corpus: symbols/s and edges/s of a full recompute,
and the incremental step after one or ten files changed.

Builds the stdlib corpus (bench/corpus.py) once, then re-runs the graph step on a copy of the
assembled DuckDB file REPEAT times and prints medians, plus edge counts by kind/confidence.
Incremental rows mark files as changed (assemble's delta tables) without changing them, so
the step re-resolves everything those files touch. The peer row materialises the BM25
term statistics (the term_df view) on the same database, for scale.

    python bench/graph.py [--dest /tmp/codeagent-stdlib] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpus import median, print_table, stdlib_repo  # noqa: E402


def _assembled_db(repo: Path) -> Path:
    from codeagent import format as fmt
    from codeagent.indexer.build import BuildOptions, build
    from codeagent.store import Store

    result = build(BuildOptions(repo=repo, rev="main"))
    return Store(repo / ".codeagent").assembled_dir(result.manifest_id) / fmt.DUCKDB_FILE


def _time_step(db: Path, step, repeat: int, changed: list[str] | None = None) -> list[float]:
    import duckdb

    out = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "index.duckdb"
        shutil.copyfile(db, copy)
        con = duckdb.connect(str(copy))
        try:
            for _ in range(repeat):
                if changed is not None:
                    con.execute("CREATE OR REPLACE TEMP TABLE delta_removed AS "
                                "SELECT unnest(?::VARCHAR[]) AS path", [changed])
                    con.execute("CREATE OR REPLACE TEMP TABLE delta_added AS SELECT * FROM delta_removed")
                t = time.perf_counter()
                step(con, None)
                out.append(time.perf_counter() - t)
        finally:
            con.close()
    return out


def _bm25_statistics(con, manifest) -> None:
    """Peer: materialise the BM25 corpus statistics (document frequency of every term)."""
    con.execute("CREATE OR REPLACE TEMP TABLE peer_df AS SELECT * FROM term_df")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-stdlib")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    import duckdb

    from codeagent.indexer.assemble import graph

    repo = stdlib_repo(args.dest)
    t = time.perf_counter()
    db = _assembled_db(repo)
    print(f"corpus {repo}: build {time.perf_counter() - t:.1f}s -> {db}")
    graph_times = _time_step(db, graph.symbol_graph, args.repeat)
    phases = dict(graph.LAST_TIMINGS)
    bm25_times = _time_step(db, _bm25_statistics, args.repeat)  # the peer
    con = duckdb.connect(str(db), read_only=True)
    paths = [r[0] for r in con.execute("SELECT path FROM files ORDER BY hash(path) LIMIT 10").fetchall()]
    con.close()
    inc1 = _time_step(db, graph.symbol_graph, args.repeat, paths[:1])
    inc10 = _time_step(db, graph.symbol_graph, args.repeat, paths)
    con = duckdb.connect(str(db), read_only=True)
    n_files = con.execute("SELECT count(*) FROM files WHERE status = 'indexed'").fetchone()[0]
    n_sym = con.execute("SELECT count(*) FROM symbols").fetchone()[0]
    n_refs = con.execute("SELECT count(*) FROM refs").fetchone()[0]
    n_edges = con.execute("SELECT count(*) FROM edges").fetchone()[0]
    by_kind = con.execute("""SELECT kind, confidence, count(*) FROM edges GROUP BY ALL
        ORDER BY kind, confidence""").fetchall()
    resolved = con.execute("""SELECT count(DISTINCT (src_path, src_line, target)) FROM edges
        WHERE kind = 'calls'""").fetchone()[0]
    n_calls = con.execute("SELECT count(*) FROM refs WHERE kind = 'call'").fetchone()[0]
    con.close()
    g, b = median(graph_times), median(bm25_times)
    print_table(
        ["step", "files", "symbols", "refs", "edges", "median s", "symbols/s", "edges/s", "vs bm25"],
        [["graph", n_files, n_sym, n_refs, n_edges, f"{g:.3f}", f"{n_sym / g:,.0f}",
          f"{n_edges / g:,.0f}", f"{g / b:.1f}x"],
         ["graph, 1 file changed", 1, "", "", "", f"{median(inc1):.3f}", "", "", f"{median(inc1) / b:.1f}x"],
         ["graph, 10 files changed", 10, "", "", "", f"{median(inc10):.3f}", "", "", f"{median(inc10) / b:.1f}x"],
         ["bm25 stats (peer)", n_files, n_sym, "", "", f"{b:.3f}", "", "", "1.0x"]])
    print()
    print("graph phases (last full run): " + ", ".join(f"{k} {v:.3f}s" for k, v in phases.items()))
    print(f"machine load average: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"call sites with at least one resolved edge: {resolved}/{n_calls}")
    print()
    print_table(["edge kind", "confidence", "count"], [list(r) for r in by_kind])


if __name__ == "__main__":
    main()
