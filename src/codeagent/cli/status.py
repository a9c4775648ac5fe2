"""CLI commands that read the store itself, not an assembled index: `status`, and `diff A B`
(resolve two names to manifests, print their diff)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from . import JSON_OPT, REPO_ARG, STORE_OPT, run_command, store_for
from ..errors import IndexMissing

_LABEL = {"added": "+", "removed": "-", "modified": "~", "moved": ">", "renamed": "="}


def resolve_manifest(store, spec: str, repo: Path | None) -> tuple[str | None, str]:
    """(ref, manifest id) for a store ref, branch, tag or manifest id; failing that, a git
    revision (HEAD~2, a sha) whose commit some built manifest indexed."""
    from ..refs import resolve  # the store's modules load when a command runs, not for `--help`

    try:
        return resolve(store, spec, repo)
    except IndexMissing as missing:
        found = _by_commit(store, spec, repo) if repo is not None else None
        if found is None:
            raise missing
        return found


def _by_commit(store, spec: str, repo: Path) -> tuple[str | None, str] | None:
    from .. import sources  # git and the store's modules: when a command runs, not for `--help`
    from ..format.manifest import load_manifest
    from ..store import read_log

    try:
        _, sha = sources.resolve_ref(repo, spec)
    except Exception:
        return None
    refs = store.list_refs()
    for ref, mid in sorted(refs.items()):
        try:
            m = load_manifest(store, mid)
        except Exception:
            continue
        if m.commit == sha and m.source == "git":
            return ref, mid
    for rec in reversed(read_log(store, "builds", limit=10_000)):
        if rec.get("commit") == sha and store.has(rec.get("manifest_id", "")):
            try:
                if load_manifest(store, rec["manifest_id"]).source == "git":
                    return rec.get("ref"), rec["manifest_id"]
            except Exception:
                continue
    return None


def diff_specs(repo: Path, store_dir: Path | None, a: str, b: str):
    """The Diff between two user-spelled manifests of the store of `repo`."""
    from ..query.diff import diff_ids  # the read side (~300 ms): when it runs, not for `--help`

    store, base = store_for(repo, store_dir)
    _, a_id = resolve_manifest(store, a, base)
    _, b_id = resolve_manifest(store, b, base)
    return diff_ids(store, a_id, b_id)


def _side(s: dict) -> str:
    commit = f" @ {s['commit'][:12]}" if s.get("commit") else ""
    return f"{s.get('ref') or '?'}{commit} ({s['manifest_id'][:12]})"


def _symbol_line(s: dict, change: str) -> str:
    where = f"{s['path']}:{s['line']}" if s["path"] else f"{s['old_path']}:{s['old_line']}"
    name = s["qualified_name"] or s["old_qualified_name"]
    if change == "renamed":
        name = f"{s['old_qualified_name']} -> {s['qualified_name']}"
    if change == "moved" or (change == "modified" and s["old_path"] != s["path"]):
        where = f"{s['old_path']}:{s['old_line']} -> {where}"
    return f"  {_LABEL[change]} {change:<9}{s['kind']:<12}{name}  {where}"


def render(data: dict, limit: int) -> list[str]:
    """Human output: a header, then one section per change kind, at most `limit` lines each."""
    c = data["counts"]
    lines = [f"diff {_side(data['a'])} -> {_side(data['b'])}",
             "files: " + ", ".join(f"{n} {k}" for k, n in c["files"].items()),
             "symbols: " + ", ".join(f"{n} {k}" for k, n in c["symbols"].items())]
    for change, rows in data["files"].items():
        if rows:
            lines.append(f"\nfiles {change}:")
            for f in rows[:limit]:
                lines.append(f"  {_LABEL[change]} {f['old_path']} -> {f['path']}" if f["old_path"]
                             else f"  {_LABEL[change]} {f['path']}")
            if len(rows) > limit:
                lines.append(f"  ... {len(rows) - limit} more (--limit, --json)")
    for change, rows in data["symbols"].items():
        if rows:
            lines.append(f"\nsymbols {change}:")
            lines.extend(_symbol_line(s, change) for s in rows[:limit])
            if len(rows) > limit:
                lines.append(f"  ... {len(rows) - limit} more (--limit, --json)")
    return lines


@click.command("diff")
@click.argument("a")
@click.argument("b")
@click.option("--repo", type=click.Path(path_type=Path), default=".",
              help="Repository whose store holds the indexes (default: current directory).")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
              help="Store directory (default: REPO/.codeagent).")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True,
              help="Lines per section in the human output (--json lists everything).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def diff_cmd(a: str, b: str, repo: Path, store_dir: Path | None, limit: int, as_json: bool) -> None:
    """What changed from index A to index B: files added/removed/modified/moved and
    symbols added/removed/modified/moved/renamed.

    A and B are refs (main, heads/main, tags/v1, worktree), manifest ids (or a unique prefix
    of 8+ hex digits), or git revisions (HEAD~1, a sha) that were built with --ref. Computed
    from the two manifests and their shards alone: nothing is parsed again.
    """
    diff = run_command(as_json, diff_specs, repo, store_dir, a, b)
    data = diff.to_dict()
    if as_json:
        click.echo(json.dumps(data, indent=2, sort_keys=True))
        return
    click.echo("\n".join(render(data, limit)))


@click.command("status")
@REPO_ARG
@STORE_OPT
@JSON_OPT
def status_cmd(repo: Path, store_dir: Path | None, as_json: bool) -> None:
    """Refs in the store, their manifests and counts, store size, work-tree freshness."""
    from ..query.status import describe_scores, store_status  # the read side: when it runs, not for `--help`

    data = run_command(as_json, store_status, repo, store_dir)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(f"store {data['store']} ({data['store_bytes'] / 1e6:.1f} MB, {data['objects']} objects)")
    if not data["refs"]:
        click.echo("  no index yet: run `codeagent build`")
    for r in data["refs"]:
        c = r["counts"]
        click.echo(f"  {r['ref']:<24} {r['manifest_id'][:12]}  commit {(r['commit'] or '-')[:12]}  "
                   f"{c['indexed']} indexed, {c['skipped']} skipped  [{r['freshness']['state']}]")
        if r.get("error"):
            click.echo(f"    {r['error']['message']}" + (f": {r['error']['hint']}" if r['error']['hint'] else ""))
        if r.get("search_quality"):
            click.echo(f"    {describe_scores(r['search_quality'])}")
    fresh = data.get("worktree")
    if fresh:
        click.echo(f"work tree: {fresh['state']}"
                   + (f" ({fresh['changed_count']} files differ from the newest manifest)"
                      if fresh["state"] == "stale" else ""))
