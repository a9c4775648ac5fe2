"""CLI commands of the build side: build, verify, repair, gc.

Each command imports its library inside: `codeagent --help` imports every command module
(cli.LazyGroup.list_commands), and indexer.build alone costs it ~30 ms."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import click

from . import JSON_OPT, REPO_ARG, STORE_OPT, RefListOption, run_command, store_for
from ..errors import InvalidParameter
from ..indexer.budget import memory_budget


class TerminalProgress:
    """One self-rewriting stderr line per stage; silent when stderr is not a terminal."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.last = 0.0
        self.stage = ""
        self.width = 0  # of the line being rewritten: a shorter one is padded over it

    def __call__(self, stage: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if stage == self.stage and done < total and now - self.last < 0.1:
            return
        self.last, self.stage = now, stage
        if total:
            filled = int(30 * min(done, total) / total)
            line = f"{stage:<9} [{'#' * filled}{'-' * (30 - filled)}] {done}/{total}"
        else:
            line = f"{stage:<9} ..."
        sys.stderr.write("\r" + line.ljust(self.width))
        self.width = len(line)
        if total and done >= total:
            sys.stderr.write("\n")
            self.width = 0
        sys.stderr.flush()


class JsonProgress:
    """One JSON line per progress step on stderr (`{"stage", "done", "total"}`), at most ten
    a second per stage, for a program driving the build (the MCP build tools)."""

    def __init__(self) -> None:
        self.last = 0.0
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self.stage and done < total and now - self.last < 0.1:
            return
        self.last, self.stage = now, stage
        sys.stderr.write(json.dumps({"stage": stage, "done": done, "total": total}) + "\n")
        sys.stderr.flush()


def _scale_options(fn):
    """build's options for large trees: the memory budget, partitioned builds."""
    fn = click.option("--from-partitions", default=None, metavar="REMOTE",
                      help="With --ref: join the N partitions uploaded to REMOTE into the index and "
                           "assemble it (the same manifest as a one-machine build).")(fn)
    fn = click.option("--to", "to_remote", default=None, metavar="REMOTE",
                      help="The remote a --partition uploads to (directory, file://, s3://, gs://).")(fn)
    fn = click.option("--partition", default=None, metavar="I/N",
                      help="With --ref and --to: parse only slice I of N of the tree (by content) "
                           "and upload its shards; one CI machine per slice (see README).")(fn)
    return click.option("--memory", default=None, metavar="SIZE",
                        help="Memory budget of the build, e.g. 512M or 2G (default 1G): assembly "
                             "batches, parsed shards kept in memory and DuckDB's limit (it spills "
                             "to the store's tmp/ past it) are sized from it. Parser processes come "
                             "on top (see --jobs).")(fn)


def _history_option(fn):
    return click.option("--no-history", "no_history", is_flag=True,
                        help="Do not store the commit history view that ranks files by what past "
                             "commit messages say of them (docs/history.md).")(fn)


def _driver_options(fn):
    """build's options for a program driving it (the MCP build tools)."""
    fn = click.option("--force", is_flag=True,
                      help="Read and hash every file again (no stat cache).")(fn)
    fn = click.option("--path", "paths", multiple=True, metavar="FILE",
                      help="Work tree only, repeatable: re-read just these repository-relative "
                           "files; every other file keeps its entry in the previous index.")(fn)
    fn = click.option("--consolidate", is_flag=True,
                      help="Work tree: assemble a full database even for a small change, instead of "
                           "an overlay of the changed files on the previous one (see README).")(fn)
    fn = click.option("--graph-later", is_flag=True, hidden=True,
                      help="Work tree: publish a small change's overlay before its graph step and "
                           "leave that step to the next build (graph_pending; the watcher).")(fn)
    fn = click.option("--consolidate-later", is_flag=True, hidden=True,
                      help="Work tree: keep a grown overlay (up to 4x its bound) and say "
                           "consolidation_due; the caller consolidates when idle (the watcher).")(fn)
    return click.option("--progress-json", is_flag=True,
                        help="Write progress as JSON lines on stderr ({\"stage\", \"done\", "
                             "\"total\"}) for a program driving the build.")(fn)


@click.command("build")
@REPO_ARG
@click.option("--ref", "rev", default=None, metavar="REV",
              help="Index a committed tree (branch, tag or sha) read through git; no checkout needed.")
@click.option("--worktree", is_flag=True,
              help="Index the work tree, untracked files included unless .gitignore ignores them "
                   "(the default when --ref is not given).")
@STORE_OPT
@click.option("--jobs", "-j", type=click.IntRange(0, 256), default=0,
              help="Parser processes (default 0: one per core).")
@click.option("--max-file-size", type=click.IntRange(1), default=None, metavar="BYTES",
              help="Skip files larger than this (recorded as too_large; default: max_file_size "
                   "of the repository's [tool.codeagent], else 2 MiB).")
@click.option("--wait", "lock_wait", type=click.FloatRange(0), default=0.0, metavar="SECONDS",
              help="Wait this long for another build holding the store lock.")
@click.option("--embedder", default=None, metavar="NAME",
              help="Embed symbols and chunks: static (a word-piece table shipped in the package), "
                   "hash (no model) or minilm (the neural extra); "
                   "later builds of the ref keep it, `none` drops the vectors (see README).")
@_history_option
@_scale_options
@_driver_options
@JSON_OPT
def build_cmd(repo: Path, rev: str | None, worktree: bool, store_dir: Path | None, jobs: int, max_file_size: int | None,
              lock_wait: float, embedder: str | None, no_history: bool, memory: str | None, force: bool,
              partition: str | None, to_remote: str | None, from_partitions: str | None, progress_json: bool,
              consolidate: bool, consolidate_later: bool, graph_later: bool,
              paths: tuple[str, ...], as_json: bool) -> None:
    """Index REPO (default: the current directory) into its store.

    Unchanged files are never re-read: the work tree is checked against a stat cache and
    committed trees against git's blob ids. Files that cannot be parsed are recorded in the
    manifest with their reason (binary, invalid_utf8, too_large, minified, symlink...).
    On a terminal a progress line counts the files read and parsed, then the assembly's
    steps (none when piped or with --json). The ref moves to the new index only once it is
    complete: a failed or killed build leaves the previous one current.

    \b
    Exit codes: 0 done (or nothing changed), 1 unexpected error, 2 invalid argument,
    3 not a repository, 4 no such ref, 7 corrupt store (run `codeagent repair`), 8 store
    locked by another build (see --wait), 9 a write failed (disk full, I/O error),
    14 a remote failed (partitioned builds: a partition is missing).
    """
    from ..indexer.build import BuildOptions, build  # +~100 ms that verify, gc and --help need not pay

    run_command(as_json, _check_build_args, rev, worktree, paths)
    opts = BuildOptions(repo=repo, store_dir=store_dir, rev=rev, jobs=jobs, max_bytes=max_file_size, lock_wait=lock_wait,
                        progress=JsonProgress() if progress_json
                        else TerminalProgress(not as_json and sys.stderr.isatty()),
                        embedder=embedder, memory=run_command(as_json, memory_budget, memory),
                        paths=frozenset(paths) if paths else None, overlay=not consolidate, force=force,
                        consolidate_later=consolidate_later, graph_later=graph_later, history=not no_history)
    partitioned = partition is not None or to_remote is not None or from_partitions is not None
    result = run_command(as_json, _partitioned, opts, partition, to_remote, from_partitions) if partitioned \
        else run_command(as_json, build, opts)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        _print_build(result)


def _check_build_args(rev: str | None, worktree: bool, paths: tuple[str, ...]) -> None:
    if rev is not None and worktree:
        raise InvalidParameter("--ref and --worktree exclude each other")
    if rev is not None and paths:
        raise InvalidParameter("--path re-reads work-tree files; it does not go with --ref")


def _partitioned(opts, partition: str | None, to_remote: str | None, source: str | None):
    """One partition of a partitioned build (--partition, --to) or the join (--from-partitions)."""
    from ..indexer.partition import build_from_partitions, build_partition, parse_partition  # imports the build: +~100 ms

    if source is not None:
        if partition is not None or to_remote is not None:
            raise InvalidParameter("--from-partitions excludes --partition and --to")
        return build_from_partitions(opts, source)
    if partition is None or to_remote is None:
        raise InvalidParameter("--partition and --to go together",
                               hint="codeagent build --ref REV --partition I/N --to REMOTE")
    return build_partition(opts, *parse_partition(partition), to_remote)


def _print_build(result) -> None:
    if hasattr(result, "partition"):
        click.echo(result.summary())
        return
    for repair in result.repairs:
        click.echo(f"repaired: {repair}")
    history = getattr(result, "history", None) or {}
    for note in history.get("notes", []) + ([f"no history view: {history['skipped']}"] if history.get("skipped") else []):
        click.echo(f"history: {note}")
    if not result.changed:
        # after a repair the index is the same one, but something under it did change
        head = "repaired" if result.repairs else "nothing changed"
        click.echo(f"{head}: {result.ref} is still {result.manifest_id[:12]} "
                   f"({result.files_total} files, {result.seconds:.2f}s)")
        return
    skipped = sum(result.files_skipped.values())
    click.echo(f"indexed {result.ref} @ {(result.commit or 'no commit')[:12]} -> manifest "
               f"{result.manifest_id[:12]}")
    click.echo(f"  {result.files_total} files: {result.files_total - skipped} indexed, {skipped} skipped "
               f"({result.files_parsed} parsed now, {result.files_reused} reused); "
               f"{result.shards_written} shards written; {result.seconds:.2f}s")
    for reason, n in result.files_skipped.items():
        click.echo(f"  skipped {n} ({reason})")


def _raise(exc: Exception) -> None:
    raise exc


@click.command("verify")
@REPO_ARG
@STORE_OPT
@JSON_OPT
def verify_cmd(repo: Path, store_dir: Path | None, as_json: bool) -> None:
    """Re-hash every object and manifest; exit 7 on any mismatch or dangling name."""
    from ..indexer.maintenance import verify_store  # +~40 ms that a no-op build need not pay

    store, _ = run_command(as_json, store_for, repo, store_dir)
    report = verify_store(store)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(f"{report.objects} objects, {report.manifests} manifests, {report.refs} refs checked")
        for p in report.problems:
            click.echo(f"  {p.kind}: {p.name} {p.detail}")
        click.echo("ok" if report.ok else f"{len(report.problems)} problems; {report.hint}")
    sys.exit(0 if report.ok else 7)


@click.command("repair")
@REPO_ARG
@STORE_OPT
@JSON_OPT
def repair_cmd(repo: Path, store_dir: Path | None, as_json: bool) -> None:
    """Re-create every damaged or missing object the store's refs use: shards parsed again
    from their sources, assembled indexes from their manifests, an unreadable manifest built
    again. Exit 0 when the refs are whole again, 7 when something could not be re-created
    (named, with what to run), 5 no index, 8 store locked."""
    from ..indexer.repair import repair_store  # parses and assembles: +~150 ms that verify need not pay

    store, root = run_command(as_json, store_for, repo, store_dir)
    report = run_command(as_json, repair_store, store, root if root.is_dir() else None)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        for r in report.repaired:
            click.echo(f"repaired {r['kind']} {r['name'][:12]}: {r['how']}")
        for r in report.unrepaired:
            click.echo(f"NOT repaired {r['kind']} {r['name'][:12]}: {r['detail']}")
        click.echo(f"{report.refs} refs checked; {len(report.repaired)} repaired, "
                   f"{len(report.unrepaired)} not" if report.repaired or report.unrepaired
                   else f"{report.refs} refs checked; nothing to repair")
    sys.exit(0 if report.ok else 7)


@click.command("gc")
@REPO_ARG
@STORE_OPT
@click.option("--keep-refs", cls=RefListOption, metavar="REF...",
              help="Keep only these refs (`--keep-refs main v1.11.0`, or repeated; a branch, tag, "
                   "HEAD, sha or manifest-id prefix, as every command reads them); default: keep "
                   "every ref.")
@click.option("--dry-run", is_flag=True, help="Report what would be deleted, delete nothing.")
@JSON_OPT
def gc_cmd(repo: Path, store_dir: Path | None, keep_refs: tuple[str, ...], dry_run: bool, as_json: bool) -> None:
    """Delete objects that no kept manifest references, and the history views and scores of
    commits none names; exit 5 if a --keep-refs names no index."""
    from ..indexer.maintenance import gc_store  # +~40 ms that a no-op build need not pay

    store, root = run_command(as_json, store_for, repo, store_dir)
    report = run_command(as_json, gc_store, store, list(keep_refs) or None, repo=root, dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        verb = "would delete" if dry_run else "deleted"
        for ref in report.refs_deleted:
            click.echo(f"{verb} ref {ref}")
        click.echo(f"kept {len(report.kept_refs)} refs ({', '.join(report.kept_refs) or 'none'}); "
                   f"{verb} {len(report.refs_deleted)} refs, {report.objects_deleted} objects "
                   f"({report.bytes_freed / 1e6:.1f} MB), {report.actions_deleted} cache entries, "
                   f"{report.assembled_deleted} assembled indexes, {report.history_deleted} history views, "
                   f"{report.scores_deleted} scores files")
