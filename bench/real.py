"""Real-repository smoke: build public repositories of the development set at many commits.

    python bench/real.py --mirrors DIR [--repos 12] [--commits 20] [--workdir DIR]

DIR holds one bare mirror per repository as OWNER+NAME/repo (fetched as for the retrieval
eval; never committed). Each is cloned with `git clone --no-checkout`; the smallest is also
cloned with `--filter=blob:none` and built with lazy fetching off, so its absent blobs are
`missing_object` skips. Each clone is built with `codeagent build --ref SHA` at COMMITS
commits spread over its recent first-parent history, into one store per clone (the first build
cold, the rest incremental). Prints builds attempted / succeeded, unexpected errors (with the
message) and skipped files by reason, summed over all builds.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import ENV  # noqa: E402

HISTORY = 400  # commits are spread over this many first-parent commits of HEAD


def git(*args: str, env: dict | None = None) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True,
                          env=env).stdout


def clone(mirror: Path, dest: Path, partial: bool) -> Path:
    if not dest.exists():
        if partial:  # a filter needs a real transport: file:// with filters allowed
            git("-c", "protocol.file.allow=always", "clone", "-q", "--no-checkout", "--filter=blob:none",
                "--upload-pack", "git -c uploadpack.allowFilter=true upload-pack",
                f"file://{mirror}", str(dest))
        else:
            git("clone", "-q", "--no-checkout", str(mirror), str(dest))
    return dest


def commits(repo: Path, count: int) -> list[str]:
    shas = git("-C", str(repo), "rev-list", "--first-parent", f"--max-count={HISTORY}", "HEAD").split()
    step = max(1, len(shas) // count)
    return list(reversed(shas[::step][:count]))  # oldest first: later builds are incremental


def build_all(repo: Path, shas: list[str], env: dict, totals: dict) -> None:
    for sha in shas:
        totals["attempted"] += 1
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "codeagent", "build", str(repo), "--ref", sha,
                               "--json"], capture_output=True, text=True, env=env)
        totals["seconds"] += time.monotonic() - started
        if proc.returncode != 0:
            last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            totals["errors"].append(f"{repo.name}@{sha[:10]}: exit {proc.returncode}: {last}")
            continue
        out = json.loads(proc.stdout)
        totals["succeeded"] += 1
        totals["files"] += out["files_total"]
        totals["skips"].update(out["files_skipped"]["by_reason"])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirrors", type=Path, required=True)
    ap.add_argument("--repos", type=int, default=12)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-real")
    args = ap.parse_args()
    mirrors = sorted((p for p in args.mirrors.iterdir() if (p / "repo").is_dir()),
                     key=lambda p: sum(f.stat().st_size for f in (p / "repo").rglob("*") if f.is_file()))
    chosen = mirrors[:args.repos]
    args.workdir.mkdir(parents=True, exist_ok=True)
    totals: dict = {"attempted": 0, "succeeded": 0, "files": 0, "seconds": 0.0, "errors": [],
                    "skips": Counter()}
    jobs = [(m, False) for m in chosen] + [(chosen[0], True)]
    for mirror, partial in jobs:
        name = mirror.name + ("-blobless" if partial else "")
        repo = clone((mirror / "repo").resolve(), args.workdir / name, partial)
        env = {**ENV, "GIT_NO_LAZY_FETCH": "1"} if partial else ENV
        before = totals["succeeded"], len(totals["errors"])
        build_all(repo, commits(repo, args.commits), env, totals)
        print(f"{name:<32} {totals['succeeded'] - before[0]:>3} built, "
              f"{len(totals['errors']) - before[1]} errors", flush=True)
    print(f"\nrepositories: {len(chosen)} (+1 blob:none clone), commits each: {args.commits}")
    print(f"builds attempted: {totals['attempted']}, succeeded: {totals['succeeded']}, "
          f"unexpected errors: {len(totals['errors'])}, {totals['seconds']:.0f} s")
    print(f"files listed (summed over builds): {totals['files']}")
    print("skipped files by reason: " + (", ".join(f"{r} {n}" for r, n in totals["skips"].most_common())
                                         or "none"))
    for line in totals["errors"][:20]:
        print("  " + line)
    sys.exit(1 if totals["errors"] else 0)


if __name__ == "__main__":
    main()
