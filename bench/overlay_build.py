"""One-file overlay builds on a built tree: this code beside a baseline's, alternated.

    python bench/overlay_build.py --baseline /path/to/previous/.venv/bin/python REPO --store STORE [--edits 6]

REPO is a git work tree already built into STORE (by either code: the base's tables are the
same). Then, --edits times: one file is edited and built by a fresh `codeagent build` process
(as a watch build is), the codes taking turns edit by edit and the first alternating, both
into STORE, so each builds an overlay of the same size on the same base. Prints each code's
median wall and CPU seconds (the build's own, children included), the ratio of this code's to
the baseline's, and the load average before and after. The edits are undone at the end (the
next build of STORE catches up).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import git, median, print_table  # noqa: E402
from watch import edit, run_build_measured, targets  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--baseline", required=True, help="python of the previous code's environment")
    ap.add_argument("--store", required=True, type=Path)
    ap.add_argument("--edits", type=int, default=6, help="edits per code")
    args = ap.parse_args()
    codes = {"baseline": args.baseline, "current": sys.executable}
    out = {name: {"wall": [], "cpu": []} for name in codes}
    load = [os.getloadavg()]
    run_build_measured(sys.executable, args.repo, "--store", str(args.store))  # settle
    try:
        for i, rel in enumerate(targets(args.repo, 2 * args.edits)):
            name = list(codes)[(i + i // 2) % 2]
            edit(args.repo, rel, f"overlay_probe_{i}_{os.getpid()}")
            wall, _, cpu = run_build_measured(codes[name], args.repo, "--store", str(args.store))
            out[name]["wall"].append(wall)
            out[name]["cpu"].append(cpu)
    finally:
        git(args.repo, "checkout", "-q", ".")
    load.append(os.getloadavg())
    rows = [[name, len(v["cpu"]), f"{median(v['wall']):.2f}", f"{median(v['cpu']):.2f}",
             " ".join(f"{c:.2f}" for c in v["cpu"])] for name, v in out.items()]
    print_table(["code", "builds", "wall median s", "CPU median s", "CPU each"], rows)
    b, c = out["baseline"], out["current"]
    print(f"current / baseline: wall {median(c['wall']) / median(b['wall']):.2f}, "
          f"CPU {median(c['cpu']) / median(b['cpu']):.2f}")
    print("load average before / after: " + " / ".join(" ".join(f"{x:.1f}" for x in la) for la in load))


if __name__ == "__main__":
    main()
