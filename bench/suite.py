"""Tests of this checkout beside the same tests of a baseline checkout, alternated: what a change
to the test suite costs or saves.

    python bench/suite.py --baseline /path/to/previous/checkout [--rounds 2] \
        [--baseline-tests NODE...] -- TEST... [-k EXPR]

Each round runs `python -m pytest -n 0 TEST...` once in each checkout (each with the python of
its own `.venv`, from its own root; the first code alternating round by round), so both meet
the same load. --baseline-tests names the baseline's tests when they moved or were merged
(default: the same TEST arguments). Prints each code's median wall and CPU seconds (pytest and
every process it started and waited for), the ratio of this code's to the baseline's, and the
load average before and after; a failed run is reported with the end of its output and
counted out of the medians.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import median, print_table  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def run_tests(checkout: Path, tests: list[str]) -> tuple[float, float, int, str]:
    """(wall seconds, CPU seconds of pytest and its reaped children, exit code, output's end)."""
    argv = [str(checkout / ".venv" / "bin" / "python"), "-m", "pytest", "-n", "0", "-q",
            "-p", "no:randomly", *tests]
    with tempfile.TemporaryFile() as out:
        started = time.monotonic()
        proc = subprocess.Popen(argv, cwd=checkout, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.monotonic() - started
        out.seek(0)
        tail = out.read().decode("utf-8", "replace").splitlines()[-30:]
    return wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), "\n".join(tail)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="+", help="pytest arguments (paths, node ids, -k ...) for this checkout")
    ap.add_argument("--baseline", required=True, type=Path, help="the previous code's checkout (with .venv)")
    ap.add_argument("--baseline-tests", nargs="+", help="the baseline's tests, if not the same")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    codes = {"baseline": (args.baseline.resolve(), args.baseline_tests or args.tests),
             "current": (ROOT, args.tests)}
    out: dict[str, dict[str, list[float]]] = {name: {"wall": [], "cpu": [], "failed": []} for name in codes}
    load = [os.getloadavg()]
    for r in range(args.rounds):
        for name in (list(codes) if r % 2 == 0 else list(reversed(codes))):
            wall, cpu, code, tail = run_tests(*codes[name])
            print(f"round {r + 1} {name}: wall {wall:.1f} s, CPU {cpu:.1f} s, exit {code}, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            if code != 0:
                print(tail, flush=True)
                out[name]["failed"].append(code)
                continue
            out[name]["wall"].append(wall)
            out[name]["cpu"].append(cpu)
    load.append(os.getloadavg())
    rows = [[name, len(v["wall"]), len(v["failed"]), f"{median(v['wall']):.1f}", f"{median(v['cpu']):.1f}"]
            for name, v in out.items() if v["wall"]]
    print_table(["code", "runs", "failed", "wall median s", "CPU median s"], rows)
    b, c = out["baseline"], out["current"]
    if b["wall"] and c["wall"]:
        print(f"current / baseline: wall {median(c['wall']) / median(b['wall']):.2f}, "
              f"CPU {median(c['cpu']) / median(b['cpu']):.2f}")
    print("load average before / after: " + " / ".join(" ".join(f"{x:.1f}" for x in la) for la in load))


if __name__ == "__main__":
    main()
