"""`codeagent install` and `codeagent doctor`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import JSON_OPT, run_command
from ..errors import InvalidParameter
from ..clients.registry import CLIENTS, SCOPES


@click.command("install")
@click.argument("client_name", metavar="CLIENT", required=False)
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Repository the server answers for (default: the current directory).")
@click.option("--scope", type=click.Choice(SCOPES), default=None,
              help="The client's per-user or project settings file (default: project when the "
                   "client has one).")
@click.option("--watch", is_flag=True, help="Serve with --watch: the index follows edits.")
@click.option("--dry-run", is_flag=True, help="Print the diff; write nothing.")
@click.option("--uninstall", is_flag=True, help="Remove codeagent's entry (and its hooks).")
@click.option("--hooks", is_flag=True,
              help="Also install the grep/glob hooks (claude-code, gemini, codex).")
@click.option("--list", "list_clients", is_flag=True, help="List the clients and their state.")
@JSON_OPT
def install_cmd(client_name: str | None, repo: Path | None, scope: str | None, watch: bool,
                dry_run: bool, uninstall: bool, hooks: bool, list_clients: bool, as_json: bool) -> None:
    """Configure an MCP client (Claude Code, Cursor, VS Code, Codex, ...) to start codeagent.

    Merges codeagent's server into the client's own settings file, keeping every other server
    and comment; the old file is kept as FILE.codeagent-backup. A second run changes nothing."""
    from ..clients.setup import install, listing  # deferred: `codeagent --help` imports no client code

    if list_clients:
        rows = run_command(as_json, listing, repo or Path.cwd())
        _print_list(rows, as_json)
        return
    if not client_name:
        run_command(as_json, _missing_client)
    changes = run_command(as_json, install, client_name, scope, repo, watch=watch,
                          dry_run=dry_run, uninstall=uninstall, hooks=hooks)
    if as_json:
        click.echo(json.dumps([{**c.to_dict(), "diff": c.diff()} if dry_run else c.to_dict()
                               for c in changes], indent=2))
        return
    for c in changes:
        if dry_run:
            click.echo(c.diff() or f"{c.path}: no change")
        verb = {"unchanged": "unchanged (already configured)" if not uninstall else "unchanged (not configured)"}
        done = verb.get(c.action, c.action) if not dry_run or c.action == "unchanged" else f"would be {c.action}"
        click.echo(f"{CLIENTS[c.client].title} {c.what} ({c.scope}): {done}: {c.path}")
    if hooks and client_name == "codex" and not uninstall:
        click.echo(CODEX_TRUST)


# developers.openai.com/codex/hooks: "Non-managed command hooks must be reviewed and trusted
# before they run"; a new or changed hook is skipped, silently, until then.
CODEX_TRUST = ("Codex runs a new or changed hook only once you trust it: run /hooks in Codex and "
               "trust the codeagent hook (a project's hooks load only in a trusted project).")


def _missing_client() -> None:
    raise InvalidParameter("name a client, or pass --list",
                           hint=f"clients: {', '.join(CLIENTS)}")


def _print_list(rows: list[dict], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    for r in rows:
        click.echo(f"{r['client']:<15} {r['title']:<18} {r['state']:<15} {r['scope']:<8} "
                   f"{r['format']:<6} {r['path']}")


@click.command("doctor")
@click.argument("client_name", metavar="[CLIENT]", required=False)
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="The project whose settings to check (default: the current directory).")
@click.option("--scope", type=click.Choice(SCOPES), default=None)
@JSON_OPT
def doctor_cmd(client_name: str | None, repo: Path | None, scope: str | None, as_json: bool) -> None:
    """Start the server a client is configured with, as the client would, and check it over MCP.

    Exit codes: 0 healthy, 4 not configured, 5 index not built, 31 settings file unreadable,
    32 the command is missing or does not answer MCP (or an old protocol), 33 stale index."""
    from ..clients.doctor import doctor, exit_code  # deferred: the MCP SDK's client

    reports = run_command(as_json, doctor, client_name, (repo or Path.cwd()).resolve(), scope)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in reports], indent=2))
    for r in reports:
        head = f"{CLIENTS[r.client].title} ({r.scope}) {r.path}"
        if not as_json:
            click.echo(head)
            click.echo(f"  command:  {' '.join(r.command)}")
            if r.protocol:
                click.echo(f"  server:   {r.server}, MCP {r.protocol}, {r.tools} tools")
            if r.index:
                click.echo(f"  index:    {r.index}, {r.freshness or 'freshness unknown'}")
        if r.problem:
            click.echo(f"  problem:  {r.problem['message']}" + (
                f"\n  hint:     {r.problem['hint']}" if r.problem.get("hint") else ""),
                err=as_json)
        elif not as_json:
            click.echo("  ok")
    sys.exit(exit_code(reports))
