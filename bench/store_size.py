"""What the store holds after a cold build of the stdlib corpus, and what the build wrote.

    python bench/store_size.py [--corpus DIR] [--against PYTHON] [--rounds 1] [--detail]

Builds the corpus cold (`codeagent build`, a fresh process started from outside the corpus)
with this checkout's interpreter and, with --against, with another checkout's (a pinned
worktree of main with its own venv: `--against /work/wt/pin-store-base/.venv/bin/python`),
alternating round by round. For each it prints the store's bytes per object kind (shards,
manifests, vectors objects, action cache, history, the assembly's DuckDB file, each resident
structure, the ANN index and vectors), the source bytes, the ratios, the bytes the build
wrote and its CPU seconds, then the load average. --detail adds the shards' Parquet column
chunks (compressed / uncompressed, from the footers), the DuckDB tables and columns (from
pragma_storage_info: each segment's bytes up to the next one in its block) and the resident
files' columns (their buffers' bytes).

Bytes written: the build runs as a child of this process; once it has been reaped,
/proc/self/io counts its I/O and that of every child it reaped (the parse workers).
`write_bytes` is what the build sent toward the disk (pages it dirtied, counted when
dirtied), the measure the figures use; `cancelled` is the part of it that was truncated or
deleted before writeback (spool and temp files), so write_bytes - cancelled is what reached
the disk; `wchar` counts every write() call's bytes (page cache or not, tmpfs too).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, print_table, stdlib_repo  # noqa: E402

_VECTORS_MAGIC = b"codeagent-vectors"


def _io() -> dict[str, int]:
    with open("/proc/self/io") as fh:
        return {k: int(v) for k, v in (line.split(":") for line in fh)}


def cold_build(python: str, repo: Path, cwd: Path) -> dict:
    """One cold build of `repo` by `python -m codeagent`: its I/O, CPU (user+sys, reaped
    workers included), wall and peak RSS."""
    shutil.rmtree(repo / ".codeagent", ignore_errors=True)
    with tempfile.TemporaryFile() as err:
        before, start = _io(), time.perf_counter()
        proc = subprocess.Popen([python, "-m", "codeagent", "build", str(repo), "--json"], cwd=cwd,
                                stdout=subprocess.PIPE, stderr=err, env=ENV)
        out = proc.stdout.read() if proc.stdout else b""
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        after = _io()
        if status:
            err.seek(0)
            raise SystemExit(f"{python} build failed:\n{err.read().decode()}")
    io = {k: after[k] - before[k] for k in after}
    return {"io": io, "wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss,
            "out": json.loads(out)}


def _kind(path: Path, store: Path) -> str:
    """The object kind a store file counts under."""
    rel = path.relative_to(store).parts
    if rel[0] == "objects":
        with open(path, "rb") as fh:
            head = fh.read(20)
        if head[:4] == b"PAR1":
            return "objects: shards (Parquet)"
        if head.startswith(_VECTORS_MAGIC):
            return "objects: vectors"
        return "objects: manifests" if head[:1] == b"{" else "objects: other"
    if rel[0] == "assembled" and len(rel) > 2:
        name = rel[2]
        if name.startswith("resident."):
            return f"assembled: resident {name.split('.')[1]}"
        if name.startswith("index.duckdb"):
            return "assembled: DuckDB"
        if name.startswith("vector") or name.endswith(".usearch"):
            return "assembled: vectors / ANN"
        return "assembled: other (SUMS, markers, overlay)"
    return {"actions": "action cache", "history": "history records", "cache": "stat caches",
            "refs": "refs", "logs": "logs"}.get(rel[0], "other")


def inventory(store: Path) -> dict[str, list[int]]:
    """kind -> [bytes, files] of every file under `store`."""
    out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for path in store.rglob("*"):
        if path.is_file():
            row = out[_kind(path, store)]
            row[0] += path.stat().st_size
            row[1] += 1
    return dict(out)


def shard_columns(store: Path) -> list[list[object]]:
    """Each shard leaf column's compressed and uncompressed bytes over all shards."""
    import pyarrow.parquet as pq

    comp, unc = collections.Counter(), collections.Counter()
    codecs: dict[str, set[str]] = collections.defaultdict(set)
    for path in (store / "objects").rglob("*"):
        if not path.is_file():
            continue
        with open(path, "rb") as fh:
            if fh.read(4) != b"PAR1":
                continue
        meta = pq.ParquetFile(path).metadata
        for g in range(meta.num_row_groups):
            group = meta.row_group(g)
            for i in range(group.num_columns):
                c = group.column(i)
                comp[c.path_in_schema] += c.total_compressed_size
                unc[c.path_in_schema] += c.total_uncompressed_size
                codecs[c.path_in_schema].add(c.compression)
    return [[name, _mb(size), _mb(unc[name]), ",".join(sorted(codecs[name]))]
            for name, size in comp.most_common()]


def duckdb_tables(path: Path) -> list[list[object]]:
    """Each DuckDB table's and (above 0.2 MB) column's bytes, estimated from the segments'
    block offsets (a segment runs to the next one in its block, or the block's end)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        block = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        segments = []
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
            for column, block_id, offset, extra in con.execute(
                    f"SELECT column_name, block_id, block_offset, additional_block_ids "
                    f"FROM pragma_storage_info('{table}') WHERE block_id >= 0").fetchall():
                segments.append((block_id, offset, table, column, len(extra or [])))
        segments.sort()
        size: collections.Counter = collections.Counter()
        for i, (block_id, offset, table, column, extra) in enumerate(segments):
            end = segments[i + 1][1] if i + 1 < len(segments) and segments[i + 1][0] == block_id else block
            size[(table, column)] += end - offset + extra * block
        tables: collections.Counter = collections.Counter()
        for (table, _), n in size.items():
            tables[table] += n
        rows = []
        for table, n in tables.most_common():
            count = con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            rows.append([table, _mb(n), f"{count} rows"])
            rows += [[f"  .{c}", _mb(m), ""] for (t, c), m in size.most_common() if t == table and m > 200_000]
        return rows
    finally:
        con.close()


def resident_columns(directory: Path) -> list[list[object]]:
    """Each resident file's bytes and each of its columns' buffer bytes."""
    import pyarrow as pa

    rows = []
    for path in sorted(directory.glob("resident.*.arrow"), key=lambda p: -p.stat().st_size):
        table = pa.ipc.open_file(pa.memory_map(str(path))).read_all()
        rows.append([path.name, _mb(path.stat().st_size), f"{table.num_rows} rows"])
        for name in table.column_names:
            arrays = table.column(name).chunks
            n = sum(b.size for a in arrays for b in a.buffers() if b is not None)
            rows.append([f"  .{name}", _mb(n), str(table.schema.field(name).type)[:40]])
    return rows


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _dir_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-store")
    ap.add_argument("--against", help="another checkout's interpreter (its venv's python) to compare with")
    ap.add_argument("--rounds", type=int, default=1, help="cold builds per version, alternating")
    ap.add_argument("--detail", action="store_true", help="per Parquet column, DuckDB column, resident column")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    subprocess.run(["git", "-C", str(repo), "clean", "-fdxq"], check=True)
    listed = subprocess.check_output(["git", "-C", str(repo), "ls-files"], text=True).splitlines()
    source = sum((repo / p).stat().st_size for p in listed)
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cwd-"))
    versions = {"new": sys.executable, **({"previous": args.against} if args.against else {})}
    for python in versions.values():  # warm each version's byte-code cache
        subprocess.run([python, "-m", "codeagent", "--help"], cwd=outside, env=ENV, capture_output=True)
    runs: dict[str, list[dict]] = {v: [] for v in versions}
    kinds: dict[str, dict] = {}
    for n in range(args.rounds):
        for version, python in versions.items():
            run = cold_build(python, repo, outside)
            run["store"] = _dir_bytes(repo / ".codeagent")
            runs[version].append(run)
            kinds[version] = inventory(repo / ".codeagent")
            if args.detail and n == args.rounds - 1:
                _print_detail(version, repo / ".codeagent")
    shutil.rmtree(outside, ignore_errors=True)
    print(f"corpus: {repo} ({len(listed)} files, source {_mb(source)}), rounds={args.rounds}")
    names = sorted({k for v in kinds.values() for k in v}, key=lambda k: -max(v.get(k, [0])[0] for v in kinds.values()))
    print_table(["object kind", *(f"{v} bytes" for v in versions), *(f"{v} files" for v in versions)],
                [[k, *(_mb(kinds[v].get(k, [0, 0])[0]) for v in versions),
                  *(str(kinds[v].get(k, [0, 0])[1]) for v in versions)] for k in names])
    print()
    rows = []
    for version, rs in runs.items():
        store = median([r["store"] for r in rs])
        written = median([r["io"]["write_bytes"] for r in rs])
        cancelled = median([r["io"]["cancelled_write_bytes"] for r in rs])
        rows.append([version, _mb(store), f"{store / source:.2f}x", _mb(written), f"{written / store:.2f}x",
                     _mb(written - cancelled), _mb(median([r["io"]["wchar"] for r in rs])),
                     f"{median([r['cpu'] for r in rs]):.1f} s", f"{median([r['wall'] for r in rs]):.1f} s",
                     f"{max(r['rss'] for r in rs) / 1024:.0f} MiB"])
    print_table(["version", "store", "store / source", "write_bytes", "written / store",
                 "write_bytes - cancelled", "wchar", "build CPU", "build wall", "peak RSS"], rows)
    print_table(["version", "round", "store", "write_bytes", "build CPU", "peak RSS"],
                [[v, str(i + 1), _mb(r["store"]), _mb(r["io"]["write_bytes"]), f"{r['cpu']:.1f} s",
                  f"{r['rss'] / 1024:.0f} MiB"] for v, rs in runs.items() for i, r in enumerate(rs)])
    print(f"targets: store <= 5x source ({_mb(5 * source)}), written <= 1.5x store")
    print("loadavg:", Path("/proc/loadavg").read_text().strip())


def _print_detail(version: str, store: Path) -> None:
    print(f"== {version}: shard Parquet columns (all shards)")
    print_table(["column", "compressed", "uncompressed", "codec"], shard_columns(store))
    for directory in (store / "assembled").iterdir():
        if (directory / "index.duckdb").exists():
            print(f"== {version}: DuckDB tables ({directory.name[:12]})")
            print_table(["table / column", "bytes", ""], duckdb_tables(directory / "index.duckdb"))
            print(f"== {version}: resident files")
            print_table(["file / column", "bytes", ""], resident_columns(directory))
    print()


if __name__ == "__main__":
    main()
