"""An RSS timeline of one cold `codeagent build`: where in the build the peak comes, and what
is resident then.

    python bench/rss_timeline.py [--interval 0.2] [--corpus DIR] [--python PY] [--every]

Runs a cold build of the stdlib corpus (bench/corpus.py) into an empty store with
`--progress-json`, and every INTERVAL seconds samples the build process's /proc status
(VmRSS, RssAnon, RssFile) and its parse workers' VmRSS, with the last progress step seen and
the build's temp files present (postings runs, DuckDB spill). At the parent's peak it also reads
/proc/PID/smaps and splits the resident file pages by file (spooled runs, index.duckdb,
resident arrays, libraries). Prints the peak samples, a per-step maximum and the peak's
breakdown; `--every` prints every sample. `--python` builds with another checkout's
interpreter (a pinned worktree's venv).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, stdlib_repo  # noqa: E402


def status(pid: int) -> dict[str, int]:
    """VmRSS, VmHWM, RssAnon, RssFile of a process in KiB ({} once it is gone)."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem"):
            out[key] = int(value.split()[0])
    return out


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


def smaps_by_file(pid: int) -> dict[str, int]:
    """Resident KiB per mapped file (anonymous mappings under '[anon]')."""
    sizes: dict[str, int] = defaultdict(int)
    name = "[anon]"
    try:
        lines = Path(f"/proc/{pid}/smaps").read_text().splitlines()
    except OSError:
        return {}
    for line in lines:
        first = line.split(maxsplit=5)
        if first and "-" in first[0] and len(first) >= 5 and ":" not in first[0]:
            name = first[5] if len(first) == 6 else "[anon]"
        elif line.startswith("Rss:"):
            sizes[name] += int(line.split()[1])
    return dict(sizes)


def temp_state(store: Path) -> str:
    tmp = store / "tmp"
    if not tmp.exists():
        return ""
    parts = []
    for d in tmp.iterdir():
        if d.name.startswith(("postings-", "spill-")):
            files = [p for p in d.rglob("*") if p.is_file()]
            parts.append(f"{d.name.split('-')[0]}:{len(files)}f/{sum(p.stat().st_size for p in files) >> 20}M")
    return " ".join(sorted(parts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--interval", type=float, default=0.2)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-cold")
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--every", action="store_true", help="print every sample")
    ap.add_argument("--memory", default=None, help="the build's --memory")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-rss-"))
    store = outside / "store"
    cmd = [args.python, "-m", "codeagent", "build", str(repo), "--store", str(store), "--json",
           "--progress-json"] + (["--memory", args.memory] if args.memory else [])
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=outside, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, text=True)
    step = ["start"]

    def follow() -> None:
        for line in proc.stderr:
            try:
                p = json.loads(line)
                step[0] = f"{p['stage']} {p['done']}/{p['total']}"
            except (ValueError, KeyError):
                pass

    threading.Thread(target=follow, daemon=True).start()
    samples, peak, peak_maps = [], 0, {}
    try:
        while proc.poll() is None:
            s = status(proc.pid)
            if s:
                kids = sum(status(c).get("VmRSS", 0) for c in children(proc.pid))
                row = (time.perf_counter() - start, step[0], s.get("VmRSS", 0), s.get("RssAnon", 0),
                       s.get("RssFile", 0), kids, temp_state(store))
                samples.append(row)
                if row[2] > peak:
                    peak, peak_maps = row[2], smaps_by_file(proc.pid)
                if args.every:
                    print(_fmt(row), flush=True)
            time.sleep(args.interval)
        out = proc.stdout.read()
        hwm = json.loads(out).get("phases", {}) if out.strip().startswith("{") else {}
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    _report(samples, peak_maps, hwm)


def _fmt(row) -> str:
    t, step, rss, anon, file, kids, tmp = row
    return (f"{t:7.1f}s {step:<16} rss {rss >> 10:4d} anon {anon >> 10:4d} file {file >> 10:4d} "
            f"MiB  workers {kids >> 10:4d} MiB  {tmp}")


def _report(samples, peak_maps: dict[str, int], phases: dict) -> None:
    print(f"samples: {len(samples)}; phases (wall s): {phases}")
    by_step: dict[str, tuple] = {}
    for row in samples:
        key = row[1].split()[0] + (" " + row[1].split()[1] if row[1].startswith("assemble") else "")
        if key not in by_step or row[2] > by_step[key][2]:
            by_step[key] = row
    print("largest parent RSS per step:")
    for row in sorted(by_step.values()):
        print("  " + _fmt(row))
    print("the five largest samples:")
    for row in sorted(samples, key=lambda r: -r[2])[:5]:
        print("  " + _fmt(row))
    print("resident at the peak, by mapping (KiB):")
    for name, kib in sorted(peak_maps.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {kib:8d}  {name}")


if __name__ == "__main__":
    main()
