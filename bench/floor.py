"""How low a cold build of the stdlib corpus can go, against universal-ctags in the same run.

    python bench/floor.py [--repeat 3] [--jobs 2] [--corpus DIR]

Each "floor" row runs a stripped-down pipeline over the corpus's .py files in --jobs forked
worker processes, as the build's parse pool does (grammar loaded and query compiled before
the clock starts, nothing sent back), and prints its wall time as a multiple of `ctags -R`:

  1. tree-sitter parse only: no Python per node at all;
  2. + the query that finds every node the extraction rules look at (the walk's first step,
     in C; the walk then runs Python per captured node);
  3. + one minimal Parquet file per file (3 columns, 1 row): the least a shard costs.

Then the real cold build (what `codeagent build` runs, fresh store, fresh process) with its
parse and assemble phases and the symbol graph's share of the latter. "Row 3 + the assemble
phase" is what a cold build would still take with an extractor, tokenizer and shard encoder
that cost nothing beyond row 3, on the same DuckDB assembly: the part of the 8x target the
rest of the pipeline has to fit in.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, print_table, stdlib_repo, stdlib_sources  # noqa: E402

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

from codeagent.indexer.extract.treesitter import _parser, rules_for  # noqa: E402
from codeagent.indexer.extract.walk import _matches  # noqa: E402

STAGES = ("parse", "captures", "parquet")
_RULES = rules_for("python")
_TYPES = _RULES.interesting()
_PLAIN = {t: _RULES.calls[t] for t in _RULES.plain_calls}
_FILES: list[bytes] = []  # the corpus, set before the workers fork


def _warm() -> None:
    tree = _parser("python").parse(b"f(x)\n")
    _matches(tree.root_node, tree.language, _TYPES, _PLAIN)


def _stage_job(args: tuple[int, str]) -> int:
    """Run one file through the pipeline up to `stage`; returns the captured node count."""
    i, stage = args
    data = _FILES[i]
    tree = _parser("python").parse(data)
    if stage == "parse":
        return 0
    nodes, calls, _ = _matches(tree.root_node, tree.language, _TYPES, _PLAIN)
    if stage == "parquet":
        pq.write_table(pa.table({"n": [len(nodes)], "m": [len(calls)], "h": [data[:16]]}), io.BytesIO())
    return len(nodes) + len(calls)


def run_stage(pool, stage: str) -> tuple[float, int]:
    start = time.perf_counter()
    captured = sum(pool.imap_unordered(_stage_job, ((i, stage) for i in range(len(_FILES))), chunksize=8))
    return time.perf_counter() - start, captured


def ctags_wall(repo: Path) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run(["ctags", "-R", "--exclude=.codeagent", "-f", str(Path(tmp) / "tags"), "."],
                       cwd=repo, check=True, capture_output=True)
        return time.perf_counter() - start


# A cold build in a fresh process, as `codeagent build --json` runs it, that also reports the
# symbol graph's share of the assemble phase.
_BUILD = """import json, sys
from pathlib import Path
from codeagent.indexer.assemble import graph
from codeagent.indexer.build import BuildOptions, build
r = build(BuildOptions(repo=Path(sys.argv[1]), store_dir=Path(sys.argv[2]), jobs=int(sys.argv[3])))
print(json.dumps({**r.phases, "graph": graph.LAST_TIMINGS.get("total", 0.0)}))
"""


def cold_build(repo: Path, jobs: int) -> tuple[float, dict[str, float]]:
    """(wall seconds of the whole process, phase seconds and the graph step's)."""
    with tempfile.TemporaryDirectory() as store:
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", _BUILD, str(repo), store, str(jobs)], env=ENV,
                             check=True, capture_output=True, text=True).stdout
        return time.perf_counter() - start, json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-build")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    _FILES[:] = [data for _, data in stdlib_sources()]  # the files the corpus repo holds
    print(f"corpus: {repo} ({len(_FILES)} .py files, {sum(map(len, _FILES)) / 1e6:.1f} MB), "
          f"jobs={args.jobs}, repeat={args.repeat}")
    ctags_runs: list[float] = []
    walls: dict[str, list[float]] = {s: [] for s in STAGES}
    builds: list[tuple[float, dict[str, float]]] = []
    captured = 0
    with multiprocessing.get_context("fork").Pool(args.jobs, initializer=_warm) as pool:
        pool.map(int, range(args.jobs))
        for _ in range(args.repeat):  # rounds of every row, so a drift in load hits them alike
            ctags_runs.append(ctags_wall(repo))
            for stage in STAGES:
                wall, n = run_stage(pool, stage)
                walls[stage].append(wall)
                captured = max(captured, n)
            builds.append(cold_build(repo, args.jobs))
    ctags = median(ctags_runs)
    build = median([b[0] for b in builds])
    phase = {k: median([b[1][k] for b in builds]) for k in ("parse", "assemble", "graph")}
    floor = median(walls["parquet"]) + phase["assemble"]

    def row(name: str, wall: float, note: str) -> list[str]:
        return [name, f"{wall:.2f} s", f"{wall / ctags:.1f}x", note]

    print_table(["measure (median wall)", "wall", "ctags x", "note"], [
        row("ctags -R", ctags, ""),
        row("floor 1: tree-sitter parse only", median(walls["parse"]), "no Python per node"),
        row("floor 2: + rule-node query", median(walls["captures"]), f"{captured} nodes captured"),
        row("floor 3: + minimal Parquet per file", median(walls["parquet"]), "3 columns, 1 row"),
        row("cold build", build, "fresh store, fresh process"),
        row("  parse phase", phase["parse"], "read, hash, extract, shards"),
        row("  assemble phase", phase["assemble"], "DuckDB tables, graph, swap"),
        row("    of which symbol graph", phase["graph"], "name resolution SQL"),
        row("floor 3 + assemble phase", floor, "a free extractor, the same assembly"),
        row("8x target", 8 * ctags, f"leaves {8 * ctags - floor:.2f} s for everything else"),
    ])


if __name__ == "__main__":
    main()
