"""Search quality of a published index, measured on its repository's own recent history.

`codeagent publish --score N` runs the commit-task evaluation (`codeagent eval --dataset
commits`) on the N newest qualifying commits reachable from the published commit (never
past it), for `auto` and the whole-file BM25 baseline, and records the figures with the
published commit: in the local store and on the remote, so `sync` brings them and `status`
shows them. Each task builds an index at its commit's parent in the eval's private clone.
"""

from __future__ import annotations

import time
from pathlib import Path

from .. import __version__
from .. import format as fmt
from ..errors import InvalidParameter
from ..format.manifest import load_manifest
from ..indexer.replicate.publish import open_store, publish_ref
from ..indexer.replicate.remote import open_remote
from ..store.scores import write_scores
from .datasets import COMMIT_SCAN
from .gitdata import read_commits, toplevel
from .mine_commits import commit_cases
from .report import summarize
from .retrievers import BASELINE
from .runner import Progress, RunOptions, run_cases

MODES = ("auto", BASELINE)
METRICS = ("mrr@10", "acc@1", "acc@5")


def figures_of(section: dict, commit: str, requested: int, embedder: str | None) -> dict:
    """The recorded document: each mode's MRR@10, Acc@1, Acc@5 from one eval report section."""
    modes = {mode: {m: s["metrics"][m]["value"] for m in METRICS if m in s["metrics"]}
             for mode, s in section["modes"].items()}
    return {"format": "codeagent-scores", "version": fmt.SCORES_FORMAT, "dataset": "commits",
            "commit": commit, "tasks": section["cases"], "requested": requested, "modes": modes,
            "unavailable": section.get("unavailable", {}), "embedder": embedder,
            "codeagent_version": __version__,
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def score_history(repo: Path, commit: str, tasks: int, workdir: Path, embedder: str | None = None,
                  progress: Progress | None = None) -> dict:
    """Score `auto` and the baseline on the `tasks` newest commit tasks below `commit`."""
    if tasks < 1:
        raise InvalidParameter(f"--score needs at least 1 task, not {tasks}")
    top = toplevel(repo)
    cases = commit_cases(read_commits(top, commit, COMMIT_SCAN))[:tasks]
    if not cases:
        raise InvalidParameter(
            f"no commit in the history of {commit[:12]} qualifies as a search task (a non-merge "
            "commit modifying 1-5 source files, with a message of 3+ words naming none of them)",
            hint="publish without --score, or once the history has such commits")
    run = run_cases(cases, RunOptions(repo=top, workdir=workdir, modes=MODES, embedder=embedder,
                                      progress=progress))
    return figures_of(summarize(run, seed=0, per_query=False), commit, tasks, embedder)


def score_published(repo: Path, dest: str, spec: str | None, tasks: int, workdir: Path, *,
                    store_dir: Path | None = None, progress: Progress | None = None) -> dict:
    """Score the index of `spec` (as `publish` chose it) on its commit's history, then record
    the figures in the local store and on the remote `dest`."""
    store, top = open_store(repo, store_dir)
    _, mid = publish_ref(store, top, spec)
    manifest = load_manifest(store, mid)
    if not manifest.commit:
        raise InvalidParameter("the published index has no commit, so no history to score")
    figures = score_history(top, manifest.commit, tasks, workdir, manifest.embedder_id or None, progress)
    data = write_scores(store, figures)
    with open_remote(dest, create=True) as remote:
        remote.put_scores(manifest.commit, data)
    return figures
