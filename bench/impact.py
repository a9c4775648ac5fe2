"""Does `codeagent impact` name the tests a real change needed? Measured on real history.

For recent commits of each repository that change at least one non-test source file and at
least one test file that already existed: the commit's source part alone is applied on its
parent (a synthetic commit, made with git plumbing: no checkout), both are indexed
(`codeagent build --ref`), and `codeagent impact PARENT..SYNTHETIC --json` ranks tests. Its
ranking is scored against the test files the real commit modified: recall@5, recall@10, MRR.
Beside it, on the same commits: a naming baseline (test files whose name contains a changed
file's stem or module name; exact test-name matches first) and co-change alone (the same
history impact reads). Results go to a JSON file as they come, so a run can be resumed.

    python bench/impact.py [--per-repo 6] [--repos attrs,rich,...] [--out /tmp/impact-bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from codeagent.query.cochange import cochange_scores, git_commit_records
from codeagent.query.impact_tests import naming_score, stem_names
from codeagent.roles import SOURCE, TEST, file_role, is_code_path

HERE = Path("/work/main")  # this repository (its history; never committed to)
MIRROR = Path("/work/.mirror")
REPOS = {  # name -> (mirror directory, language)
    "attrs": ("python-attrs+attrs", "python"), "rich": ("Textualize+rich", "python"),
    "black": ("psf+black", "python"), "cobra": ("spf13+cobra", "go"), "echo": ("labstack+echo", "go"),
    "express": ("expressjs+express", "javascript"), "okhttp": ("square+okhttp", "kotlin"),
    "clap": ("clap-rs+clap", "rust"),
}
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "CODEAGENT_DAEMON": "0"}
MAX_FILES = 30  # commits touching more files are left out (merges, sweeping refactors)


def git(repo: Path, *args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def codeagent(repo: Path, *args: str) -> str:
    cmd = ["nice", "-n", "5", sys.executable, "-m", "codeagent", *args]
    return subprocess.run(cmd, cwd=repo, check=True, capture_output=True, text=True, env=ENV).stdout


def is_test(path: str) -> bool:
    return is_code_path(path) and file_role(path) == TEST


def is_source(path: str) -> bool:
    return is_code_path(path) and file_role(path) == SOURCE


def sample(repo: Path, n: int) -> list[dict]:
    """The `n` newest qualifying commits: (sha, parent, source changes, modified tests)."""
    out = []
    for sha in git(repo, "log", "--no-merges", "--format=%H", "-n", "600", "HEAD").split():
        rows = [line.split("\t") for line in git(repo, "diff-tree", "--no-commit-id", "-r", "--no-renames",
                                                  "--name-status", sha).splitlines() if line]
        if not rows or len(rows) > MAX_FILES or len(git(repo, "rev-list", "--parents", "-n1", sha).split()) != 2:
            continue
        source = [(st, p) for st, p in rows if is_source(p)]
        tests = [p for st, p in rows if st == "M" and is_test(p)]
        if source and tests:
            out.append({"sha": sha, "parent": git(repo, "rev-parse", sha + "^").strip(),
                        "source": source, "truth": tests})
            if len(out) >= n:
                break
    return out


def source_only(repo: Path, c: dict) -> str:
    """A commit on the parent holding only the source part of commit `c` (plumbing, no checkout)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo / ".git" / "impact-bench-index")}
    git(repo, "read-tree", c["parent"], env=env)
    for status, path in c["source"]:
        if status == "D":
            git(repo, "update-index", "--force-remove", path, env=env)
        else:
            mode, _, rest = git(repo, "ls-tree", c["sha"], "--", path).strip().partition(" ")
            blob = rest.split()[1]
            git(repo, "update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}", env=env)
    tree = git(repo, "write-tree", env=env).strip()
    return git(repo, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit-tree", tree,
               "-p", c["parent"], "-m", "source part").strip()


def scores(ranked: list[str], truth: list[str]) -> dict:
    truth_set = set(truth)
    first = next((i for i, p in enumerate(ranked, 1) if p in truth_set), None)
    return {f"r@{k}": len(truth_set & set(ranked[:k])) / len(truth_set) for k in (5, 10)} | \
        {"mrr": 1 / first if first else 0.0}


def baselines(repo: Path, c: dict) -> tuple[list[str], list[str]]:
    """(naming ranking, co-change ranking) of the parent's test files."""
    tests = [p for p in git(repo, "ls-tree", "-r", "--name-only", c["parent"]).splitlines() if is_test(p)]
    stems: set[str] = set()
    for _, p in c["source"]:
        stems |= stem_names(p)
    named = sorted((t for t in tests if naming_score(t, stems)), key=lambda t: (-naming_score(t, stems), t))
    test_set = set(tests)
    co = cochange_scores(git_commit_records(repo, c["parent"]), [p for _, p in c["source"]])
    return named, [x.path for x in co if x.path in test_set]


def run_commit(repo: Path, c: dict) -> dict:
    synthetic = source_only(repo, c)
    codeagent(repo, "build", "--ref", c["parent"], "--json")
    codeagent(repo, "build", "--ref", synthetic, "--json")
    t0 = time.perf_counter()
    data = json.loads(codeagent(repo, "impact", f"{c['parent']}..{synthetic}", "--json", "--tests", "50"))
    wall = time.perf_counter() - t0
    named, co = baselines(repo, c)
    ranked = [t["path"] for t in data["tests"]]
    return {"sha": c["sha"], "truth": c["truth"], "impact": scores(ranked, c["truth"]),
            "naming": scores(named, c["truth"]), "cochange": scores(co, c["truth"]),
            "impact_top": ranked[:5], "impact_wall_s": round(wall, 2), "changed": data["summary"]["changed"],
            "dependents": data["summary"]["dependents"]}


def table(results: dict) -> list[str]:
    lines = [f"{'set':<22}{'n':>4}  " + "  ".join(f"{m:<22}" for m in ("impact r@5/r@10/MRR", "naming", "co-change"))]
    groups: dict[str, list[dict]] = {}
    for name, rows in results.items():
        lang = REPOS.get(name, ("", "python"))[1]
        groups.setdefault(name, []).extend(rows)
        groups.setdefault(f"lang:{lang}", []).extend(rows)
        if name != "codeagent":
            groups.setdefault("pooled (dev set)", []).extend(rows)
    for name, rows in groups.items():
        if not rows:
            continue
        cells = []
        for method in ("impact", "naming", "cochange"):
            avg = {m: sum(r[method][m] for r in rows) / len(rows) for m in ("r@5", "r@10", "mrr")}
            cells.append(f"{avg['r@5']:.2f}/{avg['r@10']:.2f}/{avg['mrr']:.2f}".ljust(22))
        lines.append(f"{name:<22}{len(rows):>4}  " + "  ".join(cells))
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-repo", type=int, default=6)
    ap.add_argument("--repos", default=",".join([*REPOS, "codeagent"]))
    ap.add_argument("--work", type=Path, default=Path("/tmp/impact-bench"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/impact-bench.json"))
    args = ap.parse_args()
    results = json.loads(args.out.read_text()) if args.out.exists() else {}
    args.work.mkdir(parents=True, exist_ok=True)
    for name in args.repos.split(","):
        src = HERE if name == "codeagent" else MIRROR / REPOS[name][0] / "repo"
        repo = args.work / name
        if not repo.exists():
            subprocess.run(["git", "clone", "-q", str(src), str(repo)], check=True)
        done = {r["sha"] for r in results.get(name, [])}
        for c in sample(repo, args.per_repo):
            if c["sha"] in done:
                continue
            try:
                row = run_commit(repo, c)
            except subprocess.CalledProcessError as exc:
                print(f"{name} {c['sha'][:10]}: failed: {exc.stderr[-300:]}", file=sys.stderr)
                continue
            results.setdefault(name, []).append(row)
            args.out.write_text(json.dumps(results, indent=1))
            print(f"{name} {c['sha'][:10]} impact {row['impact']} naming {row['naming']} "
                  f"cochange {row['cochange']} ({row['impact_wall_s']} s)", flush=True)
    print("\n".join(table(results)))
    print("load average:", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
