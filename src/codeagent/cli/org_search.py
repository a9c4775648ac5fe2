"""`codeagent org search`: one query over every repository of a fleet store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from . import run_command

if TYPE_CHECKING:  # imported where used: the read side (~300 ms) is not for `--help`
    from ..query.search import SearchRequest

MODES = ["auto", "symbol", "text", "regex", "path"]
# query.org.FUSIONS, named here (tests/core/test_cli_help.py holds the copies equal).
FUSIONS = ("global", "score", "rank")


def _repos(value: str | None) -> list[str] | None:
    names = [r.strip() for r in (value or "").split(",") if r.strip()]
    return names or None


def run_org_search(store_dir: Path, request: SearchRequest, repos: list[str] | None, fusion: str):
    from ..query.org import open_fleet, org_search  # the read side: when it runs, not for `--help`

    with open_fleet(store_dir, repos) as fleet:
        return org_search(fleet, request, repos, fusion)


@click.command("search")
@click.argument("query")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), required=True, help="The fleet's store.")
@click.option("--repos", default=None, metavar="A,B", help="Only these repositories (comma-separated).")
@click.option("--mode", type=click.Choice(MODES), default="auto", show_default=True, help="As `codeagent search`.")
@click.option("--lang", "language", default=None, metavar="L", help="Only this language.")
@click.option("--path", "path_glob", default=None, metavar="GLOB", help="Only files matching this glob.")
@click.option("--fusion", type=click.Choice(FUSIONS), default="global", show_default=True,
              help="global: each repository's hits weighed by a fleet-wide BM25 of its best file; "
                   "score: merged by their own scores; rank: by reciprocal rank (docs/org.md).")
@click.option("--limit", type=click.IntRange(1, 1000), default=10, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def org_search_cmd(query: str, store_dir: Path, repos: str | None, mode: str, language: str | None,
                   path_glob: str | None, fusion: str, limit: int, as_json: bool) -> None:
    """Search every repository of a fleet store for QUERY; each hit names its repository."""
    from ..query.search import SearchRequest  # the read side: when it runs, not for `--help`

    request = SearchRequest(query=query, mode=mode, language=language, path=path_glob, limit=limit)
    resp = run_command(as_json, run_org_search, store_dir, request, _repos(repos), fusion)
    if as_json:
        click.echo(json.dumps(resp.to_dict(), indent=2))
        return
    if not resp.results:
        click.echo(f"no results for {query!r} in {len(resp.repos)} repositories")
    for n, h in enumerate(resp.results, 1):
        hit = h.hit
        click.echo(f"{n:>2}. {click.style(h.repo, fg='green')}:{click.style(f'{hit.path}:{hit.line_start}', fg='cyan')}"
                   f"  {hit.kind} {click.style(hit.qualified_name or hit.name, bold=True)}  ({hit.score:.3f})")
        for line in hit.snippet.splitlines()[:2]:
            click.echo(f"      {line}")
    for note in resp.notes:
        click.echo(f"note: {note}")
    click.echo(f"-- {len(resp.results)} hits from {len(resp.repos)} repositories (fusion {resp.fusion})")
