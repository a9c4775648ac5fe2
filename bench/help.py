"""`codeagent --help` and `codeagent search --help` as fresh processes: CPU (user+sys), wall
and the modules imported, beside another checkout's in the same run.

    python bench/help.py [--rounds 5] [--before PYTHON]

The two codes alternate run by run, so both meet the same load. Prints medians and the load
average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMANDS = (("--help",), ("search", "--help"))


def run_once(python: str, args: tuple[str, ...]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one `python -m codeagent ARGS`."""
    start = time.perf_counter()
    proc = subprocess.Popen([python, "-m", "codeagent", *args], stdout=subprocess.DEVNULL, cwd="/")
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        raise SystemExit(f"{python} -m codeagent {' '.join(args)} exited {status}")
    return usage.ru_utime + usage.ru_stime, time.perf_counter() - start


def modules(python: str, args: tuple[str, ...]) -> int:
    err = subprocess.run([python, "-X", "importtime", "-m", "codeagent", *args], capture_output=True,
                         text=True, cwd="/").stderr
    return sum(1 for line in err.splitlines() if line.startswith("import time:")) - 1  # the header


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default=None, metavar="PYTHON", help="another checkout's python")
    opts = parser.parse_args()
    pythons = {"this": sys.executable, **({"before": opts.before} if opts.before else {})}
    runs: dict[tuple, list] = {}
    for _ in range(opts.rounds):
        for label, python in pythons.items():
            for args in COMMANDS:
                runs.setdefault((label, args), []).append(run_once(python, args))
    for (label, args), rows in runs.items():
        print(f"{label:<6} codeagent {' '.join(args):<14} CPU median "
              f"{statistics.median(r[0] for r in rows) * 1000:4.0f} ms  wall median "
              f"{statistics.median(r[1] for r in rows) * 1000:4.0f} ms  modules {modules(pythons[label], args)}")
    print("load average", open("/proc/loadavg").read().split()[:3])


if __name__ == "__main__":
    main()
