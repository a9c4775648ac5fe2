"""CPU of one-shot grep and BM25 queries (a fresh process each, as `codeagent search` runs
them), this checkout against the previous code, each on its own built index.

    python bench/oneshot_grep.py REPO --against PYTHON --against-repo OLD_REPO [--rounds 3]

REPO is a corpus built by this checkout, OLD_REPO the same corpus built by the previous code
(a pinned worktree of main with its own venv: PYTHON). Each query of bench/query.py's grep
patterns (literal and regex) and of a few BM25 queries runs in a fresh process per version,
alternating which goes first; the child reports the CPU seconds of opening the index and
answering (its codeagent imports excluded, the imports the query triggers included). Prints
each kind's median and range per version, the ratio, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from query import LITERALS, REGEXES  # noqa: E402

BM25 = ["parse json document", "http connection timeout", "thread pool executor shutdown",
        "decode unicode escape"]
KINDS = {"grep literal": [(p, "literal") for p in LITERALS], "grep regex": [(p, "regex") for p in REGEXES],
         "bm25": [(q, "bm25") for q in BM25]}


def _one(repo: Path, query: str, how: str) -> float:
    from codeagent.query import grep, open_index, search_text

    start = time.process_time()
    with open_index(repo) as view:
        if how == "bm25":
            search_text(view, query, limit=10)
        else:
            grep(view, query, regex=how == "regex", context=2, max_results=50)
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path, nargs="?")
    ap.add_argument("--against")
    ap.add_argument("--against-repo", type=Path)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # a child: REPO QUERY HOW
    args = ap.parse_args()
    if args.one:
        print(json.dumps({"cpu": _one(Path(args.one[0]), args.one[1], args.one[2])}))
        return
    versions = {"this": (sys.executable, args.repo), "previous": (args.against, args.against_repo)}
    cpu: dict[tuple[str, str], list[float]] = {}
    env = {**os.environ, "CODEAGENT_DAEMON": "0"}
    for i in range(args.rounds):
        for kind, queries in KINDS.items():
            for query, how in queries:
                for name in (["this", "previous"] if i % 2 == 0 else ["previous", "this"]):
                    python, repo = versions[name]
                    out = subprocess.run([python, __file__, "--one", str(repo), query, how], check=True,
                                         capture_output=True, text=True, env=env).stdout
                    cpu.setdefault((kind, name), []).append(json.loads(out.strip().splitlines()[-1])["cpu"] * 1000)
    print("| kind | this: median (range) ms | previous: median (range) ms | ratio |")
    print("|---|---|---|---|")
    for kind in KINDS:
        a, b = cpu[(kind, "this")], cpu[(kind, "previous")]
        print(f"| {kind} ({len(a)} runs) | {statistics.median(a):.1f} ({min(a):.1f}-{max(a):.1f}) | "
              f"{statistics.median(b):.1f} ({min(b):.1f}-{max(b):.1f}) | "
              f"{statistics.median(a) / statistics.median(b):.2f}x |")
    print(f"load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
