"""CPU of graph look-ups on a long-lived view (the resident edge table), two versions alternating.

    python bench/graph_lookups.py REPO [--against PYTHON --against-repo REPO2] [--rounds 5]

Each round starts one process per version (this interpreter on REPO; with --against, another
checkout's interpreter on REPO2, its own build of the same corpus), alternating which goes
first. A process opens REPO's index as the server does (`keep_text_in_memory`), loads the
edge table, answers each look-up once untimed, then times QUERIES (callers and callees of
each symbol, and the impact walk `walk_dependents` of depth 3 from it) over several passes:
the CPU seconds per look-up of each kind, median of the passes. Prints, per kind, the
medians and ranges over the rounds, the ratio to --against, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SYMBOLS = ["json.loads", "json.decoder.JSONDecoder.decode", "json.decoder.JSONDecoder.raw_decode",
           "http.client.HTTPConnection.request", "posixpath.join", "genericpath.exists", "re.compile",
           "collections.OrderedDict", "logging.getLogger", "inspect.signature", "functools.wraps",
           "subprocess.run", "shutil.copyfile", "tempfile.mkdtemp", "ast.parse", "os.fspath"]
KINDS = ("callers", "callees", "impact")
PASSES = 5


def _lookups(view):
    """kind -> a function of a symbol answering that look-up."""
    from codeagent.query import callees, callers, resolve_symbol
    from codeagent.query.impact_graph import walk_dependents

    def impact(symbol: str):
        sid = resolve_symbol(view, symbol).symbol_id
        return walk_dependents(view, {sid: symbol}, depth=3, max_nodes=200)
    return {"callers": lambda s: callers(view, s), "callees": lambda s: callees(view, s), "impact": impact}


def child(repo: Path) -> dict[str, float]:
    """CPU seconds per look-up of each kind in this process (median of PASSES)."""
    from codeagent.query import open_index
    from codeagent.query.edge_table import EdgeTable

    view = open_index(repo.resolve())
    view.keep_text_in_memory = True
    EdgeTable.load(view)
    run = _lookups(view)
    for kind in KINDS:
        for s in SYMBOLS:
            run[kind](s)
    out = {}
    for kind in KINDS:
        passes = []
        for _ in range(PASSES):
            start = time.process_time()
            for s in SYMBOLS:
                run[kind](s)
            passes.append((time.process_time() - start) / len(SYMBOLS))
        out[kind] = sorted(passes)[len(passes) // 2]
    view.close()
    return out


def _run(python: str, repo: Path) -> dict[str, float]:
    out = subprocess.run([python, str(Path(__file__).resolve()), str(repo), "--child"],
                         capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    return (s[(len(s) - 1) // 2] + s[len(s) // 2]) / 2


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    ap.add_argument("--against", help="another checkout's interpreter (its venv's python)")
    ap.add_argument("--against-repo", type=Path, help="the corpus as built by --against")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.repo)))
        return
    versions = {"new": (sys.executable, args.repo)}
    if args.against:
        versions["previous"] = (args.against, args.against_repo or args.repo)
    got: dict[str, list[dict]] = {v: [] for v in versions}
    for r in range(args.rounds):
        order = list(versions) if r % 2 == 0 else list(reversed(versions))
        for v in order:
            got[v].append(_run(*versions[v]))
    print(f"{len(SYMBOLS)} symbols, {PASSES} passes a process, {args.rounds} rounds; CPU ms per look-up")
    print("| kind | " + " | ".join(versions) + (" | ratio |" if args.against else ""))
    for kind in KINDS:
        cells, meds = [], {}
        for v in versions:
            xs = [g[kind] * 1000 for g in got[v]]
            meds[v] = _median(xs)
            cells.append(f"{meds[v]:.3f} ({min(xs):.3f}-{max(xs):.3f})")
        ratio = f" | {meds['new'] / meds['previous']:.2f}x |" if args.against else ""
        print(f"| {kind} | " + " | ".join(cells) + ratio)
    print("load average: " + " / ".join(f"{x:.1f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
