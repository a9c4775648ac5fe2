"""`codeagent context` (a task's context within a token budget) and `codeagent hook` (what
an agent's hooks run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import run_command
from .search import _index_options, _open

HOOK_CLIENTS = ("claude-code", "gemini", "codex")


@click.command("context")
@click.argument("task")
@click.option("--budget", type=click.IntRange(200, 200_000), default=8000, show_default=True,
              help="Tokens the pack may use (counted with o200k_base when bpe-openai is "
                   "installed, else estimated).")
@_index_options
def context_cmd(task: str, budget: int, repo: Path, store_dir: Path | None, ref: str | None,
                as_json: bool) -> None:
    """The files and symbols that matter for TASK, most relevant first, each at the detail the
    budget allows (its relevant spans, the whole file, its outline, or its path and why)."""
    from ..query.context import build_context  # deferred: only this command counts tokens

    def run():
        with _open(repo, store_dir, ref) as view:
            return build_context(view, task, budget)

    pack = run_command(as_json, run)
    if as_json:
        click.echo(json.dumps(pack.to_dict(), indent=2))
        return
    click.echo(pack.render())
    details = {d: sum(1 for i in pack.items if i.detail == d) for d in ("file", "spans", "outline", "path")}
    click.echo(f"\n-- {len(pack.items)} of {pack.candidates} candidates ("
               + ", ".join(f"{n} {d}" for d, n in details.items() if n)
               + f") · {pack.tokens} of {pack.budget} tokens ({pack.tokenizer})")


@click.command("hook")
@click.argument("client_name", metavar="CLIENT", type=click.Choice(HOOK_CLIENTS))
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Repository to answer for (default: the event's cwd).")
def hook_cmd(client_name: str, repo: Path | None) -> None:
    """Answer one hook event read from stdin (installed by `codeagent install CLIENT
    --hooks`). Prints nothing, and exits 0, when there is nothing to add or anything fails."""
    from ..query.hooks import hook_answer  # deferred, as context_cmd's
    from ..runtime.warm import ask_warm

    try:
        event = json.loads(sys.stdin.read() or "{}")
        answer = hook_answer(event, repo, client_name, ask_warm) if isinstance(event, dict) else None
    except (ValueError, OSError):
        answer = None
    if answer:
        click.echo(json.dumps(answer))
