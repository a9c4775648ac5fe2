"""Context packs on development-set tasks, beside whole files in whole-file BM25 order.

    python bench/context.py [--mirror DIR] [--repos python-attrs+attrs,spf13+cobra,...]
                            [--tasks 20] [--budgets 2000,8000,32000] [--work DIR]

Tasks are mined as `codeagent eval --dataset commits` mines them (eval/mine_commits.py: a
commit's cleaned message -> the source files it modified, the index built at the parent), from
clones of the bare development-set mirrors. For each task and budget:

- pack: `codeagent context TASK --budget B` (query/context.py) at the parent;
- baseline: whole source files in the order of a strong whole-file BM25 (one document per code
  file, path tokens included, identifier splitting, k1 1.2, b 0.75: the dev set's
  `bm25-strong`), framed as the pack frames a whole file, added while they fit the budget
  (a file that does not fit is skipped, the next one tried).

Both are counted with the same tokenizer (query/tokencount.py). A gold file's relevant lines are
the lines its commit changed, in the parent's numbering (`git diff -U0`: the removed or
rewritten lines; a pure insertion counts the line it follows). Printed per budget: the mean
over tasks of the share of gold files with any relevant line in the text (file recall), the
mean share of relevant lines in the text (line recall), and the tokens used. Nothing mined
or cloned here is committed.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from codeagent.eval.datasets import mine_commits
from codeagent.eval.gitdata import EVAL_BRANCH, pin, private_clone
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import open_index
from codeagent.query.context import build_context
from codeagent.query.tokencount import counter

REPOS = "python-attrs+attrs,spf13+cobra,expressjs+express"
CODE_EXT = {".py", ".pyi", ".go", ".rs", ".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".java",
            ".kt", ".kts", ".scala", ".cs", ".swift", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp",
            ".hh", ".rb", ".php", ".m", ".mm"}
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.M)


def git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          check=True).stdout


def tokens(text: str) -> list[str]:
    """bm25-strong's tokens: words, their camelCase parts, lower-cased, 2+ characters."""
    out = []
    for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        parts = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+", w)
        out.append(w.lower())
        if len(parts) > 1:
            out.extend(p.lower() for p in parts)
    return [t for t in out if len(t) > 1]


def tree_files(repo: Path, rev: str) -> dict[str, str]:
    """Every code file of `rev`: path -> text."""
    want = []
    for line in git(repo, "ls-tree", "-r", rev).decode().splitlines():
        meta, _, path = line.partition("\t")
        _, kind, sha = meta.split()
        if kind == "blob" and os.path.splitext(path)[1].lower() in CODE_EXT:
            want.append((path, sha))
    out = git(repo, "cat-file", "--batch", data="".join(s + "\n" for _, s in want).encode())
    files, pos = {}, 0
    for path, _ in want:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if header[1] == b"missing":
            pos = nl + 1
            continue
        size = int(header[2])
        files[path] = out[nl + 1:nl + 1 + size].decode("utf-8", "replace")
        pos = nl + 1 + size + 1
    return files


def bm25_order(files: dict[str, str], query: str, k1: float = 1.2, b: float = 0.75) -> list[str]:
    docs = {p: Counter(tokens(t)) + Counter(tokens(p)) for p, t in files.items()}
    n = len(docs)
    avg = sum(sum(c.values()) for c in docs.values()) / max(n, 1)
    df = Counter(t for c in docs.values() for t in c)
    q = set(tokens(query))
    scores = {}
    for path, c in docs.items():
        dl = sum(c.values())
        s = sum(math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * c[t] * (k1 + 1)
                / (c[t] + k1 * (1 - b + b * dl / avg)) for t in q if t in c)
        if s > 0:
            scores[path] = s
    return sorted(scores, key=lambda p: (-scores[p], p))


def baseline_pack(files: dict[str, str], order: list[str], budget: int, count) -> tuple[dict, int]:
    """Whole files in `order` while they fit: (path -> [(1, n)], tokens used)."""
    shown, used = {}, 0
    for path in order[:300]:
        lang = os.path.splitext(path)[1].lstrip(".")
        cost = count(f"## {path} — bm25\n```{lang}\n{files[path]}\n```") + 1
        if used + cost <= budget:
            used += cost
            shown[path] = [(1, files[path].count("\n") + 1)]
        if budget - used < 50:
            break
    return shown, used


def changed_lines(repo: Path, parent: str, sha: str, path: str) -> set[int]:
    diff = git(repo, "diff", "-U0", parent, sha, "--", path).decode("utf-8", "replace")
    out: set[int] = set()
    for m in _HUNK.finditer(diff):
        start, n = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        out.update(range(start, start + n) if n else [max(start, 1)])
    return out


def coverage(shown: dict[str, list], gold: dict[str, set[int]]) -> tuple[float, float]:
    """(share of gold files with a relevant line shown, mean share of relevant lines shown)."""
    files, lines = [], []
    for path, relevant in gold.items():
        ranges = shown.get(path, [])
        got = sum(1 for ln in relevant if any(s <= ln <= e for s, e in ranges))
        files.append(1.0 if got else 0.0)
        lines.append(got / len(relevant) if relevant else 0.0)
    return sum(files) / len(files), sum(lines) / len(lines)


def run_repo(src: Path, work: Path, n_tasks: int, budgets: list[int], count, rows: list) -> None:
    clone = private_clone(src, work / "clone")
    store = work / "store"
    cases = mine_commits(clone, "HEAD", n_tasks, seed=0)
    for n, case in enumerate(cases, 1):
        sha = case.case_id.removeprefix("commit-")
        gold = {p: changed_lines(clone, case.ref, sha, p) for p in case.gold_files}
        gold = {p: ls for p, ls in gold.items() if ls}
        if not gold:
            continue
        pin(clone, case.ref)
        started = time.process_time()
        build(BuildOptions(repo=clone, store_dir=store, rev=EVAL_BRANCH, lock_wait=30.0))
        files = tree_files(clone, case.ref)
        order = bm25_order(files, case.query)
        with open_index(clone, store, f"heads/{EVAL_BRANCH}") as view:
            for budget in budgets:
                pack = build_context(view, case.query, budget)
                ours = {}
                for item in pack.items:
                    ours.setdefault(item.path, []).extend(item.lines)
                base, base_used = baseline_pack(files, order, budget, count)
                rows.append({"repo": src.parent.name, "task": case.case_id, "budget": budget,
                             "pack": coverage(ours, gold), "base": coverage(base, gold),
                             "pack_tokens": pack.tokens, "base_tokens": base_used})
        print(f"  [{n}/{len(cases)}] {case.case_id} ({len(gold)} gold) "
              f"{time.process_time() - started:.1f} CPU s", file=sys.stderr)


def mean(values) -> float:
    values = list(values)
    return sum(values) / len(values) if values else 0.0


def report(rows: list[dict], budgets: list[int], tokenizer: str) -> None:
    print(f"tokens counted with {tokenizer}; {len({r['task'] for r in rows})} tasks")
    print("| repo | budget | tasks | pack file recall | base file recall | pack line recall | "
          "base line recall | pack tokens | base tokens |")
    print("|---|---|---|---|---|---|---|---|---|")
    for repo in [*sorted({r["repo"] for r in rows}), "ALL"]:
        for budget in budgets:
            sel = [r for r in rows if r["budget"] == budget and repo in ("ALL", r["repo"])]
            print(f"| {repo} | {budget} | {len(sel)} | {mean(r['pack'][0] for r in sel):.3f} | "
                  f"{mean(r['base'][0] for r in sel):.3f} | {mean(r['pack'][1] for r in sel):.3f} | "
                  f"{mean(r['base'][1] for r in sel):.3f} | {mean(r['pack_tokens'] for r in sel):.0f} | "
                  f"{mean(r['base_tokens'] for r in sel):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--repos", default=REPOS)
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--budgets", default="2000,8000,32000")
    ap.add_argument("--work", type=Path, default=Path(os.path.expanduser("~/.cache/codeagent-context-bench")))
    a = ap.parse_args()
    budgets = [int(b) for b in a.budgets.split(",")]
    tokenizer, count = counter()
    rows: list[dict] = []
    for name in a.repos.split(","):
        src = a.mirror / name / "repo"
        if not src.is_dir():
            print(f"skip {name}: no mirror at {src}", file=sys.stderr)
            continue
        print(f"{name}:", file=sys.stderr)
        run_repo(src, a.work / name, a.tasks, budgets, count, rows)
    report(rows, budgets, tokenizer)
    print(f"load average: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
