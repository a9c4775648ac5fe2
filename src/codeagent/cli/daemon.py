"""`codeagent daemon start|stop|status|run`: the resident server (see codeagent.runtime.daemon)."""

from __future__ import annotations

import json
import time

import click

from ..runtime import daemon
from . import JSON_OPT
from ..runtime.daemon.server import serve_forever

IDLE_OPT = click.option("--idle-timeout", type=float, default=daemon.DEFAULT_IDLE_TIMEOUT,
                        show_default=True, metavar="SECONDS",
                        help="Exit after this long without a command.")


def _describe(info: dict) -> str:
    up = time.time() - info["started"]
    stale = " (stale: codeagent changed on disk; it stops at the next command)" if info["stale"] else ""
    return (f"daemon running{stale}: pid {info['pid']}, up {up:.0f} s, {info['served']} commands "
            f"served, {info['commands_running']} running\n  socket: {info['socket']}")


@click.group("daemon")
def daemon_cmd() -> None:
    """A resident server that keeps codeagent's libraries loaded: commands start in
    milliseconds instead of ~0.4 s. While it runs, every codeagent command (except `serve`)
    goes through it, with your arguments, directory, environment and terminal.

    CODEAGENT_DAEMON=0 bypasses it; CODEAGENT_DAEMON=1 starts it on first use. It exits after
    its idle timeout, or when codeagent's code on disk changes."""


@daemon_cmd.command("start")
@IDLE_OPT
@JSON_OPT
def start_cmd(idle_timeout: float, as_json: bool) -> None:
    """Start the daemon in the background (nothing happens if one already runs)."""
    if not daemon.SUPPORTED:
        raise click.ClickException("the daemon needs a POSIX system (fork, descriptor passing)")
    info = daemon.status()
    if info is not None and info["stale"]:  # its code changed on disk: replace it
        daemon.stop()
        info = None
    already = info is not None
    if info is None:
        try:
            info = daemon.spawn(idle_timeout, wait=30.0)
        except (OSError, daemon.DaemonError) as exc:
            raise click.ClickException(f"could not start the daemon: {exc}") from exc
    if info is None:
        raise click.ClickException(
            f"the daemon did not answer within 30 s; see {daemon.socket_path()[:-5]}.log")
    if as_json:
        click.echo(json.dumps({"already_running": already, **info}, indent=2))
    else:
        click.echo(("already " if already else "") + _describe(info))


@daemon_cmd.command("stop")
@JSON_OPT
def stop_cmd(as_json: bool) -> None:
    """Stop the daemon; commands it is running finish first."""
    stopped = daemon.stop()
    if as_json:
        click.echo(json.dumps({"stopped": stopped}))
    else:
        click.echo("daemon stopping" if stopped else "no daemon running")


@daemon_cmd.command("status")
@JSON_OPT
def status_cmd(as_json: bool) -> None:
    """Whether a daemon runs, its pid, uptime and commands served. Exit code 0 when one
    runs, 1 when none does."""
    info = daemon.status()
    if as_json:
        click.echo(json.dumps({"running": info is not None, **(info or {})}, indent=2))
    else:
        click.echo(_describe(info) if info else f"no daemon running (socket {daemon.socket_path()})")
    if info is None:
        raise SystemExit(1)


@daemon_cmd.command("run", hidden=True)
@IDLE_OPT
def run_cmd(idle_timeout: float) -> None:
    """Run the daemon in the foreground (what `start` launches)."""
    try:
        serve_forever(idle_timeout)
    except daemon.DaemonError as exc:
        raise click.ClickException(str(exc)) from exc
