"""What one work-tree edit writes: this code beside a baseline's, one edit built by both.

    python bench/watch_bytes.py --baseline /path/to/previous/.venv/bin/python [--edits 3] [--scales 1,3]

Each code builds the stdlib corpus (and --scales copies of it, bench/scale.py) into a store of
its own (the tree is one work tree: both see the same edits). Then, --edits times: one file
is edited and built by a fresh `codeagent build` of each code, the order alternating edit by
edit (the same load for both). Prints, per scale and code: the median wall and CPU seconds,
bytes written (/proc/<pid>/io write_bytes, the process and its children, read before it is
reaped) and, per kind of store file, the bytes of the files the build created or changed
(what the write_bytes went to; a WAL or temp file deleted before the end is not among them).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import git, median, print_table, stdlib_repo  # noqa: E402
from scale import scaled_repo  # noqa: E402
from watch import edit, run_build_measured, targets  # noqa: E402


def files_of(store: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for directory, _, names in os.walk(store):
        for name in names:
            path = os.path.join(directory, name)
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue
            out[os.path.relpath(path, store)] = (st.st_size, st.st_mtime_ns)
    return out


def kind(rel: str) -> str:
    parts = rel.split("/")
    if parts[0] == "assembled":
        return f"assembled/{parts[-1].split('.')[0] if parts[-1].startswith('resident') else parts[-1]}"
    return "objects (shards, manifest)" if parts[0] == "objects" else "/".join(parts[:2])


def measure(codes: dict[str, str], repo: Path, stores: Path, edits: int) -> dict[str, dict]:
    out = {name: {"wall": [], "written": [], "cpu": [], "files": {}} for name in codes}
    for name, python in codes.items():
        run_build_measured(python, repo, "--store", str(stores / name))  # catch up (a first build of the corpus is long)
    try:
        for i, rel in enumerate(targets(repo, edits)):
            edit(repo, rel, f"bytes_probe_{i}_{os.getpid()}")
            for name in (list(codes) if i % 2 == 0 else list(codes)[::-1]):
                before = files_of(stores / name)
                wall, written, cpu = run_build_measured(codes[name], repo, "--store", str(stores / name))
                for key, value in zip(("wall", "written", "cpu"), (wall, written, cpu)):
                    out[name][key].append(value)
                for rel_file, (size, mtime) in files_of(stores / name).items():
                    if before.get(rel_file) != (size, mtime):
                        files = out[name]["files"]
                        files[kind(rel_file)] = files.get(kind(rel_file), 0) + size / edits
    finally:
        git(repo, "checkout", "-q", ".")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", required=True, help="python of the previous code's environment")
    ap.add_argument("--edits", type=int, default=3)
    ap.add_argument("--scales", default="1")
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-watch-bytes")
    args = ap.parse_args()
    codes = {"baseline": args.baseline, "current": sys.executable}
    rows = []
    for scale in (int(x) for x in args.scales.split(",")):
        repo = (stdlib_repo(args.corpus) if scale == 1
                else scaled_repo(args.corpus.with_name(f"{args.corpus.name}-{scale}x"), scale))
        got = measure(codes, repo, repo.with_name(repo.name + "-stores"), args.edits)
        base = median(got["baseline"]["written"])
        for name, m in got.items():
            top = sorted(m["files"].items(), key=lambda kv: -kv[1])[:4]
            rows.append([f"{scale}x", name, f"{median(m['wall']):.2f} / {median(m['cpu']):.2f} s",
                         f"{median(m['written']) / 1e6:.2f} MB ({median(m['written']) / base:.2f}x)",
                         ", ".join(f"{k} {v / 1e3:.0f} KB" for k, v in top)])
        print(json.dumps({"scale": scale, "written": {n: m["written"] for n, m in got.items()}}), flush=True)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores, median of {args.edits} one-file edits")
    print_table(["corpus", "code", "wall / CPU", "bytes written", "files created or changed, per edit"], rows)


if __name__ == "__main__":
    main()
