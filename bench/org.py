"""Fleet build benchmark: one `codeagent build --ref` per repository vs `org build` (local
engine) vs `org build --engine ray` (2 workers), in one run, then cross-repository search.

    nice -n 5 python bench/org.py [--work /tmp/org-bench] [--repos cobra,chi,...] [--forks 4]
                                  [--no-ray] [--quality-cases 15]

The fleet: small development-set repositories from /work/.mirror plus forks of the first
--forks of them (a clone with three commits on top). Each way runs as its own process tree,
sampled every 0.1 s through /proc: wall, CPU (user+sys of every process of the tree, Ray's
raylet and workers included), the peak RSS of its largest process, files parsed (per-repo:
the builds' files_parsed summed; fleet: distinct contents parsed once), and whether every
manifest id equals the per-repo build's. Then search quality over the originals: the tasks
are mined per repository at run time (eval's `descriptions` miner; nothing is committed),
answered by `org search` over every original repository and over the task's own alone.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

MIRROR = Path("/work/.mirror")
SMALL = {"cobra": "spf13+cobra", "chi": "go-chi+chi", "got": "sindresorhus+got", "hyper": "hyperium+hyper",
         "attrs": "python-attrs+attrs", "echo": "labstack+echo", "express": "expressjs+express",
         "sinatra": "sinatra+sinatra"}
CLK = os.sysconf("SC_CLK_TCK")


class TreeSampler(threading.Thread):
    """CPU seconds and peak RSS of a process and all its descendants, sampled from /proc (the
    last sample of each process counts; a process living < 0.1 s may be missed)."""

    def __init__(self, root: int) -> None:
        super().__init__(daemon=True)
        self.root, self.cpu, self.peak = root, {}, {}
        self.done = threading.Event()

    def _tree(self) -> list[int]:
        parent: dict[int, int] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    parent[int(entry)] = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
        out, frontier = [self.root], [self.root]
        while frontier:
            frontier = [p for p, pp in parent.items() if pp in frontier]
            out += frontier
        return out

    def _sample(self) -> None:
        for pid in self._tree():
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:
                continue
            self.cpu[pid] = (int(fields[11]) + int(fields[12])) / CLK
            hwm = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0)
            self.peak[pid] = max(self.peak.get(pid, 0), hwm)

    def run(self) -> None:
        while not self.done.is_set():
            self._sample()
            time.sleep(0.1)


def measured(cmd: list[str], cwd: Path) -> dict:
    """Run `cmd`; wall, CPU and peak RSS of its process tree, and its stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(["nice", "-n", "5", *cmd], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    sampler.done.set()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err.decode()[-3000:]}")
    return {"wall": time.perf_counter() - start, "cpu": sum(sampler.cpu.values()),
            "peak_kib": max(sampler.peak.values() or [0]), "processes": len(sampler.cpu), "stdout": out.decode()}


def git(*args: str, cwd: Path | None = None) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def make_fleet(work: Path, names: list[str], forks: int) -> dict[str, Path]:
    """Clones of the mirrors and forks of the first `forks` (three commits on top each)."""
    src = work / "src"
    shutil.rmtree(src, ignore_errors=True)
    repos: dict[str, Path] = {}
    for name in names:
        git("clone", "-q", str(MIRROR / SMALL[name] / "repo"), str(src / name))
        repos[name] = src / name
    for name in names[:forks]:
        fork = src / f"{name}-fork"
        git("clone", "-q", str(repos[name]), str(fork))
        for n in range(3):
            (fork / f"FORK_NOTES_{n}.md").write_text(f"# Fork notes {n}\n\nLocal change {n} of the {name} fork.\n")
            git("-c", "user.name=bench", "-c", "user.email=b@e", "add", "-A", cwd=fork)
            git("-c", "user.name=bench", "-c", "user.email=b@e", "commit", "-qm", f"fork change {n}", cwd=fork)
        repos[f"{name}-fork"] = fork
    lines = []
    for name, path in repos.items():
        lines += ["[[repo]]", f'name = "{name}"', f'path = "{path}"', 'refs = ["HEAD"]', ""]
    (work / "fleet.toml").write_text("\n".join(lines))
    return repos


def per_repo(work: Path, repos: dict[str, Path]) -> tuple[dict, dict[str, str], int]:
    total = {"wall": 0.0, "cpu": 0.0, "peak_kib": 0, "processes": 0}
    ids: dict[str, str] = {}
    parsed = 0
    for name, path in repos.items():
        store = work / "single" / name
        shutil.rmtree(store, ignore_errors=True)
        run = measured([sys.executable, "-m", "codeagent", "build", str(path), "--ref", "HEAD", "--jobs", "2",
                        "--store", str(store), "--json"], work)
        report = json.loads(run["stdout"])
        ids[name], parsed = report["manifest_id"], parsed + report["files_parsed"]
        for key in ("wall", "cpu", "processes"):
            total[key] += run[key]
        total["peak_kib"] = max(total["peak_kib"], run["peak_kib"])
    return total, ids, parsed


def fleet_way(work: Path, engine: str) -> tuple[dict, dict[str, str], int, dict]:
    store = work / f"org-{engine}"
    shutil.rmtree(store, ignore_errors=True)
    run = measured([sys.executable, "-m", "codeagent", "org", "build", str(work / "fleet.toml"), "--engine", engine,
                    "--jobs", "2", "--store", str(store), "--json"], work)
    report = json.loads(run["stdout"])
    ids = {r["name"]: r["refs"][0]["manifest_id"] for r in report["repos"]}
    return run, ids, report["blobs_parsed"], report


def quality(work: Path, repos: dict[str, Path], originals: list[str], per_repo_cases: int, seed: int = 7) -> None:
    """Right repository on top, and file MRR@10 over the fleet vs the task's own repository."""
    from codeagent.eval.datasets import mine_descriptions
    from codeagent.query.org import fuse, open_fleet, repo_strengths
    from codeagent.query.search import SearchRequest, search

    from codeagent.eval.cases import case_from_dict

    saved = work / f"tasks-{per_repo_cases}-{seed}.json"  # the mined tasks of this run's clones (never committed)
    if saved.exists():
        cases = [(name, case_from_dict(c)) for name, c in json.loads(saved.read_text())]
    else:
        cases = []
        for name in originals:
            try:
                cases += [(name, c) for c in mine_descriptions(repos[name], "HEAD", per_repo_cases, seed)]
            except Exception as exc:  # a repository ctags mines nothing from
                print(f"  {name}: no tasks ({exc})")
        saved.write_text(json.dumps([(name, c.to_dict()) for name, c in cases]))
    fusions = ("global", "score", "rank")
    top = dict.fromkeys(fusions, 0.0)
    rr = dict.fromkeys((*fusions, "own"), 0.0)
    with open_fleet(work / "org-local", originals) as fleet:
        refs = {n: v.ref or "" for n, v in fleet.views.items()}
        for name, case in cases:  # each repository searched once a task, the answers fused three ways
            req = SearchRequest(query=case.query, limit=10)
            lists = {n: search(view, req).results for n, view in fleet.views.items()}
            rr["own"] += _rr([(name, h.path) for h in lists[name]], name, case.gold_files)
            strengths = repo_strengths(fleet.views, lists, case.query)
            for fusion in fusions:
                hits = fuse(lists, refs, 10, fusion, strengths)
                top[fusion] += bool(hits) and hits[0].repo == name
                rr[fusion] += _rr([(h.repo, h.hit.path) for h in hits], name, case.gold_files)
    n = max(len(cases), 1)
    print(f"  {len(cases)} tasks over {len(originals)} repositories; MRR@10 searching the task's own repository: {rr['own'] / n:.3f}")
    for fusion in fusions:
        print(f"  fusion {fusion:<5}: right repo on top {top[fusion] / n:.1%}, MRR@10 over the fleet "
              f"{rr[fusion] / n:.3f} (own - fleet {(rr['own'] - rr[fusion]) / n:+.3f})")


def _rr(hits: list[tuple[str, str]], repo: str, gold: tuple[str, ...]) -> float:
    seen: list[tuple[str, str]] = []
    for h in hits:
        if h not in seen:
            seen.append(h)
    for rank, (r, path) in enumerate(seen[:10], 1):
        if r == repo and path in gold:
            return 1.0 / rank
    return 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", type=Path, default=Path("/tmp/org-bench"))
    ap.add_argument("--repos", default=",".join(SMALL))
    ap.add_argument("--forks", type=int, default=4)
    ap.add_argument("--no-ray", action="store_true")
    ap.add_argument("--quality-cases", type=int, default=15, help="tasks mined per repository (0: skip)")
    ap.add_argument("--quality-only", action="store_true", help="only the search quality, on the last run's fleet")
    ap.add_argument("--seed", type=int, default=7, help="of the tasks' sample (another seed: other tasks)")
    args = ap.parse_args()
    names = [n for n in args.repos.split(",") if n]
    args.work.mkdir(parents=True, exist_ok=True)
    if args.quality_only:
        quality(args.work, {n: args.work / "src" / n for n in names}, names, args.quality_cases, args.seed)
        return
    repos = make_fleet(args.work, names, args.forks)
    print(f"fleet: {len(repos)} repositories ({len(names)} dev-set, {args.forks} forks); load {Path('/proc/loadavg').read_text().split()[:3]}")
    single, ids, parsed = per_repo(args.work, repos)
    rows = [("per-repo build", single, parsed, ids, {})]
    for engine in ("local", *(() if args.no_ray else ("ray",))):
        run, fids, fparsed, report = fleet_way(args.work, engine)
        rows.append((f"org --engine {engine}", run, fparsed, fids, report))
    print(f"{'way':<18}{'wall s':>8}{'CPU s':>8}{'peak MiB':>10}{'procs':>7}{'parsed':>8}{'ratio':>7}  ids equal")
    for label, run, n, way_ids, _ in rows:
        print(f"{label:<18}{run['wall']:>8.1f}{run['cpu']:>8.1f}{run['peak_kib'] / 1024:>10.0f}{run['processes']:>7}"
              f"{n:>8}{n / max(parsed, 1):>7.2f}  {way_ids == ids}")
    for label, run, n, _, report in rows[1:]:
        print(f"  {label}: phases {report.get('phases')}, {report.get('files_parsed_per_ref')} files read by refs; "
              f"per parsed file {run['cpu'] / max(n, 1) * 1000:.1f} ms CPU")
    print(f"load after: {Path('/proc/loadavg').read_text().split()[:3]}")
    if args.quality_cases:
        quality(args.work, repos, names, args.quality_cases, args.seed)


if __name__ == "__main__":
    main()
