"""Score the bug-report development set in process, on the stores `run_codeagent.py` built.

`../shared/devset/reports/run_codeagent.py` builds every instance's commit (one clone per
repository under $REPORTS_WORK/clones, its store inside) and runs `codeagent search` as a fresh
process. Once those stores exist, this script asks the code it is run with (its interpreter's
`codeagent`) the same questions in process: open the index at the instance's commit, `search`
with the statement verbatim (auto, limit 50), rank files by first appearance, exactly as
run_codeagent.py ranks. Run it with two venvs (a pinned worktree of main and the changed code)
to compare two rankings on the same builds in minutes, not hours; then `--compare` prints both
side by side per repository and stratum, with the reports each one alone finds in the top 5.

    python3 eval/reports_inprocess.py --out /tmp/new.jsonl            # this code
    /work/wt/pin/.venv/bin/python eval/reports_inprocess.py --out /tmp/main.jsonl
    python3 eval/reports_inprocess.py --compare /tmp/main.jsonl /tmp/new.jsonl [--bm25 PATH]

Nothing fetched is written here: the task file and the results stay under $REPORTS_WORK.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

WORK = Path(os.environ.get("REPORTS_WORK", Path.home() / ".cache" / "codeagent-devset" / "reports"))
TASKS = WORK / "cache" / "locbench_dev.jsonl"


def _ranks(files: list[str], gold: set[str]) -> int | None:
    return next((i for i, p in enumerate(files[:10]) if p in gold), None)


def score(tasks: list[dict], clones: Path, limit: int) -> list[dict]:
    """Each task's files ranked by this code, in process, at its commit (the store must hold it)."""
    from codeagent.query.index import open_index  # the read side loads when scoring, not for --compare
    from codeagent.query.retrieval import SearchRequest
    from codeagent.query.search import search

    rows = []
    for t in tasks:
        clone = clones / t["repo"].replace("/", "+")
        row = {"instance_id": t["instance_id"], "repo": t["repo"], "mentions_gold": t["mentions_gold"]}
        try:
            with open_index(clone, None, t["base_commit"]) as view:
                started = time.process_time()
                resp = search(view, SearchRequest(query=t["query"], limit=limit))
                row["cpu_s"] = round(time.process_time() - started, 4)
            files = list(dict.fromkeys(h.path for h in resp.results))
        except Exception as e:  # noqa: BLE001 - an instance without its build is a miss, named
            files, row["error"] = [], f"{type(e).__name__}: {e}"[:300]
        row["rank"] = _ranks(files, set(t["gold_files"]))
        row["top10"] = files[:10]
        rows.append(row)
    return rows


def metrics(ranks: list[int | None]) -> tuple[int, float, float, float]:
    """n, Acc@1, Acc@5, MRR@10 in percent."""
    n = len(ranks) or 1
    hit = lambda k: 100.0 * sum(1 for r in ranks if r is not None and r < k) / n
    return len(ranks), hit(1), hit(5), 100.0 * sum(1.0 / (r + 1) for r in ranks if r is not None) / n


def compare(paths: list[str], bm25: str | None) -> str:
    """Side by side per repository and stratum: BM25 (if given) and each results file."""
    runs = [{r["instance_id"]: r for r in map(json.loads, open(p))} for p in paths]
    ids = [i for i in runs[0] if all(i in run and "error" not in run[i] for run in runs)]  # built in every run
    base = {r["instance_id"]: r for r in map(json.loads, open(bm25))} if bm25 else None
    names = (["bm25"] if base else []) + [Path(p).stem for p in paths]
    cols = ([base] if base else []) + runs
    groups: dict[str, list[str]] = defaultdict(list)
    for i in ids:
        r = runs[0][i]
        groups["all"].append(i)
        groups["naming a gold file" if r["mentions_gold"] else "naming none"].append(i)
        groups[r["repo"]].append(i)
    lines = ["| group | n | " + " | ".join(f"{n} Acc@1 / Acc@5 / MRR" for n in names) + " |",
             "|---|---:|" + "---|" * len(names)]
    for label, sub in groups.items():
        cells = []
        for col in cols:
            n, a1, a5, mrr = metrics([col[i]["rank"] for i in sub])
            cells.append(f"{a1:.1f} / {a5:.1f} / {mrr:.1f}")
        lines.append(f"| {label} | {len(sub)} | " + " | ".join(cells) + " |")
    if len(runs) == 2:
        top5 = lambda r: r["rank"] is not None and r["rank"] < 5
        top1 = lambda r: r["rank"] == 0
        for what, ok in (("top 5", top5), ("top 1", top1)):
            gained = [i for i in ids if ok(runs[1][i]) and not ok(runs[0][i])]
            lost = [i for i in ids if ok(runs[0][i]) and not ok(runs[1][i])]
            lines.append(f"\n{what}: second alone {len(gained)} {_count(runs[0], gained)}; "
                         f"first alone {len(lost)} {_count(runs[0], lost)}")
    return "\n".join(lines)


def _count(rows: dict, ids: list[str]) -> dict[str, int]:
    out: dict[str, int] = defaultdict(int)
    for i in ids:
        out[rows[i]["repo"].split("/")[1]] += 1
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, default=TASKS)
    ap.add_argument("--clones", type=Path, default=WORK / "clones")
    ap.add_argument("--out", type=Path, help="per-instance results (jsonl)")
    ap.add_argument("--only", default="", help="comma list of repositories (owner/name)")
    ap.add_argument("--limit", type=int, default=50)
    ap.add_argument("--compare", nargs="+", metavar="RESULTS", help="print results files side by side")
    ap.add_argument("--bm25", default=None, help="run_bm25.py's per-instance ranks, printed first")
    a = ap.parse_args()
    if a.compare:
        print(compare(a.compare, a.bm25))
        return
    if a.out is None:
        ap.error("--out is required unless --compare")
    tasks = [json.loads(line) for line in open(a.tasks)]
    tasks = [t for t in tasks if not a.only or t["repo"] in a.only.split(",")]
    started = time.time()
    rows = score(tasks, a.clones, a.limit)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    errors = sum(1 for r in rows if "error" in r)
    cpu = sorted(r["cpu_s"] for r in rows if "cpu_s" in r)
    print(f"{len(rows)} reports, {errors} without an index, search CPU median "
          f"{cpu[len(cpu) // 2] * 1000 if cpu else 0:.0f} ms, wall {time.time() - started:.0f} s -> {a.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
