"""`codeagent impact`: thin: parse the range and options, call query.impact.impact, print."""

from __future__ import annotations

import json
from pathlib import Path

import click

from . import run_command

# query.impact's DEFAULT_DEPTH and MAX_DEPTH, named here: importing the read side (~300 ms)
# is not for `--help` (tests/core/test_cli_help.py holds the copies equal).
DEFAULT_DEPTH, MAX_DEPTH = 2, 6

_MARK = {"added": "+", "removed": "-", "body_changed": "~", "signature_changed": "!", "renamed": "=",
         "moved": ">", "modified": "~"}


def render(data: dict, limit: int) -> list[str]:
    """Human output: summary and risk, then changed, tests and dependents (`limit` lines each)."""
    s, r = data["summary"], data["risk"]
    lines = [f"impact {data['base']['ref'] or data['base']['manifest_id'][:12]} -> "
             f"{data['head']['ref'] or data['head']['manifest_id'][:12]}: {s['changed']} changed "
             f"({s['breaking']} breaking), {s['dependents']} dependents, {s['tests']} tests; risk {r['level']}"]
    if r["untested"]:
        lines.append(f"  untested: {', '.join(r['untested'][:8])}")
    if r["breaking_with_dependents"]:
        lines.append(f"  breaking with dependents: {', '.join(r['breaking_with_dependents'][:8])}")
    lines.append("\nchanged:")
    for c in data["changed"][:limit]:
        old = f" (was {c['old_name']})" if c.get("old_name") else ""
        lines.append(f"  {_MARK.get(c['change'], '?')} {c['change']:<17} {c['kind']:<10} {c['name']}{old}  "
                     f"{c['path']}:{c['line_start']}-{c['line_end']}")
    lines.append("\ntests to run:")
    for t in data["tests"][:limit]:
        lines.append(f"  {t['score']:.3f}  {t['path']}  ({t['reason']})")
    lines.append("\ndependents:")
    for d in data["dependents"][:limit]:
        flag = f"  [{d['flag']}]" if d["flag"] else ""
        lines.append(f"  {'  ' * (d['depth'] - 1)}{d['edge']:<10} {d['name']}  {d['path']}:{d['line']} "
                     f"({d['confidence']}) -> {d['changed']}{flag}")
    more = len(data["dependents"]) - limit
    if more > 0:
        lines.append(f"  ... {more} more (--limit, --json)")
    return lines


@click.command("impact")
@click.argument("range_", metavar="[BASE..HEAD | BASE]", required=False)
@click.option("--worktree", is_flag=True, help="The work tree against its base index (the default).")
@click.option("--repo", type=click.Path(path_type=Path), default=Path("."), show_default=True,
              help="Repository whose store holds the indexes.")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
              help="Store directory (default: REPO/.codeagent).")
@click.option("--depth", type=click.IntRange(1, MAX_DEPTH), default=DEFAULT_DEPTH, show_default=True,
              help="Hops of dependents to follow from each changed symbol.")
@click.option("--tests", "max_tests", type=click.IntRange(1, 1000), default=20, show_default=True,
              help="Test files to list.")
@click.option("--history", type=click.IntRange(0, 100_000), default=1000, show_default=True,
              help="Commits of history read for co-change (0: none).")
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True,
              help="Lines per section in the human output (--json lists everything).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def impact_cmd(range_: str | None, worktree: bool, repo: Path, store_dir: Path | None, depth: int,
               max_tests: int, history: int, limit: int, as_json: bool) -> None:
    """What a change touches and which tests to run: changed symbols, their dependents to
    --depth (each with its edge, confidence and path back), ranked tests and a risk summary.

    BASE..HEAD compares two indexes (refs, git revisions built with `build --ref`, manifest
    ids); BASE alone compares BASE with the work-tree index; nothing (or --worktree) compares
    the work-tree index with the index of its commit, else with the assembly its overlay
    sits on."""
    from ..query.impact import ImpactOptions, impact  # the read side: when it runs, not for `--help`

    options = ImpactOptions(depth=depth, max_tests=max_tests, history=history)
    data = run_command(as_json, impact, repo, store_dir, range_, worktree=worktree, options=options)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo("\n".join(render(data, limit)))
