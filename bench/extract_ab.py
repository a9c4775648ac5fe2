"""Extraction CPU of this code beside a previous checkout's, on the stdlib's .py files.

    python bench/extract_ab.py --base-python /work/wt/pin-base/.venv/bin/python [--rounds 4]

Round by round, alternating which code goes first, a fresh process of each interpreter runs
`extract(bytes, "python")` (what a parse worker calls per file: parse, walk, receivers,
chunks) over the same files and reports its CPU seconds (process time, the import and the
file reads left out) and a digest of every extraction (symbols, references, chunks). Prints
per code the median and range, the ratio new / previous, the load average before and after,
and whether the digests agree (the two codes extract the same).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, print_table  # noqa: E402

CHILD = """
import hashlib, json, sys, time
sys.path.insert(0, sys.argv[1])
from corpus import stdlib_sources
from codeagent.indexer.extract import extract
files = [data for _, data in stdlib_sources()]
digest = hashlib.blake2b()
spent = 0.0
for data in files:
    start = time.process_time()
    ex = extract(data, "python")
    spent += time.process_time() - start
    digest.update(repr((ex.symbols, ex.references, ex.chunks)).encode())
print(json.dumps({"cpu": spent, "files": len(files), "digest": digest.hexdigest()}))
"""


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def run(python: str) -> dict:
    bench = str(Path(__file__).resolve().parent)
    out = subprocess.run([python, "-c", CHILD, bench], capture_output=True, text=True, env=ENV, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-python", required=True, help="interpreter of a venv with the previous code")
    ap.add_argument("--rounds", type=int, default=4)
    args = ap.parse_args()
    tools = {"new": sys.executable, "previous": args.base_python}
    cpu: dict[str, list[float]] = {name: [] for name in tools}
    digests: dict[str, set[str]] = {name: set() for name in tools}
    before = load()
    files = 0
    for r in range(args.rounds):
        for name in (list(tools) if r % 2 == 0 else list(reversed(tools))):
            got = run(tools[name])
            cpu[name].append(got["cpu"])
            digests[name].add(got["digest"])
            files = got["files"]
            print(f"round {r + 1} {name}: {got['cpu']:.2f} s", file=sys.stderr)
    after = load()
    print(f"extract() over {files} .py files, CPU s, {args.rounds} rounds alternating")
    print_table(["code", "CPU median (range)"],
                [[name, f"{median(v):.2f} s ({min(v):.2f}-{max(v):.2f})"] for name, v in cpu.items()])
    print(f"new / previous: {median(cpu['new']) / median(cpu['previous']):.3f}x")
    print(f"load average before {before}, after {after}")
    same = len(digests["new"]) == 1 and digests["new"] == digests["previous"]
    print("extractions identical" if same else f"EXTRACTIONS DIFFER: {digests}")


if __name__ == "__main__":
    main()
