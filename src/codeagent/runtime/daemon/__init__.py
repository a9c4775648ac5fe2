"""Resident mode: a per-user server that has already imported codeagent and its heavy
dependencies (DuckDB, pyarrow, numpy, tree-sitter) and forks a fresh child for each command.

A fresh `codeagent build` spends about 0.35 s importing before it does any work; through the
daemon a command starts in a few milliseconds. Each command still runs in a process of its
own, forked from the warm server, with the caller's arguments, working directory,
environment, umask and standard streams (passed as file descriptors): output, progress bars,
exit codes and signals behave as without the daemon.

    codeagent daemon start     # from now on every codeagent command goes through it
    codeagent daemon status
    codeagent daemon stop

`CODEAGENT_DAEMON=0` never uses a daemon; `CODEAGENT_DAEMON=1` also starts one when none
runs (that command itself runs in-process). `codeagent serve` and `codeagent daemon` always
run in-process. The server exits after its idle timeout, and as soon as any of its loaded
code changes on disk (that command then runs in-process). One server per user and Python
installation; its socket lives in `CODEAGENT_DAEMON_DIR`, else `$XDG_RUNTIME_DIR/codeagent`,
else `/tmp/codeagent-<uid>` (created 0700; a directory owned by another user is refused).

The package imports only the standard library: the client side runs before anything else.
protocol.py is the wire, trust.py whom it serves, client.py the caller's side, server.py and
child.py the resident process, run.py running the CLI in a process.
"""

from .client import forward, main, spawn, status, stop
from .protocol import DEFAULT_IDLE_TIMEOUT, SUPPORTED, DaemonError, socket_path

__all__ = ["DEFAULT_IDLE_TIMEOUT", "SUPPORTED", "DaemonError", "forward", "main", "socket_path",
           "spawn", "status", "stop"]
