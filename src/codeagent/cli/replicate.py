"""CLI commands for sharing indexes: publish, sync, bundle.

Each command imports its library inside: `codeagent --help` imports every command module
(cli.LazyGroup.list_commands)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import JSON_OPT, REPO_ARG, STORE_OPT, RefListOption, run_command
from ..errors import CodeagentError
from .build import TerminalProgress

JOBS_OPT = click.option("--jobs", "-j", type=click.IntRange(1, 64), default=8,
                        help="Parallel transfers (default 8).")


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


@click.command("publish")
@REPO_ARG
@click.option("--to", "dest", required=True, metavar="REMOTE",
              help="Directory, file://, s3://, gs:// URL or FILE.tar (http remotes are read-only).")
@click.option("--ref", "ref", default=None, metavar="REF",
              help="The indexed ref to publish (default: the current branch's).")
@click.option("--score", "tasks", type=click.IntRange(1), default=None, metavar="N",
              help="Also measure search quality on the N newest commit tasks of the published "
                   "commit's own history (`codeagent eval --dataset commits`: auto and the "
                   "whole-file BM25 baseline) and publish the figures with it; `sync` brings "
                   "them, `status` shows them. Costs an index build at each task's parent.")
@STORE_OPT
@JOBS_OPT
@JSON_OPT
def publish_cmd(repo: Path, dest: str, ref: str | None, tasks: int | None, store_dir: Path | None,
                jobs: int, as_json: bool) -> None:
    """Upload an index to REMOTE: missing objects, then the manifest, then the ref.

    Only objects the remote lacks move. The commit's index is also recorded under
    commits/<sha>, so `sync` on a branch nobody published falls back to its nearest ancestor.
    With --score, a failing or impossible measurement is reported and the index stays published.
    """
    from ..indexer.replicate.publish import publish  # +~60 ms that sync and --help need not pay

    progress = TerminalProgress(not as_json and sys.stderr.isatty())
    result = run_command(as_json, publish, repo, dest, ref, store_dir=store_dir, jobs=jobs,
                         progress=progress)
    scores = _score(repo, dest, ref, tasks, store_dir, as_json) if tasks else None
    if as_json:
        click.echo(json.dumps({**result.to_dict(), **(scores or {})}, indent=2))
        return
    for r in result.refs:
        click.echo(f"published {r['ref']} @ {(r['commit'] or 'no commit')[:12]} -> manifest "
                   f"{r['manifest_id'][:12]} to {result.remote}")
    click.echo(f"  uploaded {result.stats.objects} objects ({_mb(result.stats.bytes)}) in "
               f"{result.seconds:.2f}s")
    if scores and scores["scores"]:
        from ..query.status import describe_scores  # loaded by _score already

        click.echo(f"  {describe_scores(scores['scores'])}")


def _score(repo: Path, dest: str, ref: str | None, tasks: int, store_dir: Path | None,
           as_json: bool) -> dict:
    """{"scores": figures} once recorded, else {"scores": None, "scores_error": why}: the index
    is published already, so a measurement that fails is said, never an exit code."""
    from ..eval.evaluate import default_workdir  # the eval harness (runner, miners, numpy): +~0.4 s on --help
    from ..eval.runner import stderr_progress
    from ..eval.selfscore import score_published

    try:
        figures = score_published(repo, dest, ref, tasks, default_workdir(repo), store_dir=store_dir,
                                  progress=None if as_json else stderr_progress)
    except CodeagentError as exc:
        why = exc.message + (f" ({exc.hint})" if exc.hint else "")
    except Exception as exc:  # a failing evaluation never takes the published index with it
        why = f"the evaluation failed: {type(exc).__name__}: {exc}"
    else:
        return {"scores": figures}
    click.echo(f"search quality not recorded: {why}", err=True)
    return {"scores": None, "scores_error": why}


@click.command("sync")
@REPO_ARG
@click.option("--from", "source", required=True, metavar="REMOTE",
              help="Directory, file://, http(s)://, s3://, gs:// URL or FILE.tar bundle.")
@click.option("--ref", "ref", default=None, metavar="REF",
              help="Branch, tag or ref to sync (default: the current branch).")
@click.option("--require-commit", default=None, metavar="SHA",
              help="Refuse (exit 6) an index that is not for this commit.")
@click.option("--build", "build_after", is_flag=True,
              help="Then index what the work tree changes on top (reusing every synced shard).")
@STORE_OPT
@JOBS_OPT
@click.option("--retries", type=click.IntRange(0, 20), default=2,
              help="Re-downloads of an object that fails verification (default 2).")
@click.option("--max-ancestors", type=click.IntRange(1), default=200,
              help="How far back to look for a published ancestor (default 200 commits).")
@click.option("--wait", "lock_wait", type=click.FloatRange(0), default=0.0, metavar="SECONDS",
              help="Wait this long for a build holding the store lock.")
@JSON_OPT
def sync_cmd(repo: Path, source: str, ref: str | None, require_commit: str | None, build_after: bool,
             store_dir: Path | None, jobs: int, retries: int, max_ancestors: int, lock_wait: float,
             as_json: bool) -> None:
    """Download the published index of a branch; only objects the store lacks move.

    Every object is re-hashed before it enters the store; a bad download is retried, then
    the sync fails (exit 14) leaving the previous local index as it was. An interrupted
    sync resumes without fetching verified objects again. A branch with no published
    index falls back to its nearest published ancestor commit, and says so.
    """
    from ..indexer.replicate.sync import SyncOptions, sync  # +~110 ms that publish and --help need not pay

    opts = SyncOptions(repo=repo, source=source, ref=ref, store_dir=store_dir,
                       require_commit=require_commit, build=build_after, jobs=jobs,
                       attempts=retries + 1, max_ancestors=max_ancestors, lock_wait=lock_wait,
                       progress=TerminalProgress(not as_json and sys.stderr.isatty()))
    result = run_command(as_json, sync, opts)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    t = result.target
    if t.remote_ref is None and t.distance:
        click.echo(f"no published index for {t.requested}; using the index of ancestor "
                   f"{t.fallback_commit[:12]} ({t.distance} commits back)")
    elif t.remote_ref is None:
        click.echo(f"using the index published for commit {t.fallback_commit[:12]}")
    click.echo(f"synced {t.local_ref} @ {(result.commit or 'no commit')[:12]} -> manifest "
               f"{t.manifest_id[:12]} from {result.remote}"
               + ("" if result.changed else " (already up to date)"))
    click.echo(f"  fetched {result.stats.objects} objects ({_mb(result.stats.bytes)}); "
               f"{result.objects_present} of {result.objects_total} were already local; "
               f"{result.stats.retries} retries; {result.seconds:.2f}s")
    if result.build:
        b = result.build
        click.echo(f"  built the work tree on top: {b['files_parsed']} files parsed, "
                   f"{b['files_reused']} reused -> manifest {b['manifest_id'][:12]}")


@click.command("bundle")
@REPO_ARG
@click.option("--ref", "refs", cls=RefListOption, metavar="REF...",
              help="Indexed refs to include (`--ref main v2`, or repeated; default: the current "
                   "branch's).")
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path),
              help="The bundle file to write (a tar), e.g. index.tar.")
@STORE_OPT
@JSON_OPT
def bundle_cmd(repo: Path, refs: tuple[str, ...], out: Path, store_dir: Path | None,
               as_json: bool) -> None:
    """Write indexes into one tar file (a CI artifact); `codeagent sync --from FILE` reads it."""
    from ..indexer.replicate.publish import bundle  # +~60 ms that sync and --help need not pay

    progress = TerminalProgress(not as_json and sys.stderr.isatty())
    result = run_command(as_json, bundle, repo, out, list(refs) or None, store_dir=store_dir,
                         progress=progress)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
        return
    names = ", ".join(r["ref"] for r in result.refs)
    click.echo(f"bundled {names} into {result.remote} ({out.stat().st_size / 1e6:.2f} MB, "
               f"{result.stats.objects} objects) in {result.seconds:.2f}s")
