"""A server's work on each new overlay view as the files changed since the base accumulate:
merged from the previous view's structures (this code's following reader) beside merged from
the base's (what every view cost before, and what a reader that saw no view before still does).

    python bench/overlay_follow.py REPO [--edits 50]

REPO is a git work tree already built (`codeagent build REPO`). Then, --edits times: one more
file is edited and built as the watcher builds it (an overlay published before its graph
step), and a new view of it is loaded the way `serve` loads one (the symbol table with every
key index, the texts, the freshness) twice, the order alternating: by a reader that followed
every view so far, and by a new reader. Prints the CPU seconds of each (medians over the
first and the last third of the edits, and their ratio), with the load average. The edits
are undone at the end (the next build catches up).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import git, median, print_table  # noqa: E402
from watch import edit, targets  # noqa: E402

from codeagent.indexer.build import BuildOptions, build  # noqa: E402
from codeagent.query import IndexFollower  # noqa: E402
from codeagent.query.memtext import resident_texts  # noqa: E402
from codeagent.query.symbol_table import SymbolTable  # noqa: E402


def loads_cpu(follower: IndexFollower) -> tuple[float, int]:
    """(CPU seconds of loading the current view as a server does, the files it masks)."""
    started = time.process_time()
    with follower.view() as view:
        SymbolTable.complete(view)
        resident_texts(view)
        view.freshness()
        masked = len(view.masked_paths("files"))
    return time.process_time() - started, masked


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--edits", type=int, default=50)
    args = ap.parse_args()
    load = [os.getloadavg()[0]]
    build(BuildOptions(repo=args.repo))
    following = IndexFollower(args.repo)
    following.warm_on_swap = False
    loads_cpu(following)
    rows: list[tuple[int, float, float]] = []
    try:
        for i, rel in enumerate(targets(args.repo, args.edits)):
            edit(args.repo, rel, f"follow_probe_{i}_{os.getpid()}")
            build(BuildOptions(repo=args.repo, consolidate_later=True, graph_later=True))
            new = IndexFollower(args.repo)
            new.warm_on_swap = False
            got = {}
            for who in (("following", "new") if i % 2 else ("new", "following")):
                got[who] = loads_cpu(following if who == "following" else new)
            new.close()
            rows.append((got["following"][1], got["following"][0], got["new"][0]))
    finally:
        following.close()
        git(args.repo, "checkout", "-q", "--", ".")
    load.append(os.getloadavg()[0])
    third = max(1, len(rows) // 3)
    table = []
    for what, part in (("first third", rows[:third]), ("last third", rows[-third:])):
        prev, base = median([r[1] for r in part]), median([r[2] for r in part])
        table.append([what, f"{part[0][0]}-{part[-1][0]}", f"{prev:.3f} s", f"{base:.3f} s", f"{prev / base:.2f}"])
    print(f"load average {load[0]:.1f} -> {load[1]:.1f} on {os.cpu_count()} cores")
    print_table(["edits", "files changed since the base", "from the previous view (CPU)",
                 "from the base (CPU)", "ratio"], table)


if __name__ == "__main__":
    main()
