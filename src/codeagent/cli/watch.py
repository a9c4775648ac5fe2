"""`codeagent watch`: keep the work-tree index current while files change (see watch.py)."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import click

from . import REPO_ARG, STORE_OPT, run_command


@click.command("watch")
@REPO_ARG
@STORE_OPT
@click.option("--quiet-ms", type=click.IntRange(10, 60_000), default=100, show_default=True,
              help="Build once no file has changed for this long.")
@click.option("--max-wait-ms", type=click.IntRange(10, 600_000), default=2000, show_default=True,
              help="Build at the latest this long after a batch's first change, even while "
                   "files keep changing.")
@click.option("--no-initial-build", is_flag=True,
              help="Do not build at start (by default a first build catches up with changes "
                   "made while nothing watched).")
@click.option("--json", "as_json", is_flag=True,
              help="One JSON event per line on stdout (watching, changes, build_started, "
                   "build_done, build_failed) instead of progress lines on stderr.")
@click.option("--stop-on-stdin-eof", is_flag=True, hidden=True,
              help="Stop when stdin closes (how `serve --watch` ties the watcher to itself).")
def watch_cmd(repo: Path, store_dir: Path | None, quiet_ms: int, max_wait_ms: int,
              no_initial_build: bool, as_json: bool, stop_on_stdin_eof: bool) -> None:
    """Rebuild REPO's work-tree index whenever its files change, until Ctrl-C (exit 130).

    Each build is `codeagent build --worktree` in a process of its own, so readers (search,
    `codeagent serve`) keep answering from the newest complete index while it runs and
    switch to the new one when it is swapped in. Changes are batched: a build starts once
    no file changed for --quiet-ms, and changes made during a build form the next batch (a
    branch switch is one build, not one per file). The store, .git (but a branch switch),
    files excluded by .codeagentignore and untracked files ignored by .gitignore start no
    build. A failed build is reported and watching goes on; the previous index stays current.

    \b
    Exit codes: 0 stopped, 2 invalid argument, 3 not a directory, 130 interrupted (Ctrl-C).
    """
    from ..indexer.watch import WatchOptions, describe, watch  # the build side: when it runs, not for `--help`

    stop = threading.Event()
    if stop_on_stdin_eof:
        threading.Thread(target=_stop_on_eof, args=(stop,), daemon=True).start()
    opts = WatchOptions(repo, store_dir, quiet_ms, max_wait_ms, stop, not no_initial_build)
    run_command(as_json, watch, opts, _json_line if as_json else _progress_line(describe))


def _json_line(event: dict) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def _progress_line(describe):
    def show(event: dict) -> None:
        line = describe(event)
        if line:
            click.echo(f"codeagent watch: {line}", err=True)
    return show


def _stop_on_eof(stop: threading.Event) -> None:
    while sys.stdin.buffer.read(4096):
        pass
    stop.set()
