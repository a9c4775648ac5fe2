"""Cold build CPU of this code beside a previous checkout's, and ctags -R, in one run.

    python bench/cold.py --base-python /work/wt/pin-cold-base/.venv/bin/python \
        [--rounds 3] [--jobs 0] [--corpus DIR]

Round by round (so a drift in the machine's load hits every row alike), the two codes
taking turns to go first: a cold
`codeagent build` of the stdlib corpus (bench/corpus.py) into an empty store by this
checkout's interpreter, the same by `--base-python` (a venv with the previous code installed,
e.g. a pinned worktree of main), and `ctags -R` on the same files. Each build is a fresh
process; its CPU is user+sys of the process and the parse workers it reaped (os.wait4), its
peak RSS the largest of those processes'. Prints per tool the median and range of CPU, wall
and peak RSS, the ratios to ctags, the phases' wall seconds (`build --json`), the load
average before and after, and whether the two codes wrote the same objects: every shard is
content-addressed, so equal object names mean byte-identical shards.
"""

from __future__ import annotations

import argparse
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


def run_waited(cmd: list[str], cwd: Path) -> tuple[float, float, int, str]:
    """(CPU seconds, wall seconds, peak RSS in KiB, stdout) of one child process, reaped by
    os.wait4 for its resource usage (its reaped workers included)."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=ENV)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if status:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read().decode()}")
        return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss, out.read().decode()


def objects(store: Path) -> set[str]:
    return {p.name for p in (store / "objects").rglob("*") if p.is_file()}


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-python", required=True, help="interpreter of a venv with the previous code")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=0, help="parser processes (0: one per core)")
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-cold")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    subprocess.run(["git", "-C", str(repo), "clean", "-fdxq"], check=True)
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cold-"))  # never import the corpus' stdlib
    tools = {"new": sys.executable, "previous": args.base_python}
    for python in tools.values():  # byte-code caches warm, as on a user's machine
        run_waited([python, "-m", "codeagent", "--help"], outside)
    rows: dict[str, list[tuple[float, float, int, dict]]] = {name: [] for name in (*tools, "ctags")}
    loads = [load()]
    try:
        for r in range(args.rounds):
            for name, python in (list(tools.items()) if r % 2 == 0 else list(tools.items())[::-1]):
                store = outside / f"store-{name}"
                shutil.rmtree(store, ignore_errors=True)
                cpu, wall, rss, out = run_waited(
                    [python, "-m", "codeagent", "build", str(repo), "--store", str(store), "--json",
                     "--jobs", str(args.jobs)], outside)
                rows[name].append((cpu, wall, rss, json.loads(out)["phases"]))
            tags = outside / "tags"
            cpu, wall, rss, _ = run_waited(["ctags", "-R", "--exclude=.codeagent", "-f", str(tags), "."], repo)
            rows["ctags"].append((cpu, wall, rss, {}))
        loads.append(load())
        same = objects(outside / "store-new") == objects(outside / "store-previous")
        n_objects = len(objects(outside / "store-new"))
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    ctags_cpu = median([r[0] for r in rows["ctags"]])
    table = []
    for name, runs in rows.items():
        cpu = [r[0] for r in runs]
        wall = [r[1] for r in runs]
        rss = [r[2] / 1024 for r in runs]
        phases = (" / ".join(f"{median([r[3][k] for r in runs]):.1f}" for k in ("scan", "parse", "assemble"))
                  if runs[0][3] else "")
        table.append([name, f"{median(cpu):.2f} s ({min(cpu):.2f}-{max(cpu):.2f})",
                      f"{median(cpu) / ctags_cpu:.1f}x", f"{median(wall):.1f} s",
                      f"{median(rss):.0f} MiB ({min(rss):.0f}-{max(rss):.0f})", phases])
    new, prev = (median([r[0] for r in rows[n]]) for n in ("new", "previous"))
    print(f"corpus: {repo}, jobs={args.jobs or os.cpu_count()}, rounds={args.rounds}, "
          f"load average before {loads[0]} after {loads[-1]}")
    print_table(["tool", "CPU median (range)", "x ctags CPU", "wall median", "peak RSS median (range)",
                 "scan / parse / assemble wall s"], table)
    print(f"new / previous CPU: {new / prev:.2f}x; objects written: {n_objects}, "
          f"{'identical' if same else 'DIFFERENT'} between the two codes")


if __name__ == "__main__":
    main()
