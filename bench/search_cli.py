"""`codeagent search` as a fresh process (imports, index open, one answer, exit) on the stdlib
corpus, beside another checkout's in the same run.

    python bench/search_cli.py [--rounds 3] [--corpus DIR] [--before PYTHON]

Natural-language queries (bench/mcp.py's NL_QUERIES), no daemon. Each python builds (or
reuses) an index in a store of its own, named as bench/mcp.py names it, so the two scripts
share their builds. With --before, the two codes alternate query by query, so both meet the
same load. Prints wall and CPU (user+sys of the process and what it waited for) p50/p95 and
the load average.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV, median, percentile, print_table, stdlib_repo  # noqa: E402

NL_QUERIES = ["parse http response headers", "read configuration file sections",
              "compress data with zlib", "thread pool executor shutdown", "format date time string",
              "open a socket connection with timeout", "decode json object", "temporary directory cleanup"]


def store_of(python: str, repo: Path) -> Path:
    """bench/mcp.py's store for `python`'s index of `repo`."""
    return repo.parent / f"{repo.name}-store-{hashlib.blake2b(python.encode(), digest_size=4).hexdigest()}"


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of one process run to its end."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read() if proc.stderr else b""
    _, status, usage = os.wait4(proc.pid, 0)
    if status:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err.decode(errors='replace')[-2000:]}")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--before", help="Python of the checkout to compare with (its venv)")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    pythons = {"after": sys.executable, **({"before": args.before} if args.before else {})}
    outside = Path(tempfile.mkdtemp(prefix="codeagent-bench-cwd-"))  # not the corpus: its stdlib copy
    for python in pythons.values():
        timed([python, "-m", "codeagent", "build", str(repo), "--store", str(store_of(python, repo))], outside)
    load = Path("/proc/loadavg").read_text().strip()
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in pythons}
    for _ in range(args.rounds):
        for q in NL_QUERIES:
            for name, python in pythons.items():
                samples[name].append(timed([python, "-m", "codeagent", "search", q, "--repo", str(repo),
                                            "--store", str(store_of(python, repo))], outside))
    print(f"stdlib corpus at {repo}; {len(NL_QUERIES)} queries x {args.rounds} rounds per code; "
          f"/proc/loadavg before: {load}; after: {Path('/proc/loadavg').read_text().strip()}")
    rows = []
    for name in sorted(samples):
        wall, cpu = [s[0] * 1000 for s in samples[name]], [s[1] * 1000 for s in samples[name]]
        rows.append([name, len(wall), f"{median(wall):.0f}", f"{percentile(wall, 95):.0f}",
                     f"{median(cpu):.0f}", f"{percentile(cpu, 95):.0f}"])
    print_table(["code", "n", "wall p50 ms", "wall p95 ms", "CPU p50 ms", "CPU p95 ms"], rows)


if __name__ == "__main__":
    main()
