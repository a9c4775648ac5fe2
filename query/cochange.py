"""Co-change: which files historically change together with given paths.

Pure core: `cochange_scores(commits, paths)` over a sequence of commit records (newest first,
as `git log` lists them) — nothing here reads a repository. `git_commit_records` is the one
adapter that gets those records, with `git log --name-only`, bounded and never past the
indexed commit. (The commit-history store will serve the same records: a commit is
immutable, so its record is computed once; only this adapter changes then.)

Score of a file F for the changed paths S, over the last `max_commits` commits that touch at
most `max_files` files (bigger ones are merges of branches, renames of a tree, formatting runs:
they say nothing about which files belong together):

    support(F) = sum over commits c touching F and some s in S of 1 / (|c| - 1)
    score(F)   = support(F) / (support(F) + SMOOTHING) * max over s of n(F, s) / n(s)

The first factor is how much evidence there is (one shared commit is weak), the second how
often a change to s came with F (association confidence). Both are in [0, 1].
"""

from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_COMMITS = 1000
MAX_FILES = 50
SMOOTHING = 1.0
GIT_TIMEOUT = 20.0  # seconds a `git log` may take before co-change is left out


@dataclass(frozen=True)
class CommitRecord:
    """What co-change needs of one commit: its id, author time (unix seconds), changed paths."""

    sha: str
    time: int
    paths: tuple[str, ...]


@dataclass(frozen=True)
class CoChange:
    path: str
    score: float
    commits: int  # commits that changed it together with one of the paths
    with_path: str  # the changed path it goes with most often


def cochange_scores(commits: Iterable[CommitRecord], paths: Collection[str], *,
                    max_commits: int = MAX_COMMITS, max_files: int = MAX_FILES) -> list[CoChange]:
    """Files that changed together with `paths` in the first `max_commits` of `commits`
    (commits touching more than `max_files` files are skipped, not counted), best first;
    `paths` themselves are not listed. Pure and deterministic (ties by path)."""
    wanted = set(paths)
    n_s: Counter[str] = Counter()
    pair: dict[str, Counter[str]] = defaultdict(Counter)
    support: Counter[str] = Counter()
    for i, c in enumerate(commits):
        if i >= max_commits:
            break
        touched = set(c.paths)
        if len(touched) > max_files:
            continue
        hit = touched & wanted
        if not hit:
            continue
        n_s.update(hit)
        others = touched - wanted
        if not others:
            continue
        weight = 1.0 / max(1, len(touched) - 1)
        for f in others:
            support[f] += weight
            pair[f].update(hit)
    out = []
    for f, sup in support.items():
        best, count = max(((s, n) for s, n in pair[f].items()), key=lambda t: (t[1] / n_s[t[0]], t[1], t[0]))
        confidence = count / n_s[best]
        out.append(CoChange(f, sup / (sup + SMOOTHING) * confidence, sum(pair[f].values()), best))
    return sorted(out, key=lambda c: (-c.score, c.path))


def parse_git_log(text: str) -> list[CommitRecord]:
    """Records from `git log --name-only --format=%x1e%H %at` output."""
    out = []
    for block in text.split("\x1e"):
        lines = [line for line in block.split("\n") if line]
        if not lines:
            continue
        sha, _, when = lines[0].partition(" ")
        out.append(CommitRecord(sha, int(when or 0), tuple(lines[1:])))
    return out


def git_commit_records(repo: Path, commit: str, *, max_commits: int = MAX_COMMITS) -> list[CommitRecord]:
    """The last `max_commits` non-merge commits reachable from `commit` (itself included),
    newest first; [] when git cannot answer (no history, a shallow or damaged clone)."""
    cmd = ["git", "-C", str(repo), "-c", "core.quotePath=false", "log", "--no-merges", "--no-renames",
           "--name-only", f"-n{int(max_commits)}", "--format=%x1e%H %at", commit, "--"]
    try:
        done = subprocess.run(cmd, capture_output=True, timeout=GIT_TIMEOUT, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if done.returncode != 0:
        return []
    return parse_git_log(done.stdout.decode("utf-8", "replace"))

