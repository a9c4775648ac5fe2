"""CPU of an assembly's resident texts step: from the shards it holds in memory (this
checkout) against reading the database's `files.text` column (the previous code).

    python bench/texts_build.py REPO --against PYTHON --against-repo OLD_REPO [--rounds 5]

REPO is a repository built by this checkout, OLD_REPO the same corpus built by the previous
code (a pinned worktree of main with its own venv: PYTHON). Each round starts one process per
version, alternating which goes first, and reports the CPU seconds of the texts step alone,
written into a temporary directory:
  - this checkout: the indexed entries' shards read as the full assembly reads stored ones
    (tables.entry_shards, not timed: a cold build holds them from the parse), then their texts
    fed in path order (`AssemblyTexts.add`, compressing the blocks as they fill) and the
    parts written, as `write_resident` does;
  - the previous code: `resident_write._write_texts` on the assembled database (DuckDB reads
    the column by ranges of paths, then the same blocks).
Prints the medians, ranges, the ratio and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _measure(repo: Path) -> float:
    """CPU seconds of the texts step of REPO's newest assembly, with this interpreter's code."""
    import duckdb

    from codeagent import format as fmt
    from codeagent.format import resident_write
    from codeagent.store import Store

    store = Store(repo / ".codeagent")
    mid = store.read_ref("worktree")  # what `codeagent build REPO` names
    directory = store.assembled_dir(mid)
    con = duckdb.connect(str(directory / fmt.DUCKDB_FILE), read_only=True)
    out = Path(tempfile.mkdtemp(prefix="texts-build-"))
    try:
        if hasattr(resident_write, "_write_texts"):  # the previous code: the column in DuckDB
            start = time.process_time()
            resident_write._write_texts(con, out, resident_write.TEXT_ROWS)
            return time.process_time() - start
        import pyarrow as pa

        from codeagent.format import resident
        from codeagent.format.manifest import load_manifest
        from codeagent.indexer.assemble.tables import entry_shards
        from codeagent.indexer.assemble.texts import AssemblyTexts

        indexed = [f for f in load_manifest(store, mid).files if f.indexed]
        shards = entry_shards(con, store, indexed, {})
        paths = pa.array([f.path for f in indexed], pa.string())
        start = time.process_time()
        texts = AssemblyTexts(full=True)
        texts.add(paths, shards.column("text"))
        resident.write_arrays(out, "texts", texts.built(con, store, None).parts())
        return time.process_time() - start
    finally:
        con.close()
        for p in out.iterdir():
            p.unlink()
        out.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path, nargs="?")
    ap.add_argument("--against", help="the previous code's interpreter")
    ap.add_argument("--against-repo", type=Path, help="the corpus built by the previous code")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # a child: measure once, print JSON
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"cpu": _measure(args.one)}))
        return
    runs: dict[str, list[float]] = {"this": [], "previous": []}
    versions = {"this": (sys.executable, args.repo), "previous": (args.against, args.against_repo)}
    for i in range(args.rounds):
        for name in (["this", "previous"] if i % 2 == 0 else ["previous", "this"]):
            python, repo = versions[name]
            out = subprocess.run([python, __file__, "--one", str(repo)], check=True, capture_output=True,
                                 text=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1])["cpu"])
    for name, values in runs.items():
        print(f"{name}: CPU median {statistics.median(values):.3f} s "
              f"(range {min(values):.3f}-{max(values):.3f}, {len(values)} rounds)")
    ratio = statistics.median(runs["this"]) / statistics.median(runs["previous"])
    print(f"ratio this / previous: {ratio:.2f}x; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
