"""The `codeagent` command. Commands are thin: parse arguments, call one library function.

Each command group is a module of this folder (build.py: build/verify/repair/gc, search.py:
search/show/callers/callees/refs, status.py, serve.py, ...), imported only when invoked, so a
no-op `codeagent build` does not pay for importing DuckDB, pyarrow or the MCP SDK.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

import click

from .. import __version__, interrupts
from ..errors import CodeagentError

# name -> "module:function", named rather than imported: a command's module, and the library
# it drives, is imported only when it runs (tests/core/test_layering.py).
# Importing them all up front took a no-op `codeagent build` from 101 to 158 ms of user CPU
# (+47 ms wall; hyperfine, a 5-file repository): the read side's modules, mostly.
COMMANDS = {
    "build": "codeagent.cli.build:build_cmd",
    "status": "codeagent.cli.status:status_cmd",
    "verify": "codeagent.cli.build:verify_cmd",
    "repair": "codeagent.cli.build:repair_cmd",
    "gc": "codeagent.cli.build:gc_cmd",
    "diff": "codeagent.cli.status:diff_cmd",
    "search": "codeagent.cli.search:search_cmd",
    "similar": "codeagent.cli.similar:similar_cmd",
    "show": "codeagent.cli.search:show_cmd",
    "callers": "codeagent.cli.search:callers_cmd",
    "callees": "codeagent.cli.search:callees_cmd",
    "refs": "codeagent.cli.search:refs_cmd",
    "impact": "codeagent.cli.impact:impact_cmd",
    "serve": "codeagent.cli.serve:serve_cmd",
    "publish": "codeagent.cli.replicate:publish_cmd",
    "sync": "codeagent.cli.replicate:sync_cmd",
    "bundle": "codeagent.cli.replicate:bundle_cmd",
    "eval": "codeagent.cli.eval:eval_cmd",
    "daemon": "codeagent.cli.daemon:daemon_cmd",
    "watch": "codeagent.cli.watch:watch_cmd",
    "install": "codeagent.cli.install:install_cmd",
    "doctor": "codeagent.cli.install:doctor_cmd",
    "context": "codeagent.cli.context:context_cmd",
    "hook": "codeagent.cli.context:hook_cmd",
    "org": "codeagent.cli.org:org_cmd",
}


REPO_ARG = click.argument("repo", type=click.Path(path_type=Path), default=".", required=False)
STORE_OPT = click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
                         help="Store directory (default: REPO/.codeagent).")
JSON_OPT = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _test_faults() -> None:
    """The process edge's one test-only entry point: the CODEAGENT_TEST_* variables a test
    process sets become the store's fault seam (store/faults.py: from_environment)."""
    if "codeagent.store.faults" in sys.modules or any(k.startswith("CODEAGENT_TEST_") for k in os.environ):
        from ..store import faults  # the store's imports (~35 ms) are not for `--help` or a daemon's client

        faults.from_environment()


def _names_a_repository(arg: str) -> bool:
    path = Path(arg)
    return path.is_dir() and ((path / ".git").exists() or (path / ".codeagent").exists())


class RefListOption(click.Option):
    """The one grammar of a list of refs (`gc --keep-refs`, `bundle --ref`): the option takes
    every argument after it up to the next option (`--keep-refs main v1.11.0`) and may be
    repeated; an argument that is a repository directory ends the list (it is REPO)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, multiple=True, **kwargs)

    def add_to_parser(self, parser, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            parsed = parser._long_opt.get(name) or parser._short_opt.get(name)  # click's parser
            if parsed is not None:
                take_one = parsed.process

                def take_all(value, state, take_one=take_one) -> None:
                    take_one(value, state)
                    while (state.rargs and not state.rargs[0].startswith("-")
                           and not _names_a_repository(state.rargs[0])):
                        take_one(state.rargs.pop(0), state)

                parsed.process = take_all


class LazyGroup(click.Group):
    def main(self, *args, **kwargs):
        """Click's main; a Ctrl-C while click parses the arguments is held for `invoke`, so it
        ends the command as any other does, not with click's "Aborted!" and exit 1 (a watcher
        cancels a build as soon as its process is forked)."""
        interrupts.record_until_installed()
        _test_faults()
        return super().main(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        """Run the command; a Ctrl-C anywhere (DuckDB turns it into its own error, pool
        workers ignore it, a callback may drop it) exits 130 with one line, no traceback."""
        try:
            interrupts.install()
            if interrupts.interrupted():  # held since `main`
                raise KeyboardInterrupt
            result = super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException):
            raise
        except BaseException:
            if not interrupts.interrupted():
                raise
        else:
            if not interrupts.interrupted():  # a Ctrl-C dropped and not yet delivered again
                return result
        finally:  # what follows is the process's wind-down
            interrupts.exit_on_sigint(ctx.invoked_subcommand or "command")
        interrupts.report()
        ctx.exit(interrupts.INTERRUPTED_EXIT)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._load(name)

    def _load(self, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        return getattr(importlib.import_module(module_name), attr)


def child_command(*args: str) -> tuple[list[str], str]:
    """(argv, working directory) of a `codeagent` child process. The directory is the one the
    package is installed in: `python -m` puts the working directory first on sys.path, and a
    repository's own modules (the stdlib corpus' json/, a project's codeagent/) must never
    shadow the ones codeagent imports."""
    return ([sys.executable, "-m", "codeagent", *args],
            str(Path(__file__).resolve().parents[2]))


def emit_error(exc: CodeagentError, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps({"error": exc.to_dict()}, indent=2))
    click.echo(f"error: {exc}", err=True)


def run_command(as_json: bool, fn, *args, **kwargs):
    """Call a library function; turn our errors into a message and a documented exit code."""
    try:
        return fn(*args, **kwargs)
    except CodeagentError as exc:
        emit_error(exc, as_json)
        sys.exit(exc.exit_code)


def store_for(repo: Path, store_dir: Path | None):
    """(the Store of `repo`, the repository's top directory): `store_dir` or TOP/.codeagent."""
    from ..sources import git_toplevel  # git helpers (6-25 ms): only commands that open a store
    from ..store import Store

    top = git_toplevel(repo.resolve()) if repo.exists() else None
    return Store(store_dir or (top or repo.resolve()) / ".codeagent"), (top or repo.resolve())


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="codeagent")
def main() -> None:
    """codeagent: an incremental, content-addressed code index served over MCP.

    Build an index with `codeagent build`, inspect it with `codeagent status`, query it with
    `codeagent search`, serve it to agents with `codeagent serve`. Exit codes: 0 ok,
    1 unexpected error, 2 invalid argument, 3 not a repository, 4 not found, 5 no index,
    6 incompatible index, 7 corrupt store, 8 store locked, 9 write failed, 14 remote failed,
    16 out of the memory budget, 20 eval regression, 31 client settings unreadable (install),
    32 client check failed, 33 stale index (doctor), 130 interrupted (Ctrl-C).
    """
