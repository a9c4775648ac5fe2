"""`codeagent org`: build, search and collect a fleet of repositories in one store (docs/org.md)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import run_command
from ..errors import InvalidParameter
from .org_search import org_search_cmd
from .build import JsonProgress, TerminalProgress, gc_summary

if TYPE_CHECKING:  # imported where used: the store and the build side are not for `--help`
    from ..store import Store

# indexer.fleet.engines.ENGINES, named here: the build side (~150 ms) is not for `--help`
# (tests/core/test_cli_help.py holds the copies equal).
ENGINES = ("local", "ray")


@click.group("org")
def org_cmd() -> None:
    """One index for many repositories: `org build` a fleet file into one store, `org search`
    across it, `org gc` what no repository of the fleet needs. See docs/org.md."""


org_cmd.add_command(org_search_cmd)


def _staging(remote: str) -> Path:
    """The local store a `--to` build stages in (kept: the next build parses only what changed)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "codeagent" / "fleet" / hashlib.sha256(remote.encode()).hexdigest()[:16]


def run_build(fleet: Path, engine: str, address: str | None, store_dir: Path | None, to_remote: str | None,
              workers: int, progress, lock_wait: float = 0.0) -> dict:
    """Build the fleet file into the store (and publish each ref to `to_remote`); the JSON report."""
    if (store_dir is None) == (to_remote is None):
        raise InvalidParameter("give exactly one of --store DIR and --to REMOTE")
    from ..indexer.fleet.engines import open_engine  # the build side: when it runs, not for `--help`
    from ..indexer.fleet.plan import build_fleet
    from ..indexer.fleet.spec import load_fleet
    from ..store import Store

    specs = load_fleet(fleet)
    store = Store(store_dir or _staging(to_remote or ""), create=True)
    runner = open_engine(engine, address=address, workers=workers)
    try:
        result = build_fleet(specs, store, runner, progress=progress, lock_wait=lock_wait)
    finally:
        runner.close()
    report = result.to_dict()
    if to_remote is not None:
        report["published"] = _publish(store, result, to_remote)
    return report


def _publish(store: Store, result, to_remote: str) -> dict:
    from ..format.fleet import fleet_ref  # with the remotes' clients: only a --to build loads them
    from ..indexer.replicate.publish import PublishResult, publish_into
    from ..indexer.replicate.remote import open_remote

    with open_remote(to_remote, create=True) as remote:
        remote.init()
        published = PublishResult(remote.label)
        for name, plans in result.repos.items():
            for plan in plans:
                publish_into(remote, store, fleet_ref(name, plan.ref), plan.manifest_id, published)
    return published.to_dict()


@org_cmd.command("build")
@click.argument("fleet", type=click.Path(path_type=Path))
@click.option("--engine", type=click.Choice(ENGINES), default="local", show_default=True,
              help="local: this machine's processes; ray: a Ray cluster (pip install 'codeagent[ray]').")
@click.option("--address", default=None, metavar="ADDR",
              help="With --engine ray: the cluster to join (default: start a local one).")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
              help="The fleet's store directory.")
@click.option("--to", "to_remote", default=None, metavar="REMOTE",
              help="Instead of --store: stage locally, then publish every ref to REMOTE "
                   "(directory, file://, s3://, gs://).")
@click.option("--jobs", "-j", type=int, default=0, help="Workers of a local engine or cluster started here (0: one per core).")
@click.option("--lock-wait", type=float, default=0.0, help="Seconds to wait for the store's lock.")
@click.option("--progress-json", is_flag=True, help="Progress as JSON lines on stderr.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def org_build_cmd(fleet: Path, engine: str, address: str | None, store_dir: Path | None, to_remote: str | None,
                  jobs: int, lock_wait: float, progress_json: bool, as_json: bool) -> None:
    """Build every `[[repo]]` of the FLEET file (TOML: name, path or url, refs) into one store.

    Each distinct file content is parsed once for the whole fleet; each repository's ref gets
    the manifest `codeagent build --ref` writes for it alone, under repos/NAME/REF.
    """
    progress = JsonProgress() if progress_json else TerminalProgress(not as_json and sys.stderr.isatty())
    report = run_command(as_json, run_build, fleet, engine, address, store_dir, to_remote, jobs, progress, lock_wait)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    for repo in report["repos"]:
        for ref in repo["refs"]:
            click.echo(f"{repo['name']:<20} {ref['ref']:<24} {ref['manifest_id'][:12]}  {ref['files_total']} files"
                       + ("" if ref["changed"] else " (unchanged)"))
    click.echo(f"{len(report['repos'])} repositories; {report['blobs_parsed']} distinct contents parsed "
               f"({report['files_parsed_per_ref']} files read by refs); {report['assembled']} assembled; "
               f"{report['engine']} x{report['workers']}; {report['seconds']:.2f}s")


@org_cmd.command("gc")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), required=True, help="The fleet's store.")
@click.option("--dry-run", is_flag=True, help="Report what would be deleted, delete nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def org_gc_cmd(store_dir: Path, dry_run: bool, as_json: bool) -> None:
    """Delete what no ref of the fleet's last build needs (refs of repositories and refs no
    longer in the fleet file go too)."""
    from ..indexer.fleet.maintenance import fleet_gc  # DuckDB via gc: only when collecting
    from ..store import Store

    report = run_command(as_json, fleet_gc, Store(store_dir), dry_run=dry_run)
    if as_json:
        click.echo(json.dumps(report.to_dict(), indent=2))
    else:
        click.echo(gc_summary(report))
