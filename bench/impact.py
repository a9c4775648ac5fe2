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
    python bench/impact.py --latency [--packages asyncio,email,...]   # get_impact warm vs CLI cold

--latency: a corpus of standard-library packages (all of it with --packages all) in a git repo,
indexed at its commit and as a work tree; then 10 files get a changed function body, the work
tree is built again (an overlay), and get_impact (no range: the work tree against its commit)
is called over MCP on one warm server (p50/p95 of 20 calls after one warm-up), beside cold
`codeagent impact --json` processes (median of 3).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

# bench/ itself off the path: its mcp.py would shadow the MCP SDK (corpus.py is loaded by path)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from codeagent.query.cochange import cochange_scores, git_commit_records
from codeagent.query.impact_tests import WEIGHTS, combined, naming_score, stem_names
from codeagent.roles import SOURCE, TEST, file_role, is_code_path

HERE = Path("/work/main")  # this repository (its history; never committed to)
MIRROR = Path("/work/.mirror")
REPOS = {  # name -> (mirror directory, language)
    "attrs": ("python-attrs+attrs", "python"), "rich": ("Textualize+rich", "python"),
    "black": ("psf+black", "python"), "cobra": ("spf13+cobra", "go"), "echo": ("labstack+echo", "go"),
    "express": ("expressjs+express", "javascript"), "okhttp": ("square+okhttp", "kotlin"),
    "clap": ("clap-rs+clap", "rust"), "chi": ("go-chi+chi", "go"), "axios": ("axios+axios", "javascript"),
    "retrofit": ("square+retrofit", "java"), "sinatra": ("sinatra+sinatra", "ruby"),
}
# PYTHONSAFEPATH: `python -m` in a corpus of standard-library copies must not import them (and
# write their __pycache__ into the work tree the bench measures)
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "CODEAGENT_DAEMON": "0",
       "PYTHONSAFEPATH": "1"}
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
    out, seen = [], set()
    for sha in git(repo, "log", "--no-merges", "--format=%H", "-n", "600", "HEAD").split():
        rows = [line.split("\t") for line in git(repo, "diff-tree", "--no-commit-id", "-r", "--no-renames",
                                                  "--name-status", sha).splitlines() if line]
        if not rows or len(rows) > MAX_FILES or len(git(repo, "rev-list", "--parents", "-n1", sha).split()) != 2:
            continue
        source = [(st, p) for st, p in rows if is_source(p)]
        tests = [p for st, p in rows if st == "M" and is_test(p)]
        key = frozenset(p for _, p in source)
        if source and tests and key not in seen:  # one commit per set of source files: no series
            seen.add(key)
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
    data = json.loads(codeagent(repo, "impact", f"{c['parent']}..{synthetic}", "--json", "--tests", "200"))
    wall = time.perf_counter() - t0
    named, co = baselines(repo, c)
    ranked = [t["path"] for t in data["tests"]]
    return {"sha": c["sha"], "truth": c["truth"], "impact": scores(ranked, c["truth"]),
            "naming": scores(named, c["truth"]), "cochange": scores(co, c["truth"]),
            "impact_top": ranked[:5], "impact_wall_s": round(wall, 2), "changed": data["summary"]["changed"],
            "signals": [[t["path"], t["signals"], "changed by this diff" in t["reason"]] for t in data["tests"]],
            "dependents": data["summary"]["dependents"]}


def rescore(results: dict, weights: dict[str, float]) -> dict:
    """The impact rankings again from each commit's stored signals, with other weights: how
    sensitive the ranking is to them, without a rebuild (the formula is impact_tests.combined)."""
    saved = dict(WEIGHTS)
    WEIGHTS.clear()
    WEIGHTS.update(weights)
    try:
        out = {}
        for name, rows in results.items():
            out[name] = []
            for r in rows:
                scored = sorted(((combined(s, edited), p) for p, s, edited in r.get("signals", [])),
                                key=lambda t: (-t[0], t[1]))
                out[name].append({**r, "impact": scores([p for _, p in scored], r["truth"])})
        return out
    finally:
        WEIGHTS.clear()
        WEIGHTS.update(saved)


def parse_weights(text: str) -> dict[str, float]:
    """`graph=0.4,cochange=0.4,...` -> a weights dict (signals not named weigh 0)."""
    out = {k: 0.0 for k in WEIGHTS}
    for part in text.split(","):
        k, _, v = part.partition("=")
        out[k.strip()] = float(v)
    return out


def _objective(results: dict) -> float:
    rows = [r for name, rs in results.items() if name != "codeagent" for r in rs]
    return sum(r["impact"]["mrr"] + (r["impact"]["r@5"] + r["impact"]["r@10"]) / 2 for r in rows) / max(1, len(rows))


def grid() -> list[dict[str, float]]:
    """Weights on a coarse grid (steps of 0.1, summing to 1)."""
    import itertools

    keys, out = list(WEIGHTS), []
    for combo in itertools.product(range(11), repeat=len(keys) - 1):
        if sum(combo) <= 10:
            out.append({k: v / 10 for k, v in zip(keys, [*combo, 10 - sum(combo)])})
    return out


def fit(results: dict) -> dict[str, float]:
    """The grid's best weights for `results` (pooled MRR plus mean recall; ties: the first)."""
    return max(grid(), key=lambda w: _objective(rescore(results, w)))


def leave_one_out(results: dict) -> dict:
    """Each development-set repository ranked with the weights fit on the others."""
    out = {}
    for name in results:
        if name == "codeagent":
            continue
        w = fit({k: v for k, v in results.items() if k != name and k != "codeagent"})
        out[name] = rescore({name: results[name]}, w)[name]
        print(f"  held out {name}: weights {w}", file=sys.stderr, flush=True)
    return out


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


LATENCY_PACKAGES = "asyncio,email,http,json,logging,unittest,importlib,xml,concurrent,urllib,collections"


def latency_corpus(dest: Path, packages: str) -> Path:
    """A git repo of the chosen stdlib packages (bench/corpus.py's files), one commit."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_corpus", Path(__file__).with_name("corpus.py"))
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    STDLIB, stdlib_files, stdlib_repo = corpus.STDLIB, corpus.stdlib_files, corpus.stdlib_repo

    if packages == "all":
        return stdlib_repo(dest)
    wanted = packages.split(",")
    if not (dest / ".git").exists():
        for src in stdlib_files():
            rel = src.relative_to(STDLIB)
            if rel.parts[0] in wanted or rel.stem in wanted:
                (dest / rel).parent.mkdir(parents=True, exist_ok=True)
                (dest / rel).write_bytes(src.read_bytes())
        git(dest, "init", "-q", "-b", "main")
        git(dest, "add", "-A")
        git(dest, "-c", "user.name=bench", "-c", "user.email=bench@example.com", "commit", "-qm", "corpus")
    return dest


def edit_ten(repo: Path) -> list[str]:
    """Change one function body (a comment after its first `return`) in 10 files."""
    done = []
    for path in sorted(repo.rglob("*.py")):
        text = path.read_text(encoding="utf-8", errors="replace")
        at = text.find("\n        return ")
        if at < 0 or "# impact-bench" in text:
            continue
        end = text.index("\n", at + 1)
        path.write_text(text[:end] + "  # impact-bench" + text[end:], encoding="utf-8")
        done.append(str(path.relative_to(repo)))
        if len(done) == 10:
            break
    return done


async def _warm_calls(repo: Path, n: int) -> list[float]:
    from mcp import Client

    from codeagent.mcp_server.app import create_server
    from codeagent.mcp_server.state import ServerConfig, ServerState

    state = ServerState(ServerConfig(repo))
    out = []
    try:
        async with Client(create_server(state)) as client:
            for i in range(n + 1):
                t0, c0 = time.perf_counter(), time.process_time()  # the server runs in this process
                res = await client.call_tool("get_impact", {})
                assert not res.is_error, res.content
                out.append((time.perf_counter() - t0, time.process_time() - c0))  # [0]: the first call
    finally:
        state.close()
    return out


def latency(work: Path, packages: str) -> None:
    import statistics

    import anyio

    repo = latency_corpus(work / f"latency-{packages.replace(',', '-')[:40]}", packages)
    files = len(git(repo, "ls-files").splitlines())
    codeagent(repo, "build", "--ref", "main", "--json")
    git(repo, "checkout", "-q", "--", ".")
    codeagent(repo, "build", "--json")
    edited = edit_ten(repo)
    time.sleep(0.2)  # out of the build's racy window
    codeagent(repo, "build", "--json")
    first, *calls = anyio.run(_warm_calls, repo, 20)
    warm, warm_cpu = sorted(w for w, _ in calls), sorted(c for _, c in calls)
    cold = []
    for _ in range(3):
        t0 = time.perf_counter()
        data = json.loads(codeagent(repo, "impact", "--json"))
        cold.append(time.perf_counter() - t0)
    def p95(xs: list[float]) -> float:
        return xs[min(len(xs) - 1, int(round(0.95 * len(xs))) - 1)]

    print(f"corpus: stdlib packages {packages} ({files} files); 10 files edited: {', '.join(edited[:3])}...")
    print(f"impact: {data['summary']['changed']} changed, {data['summary']['dependents']} dependents, "
          f"{data['summary']['tests']} tests")
    print(f"get_impact warm (MCP, in-process server): wall p50 {statistics.median(warm) * 1000:.0f} ms, "
          f"p95 {p95(warm) * 1000:.0f} ms; CPU p50 {statistics.median(warm_cpu) * 1000:.0f} ms, "
          f"p95 {p95(warm_cpu) * 1000:.0f} ms (n={len(warm)}); first call {first[0] * 1000:.0f} ms wall, "
          f"{first[1] * 1000:.0f} ms CPU")
    print(f"codeagent impact --json cold (new process): median {statistics.median(cold) * 1000:.0f} ms (n=3)")
    print("load average:", Path("/proc/loadavg").read_text().strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-repo", type=int, default=6)
    ap.add_argument("--repos", default=",".join([*REPOS, "codeagent"]))
    ap.add_argument("--work", type=Path, default=Path("/tmp/impact-bench"))
    ap.add_argument("--out", type=Path, default=Path("/tmp/impact-bench.json"))
    ap.add_argument("--latency", action="store_true", help="Measure get_impact's latency instead.")
    ap.add_argument("--table", action="store_true", help="Only print the table of --out.")
    ap.add_argument("--rescore", metavar="K=W,...", default=None,
                    help="Only print the table of --out again, impact re-ranked with these weights "
                         "(graph, focus, cochange, naming, proximity).")
    ap.add_argument("--fit", action="store_true",
                    help="Only fit the weights on --out's development set (grid), and print the "
                         "leave-one-repository-out table.")
    ap.add_argument("--packages", default=LATENCY_PACKAGES, help="--latency: stdlib packages (or all).")
    args = ap.parse_args()
    if args.latency:
        return latency(args.work, args.packages)
    if args.table:
        print("\n".join(table(json.loads(args.out.read_text()))))
        return None
    if args.rescore:
        print("\n".join(table(rescore(json.loads(args.out.read_text()), parse_weights(args.rescore)))))
        return None
    if args.fit:
        results = json.loads(args.out.read_text())
        print("fit on all:", fit(results))
        print("\n".join(table(leave_one_out(results))))
        return None
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
