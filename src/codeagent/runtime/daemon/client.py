"""The caller's side: hand a command to a running daemon (arguments, working directory,
environment, standard streams), relay signals, return its exit; or run it in-process."""

from __future__ import annotations

import os
import signal
import socket
import sys
import time

from .protocol import (DEFAULT_IDLE_TIMEOUT, SUPPORTED, DaemonError, Reader, debug, private_dir,
                       send, socket_dir, socket_path)
from .run import run_cli, wind_down
from .trust import trusted

NOT_FORWARDED = ("daemon", "serve", "watch")  # long-lived: in-process


FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def _request(message: dict, timeout: float = 5.0) -> dict | None:
    """One control request to a running daemon; None when none answers."""
    if not trusted(socket_path()):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path())
            send(sock, message)
            return Reader(sock).read()
        except OSError:
            return None


def status() -> dict | None:
    """The running daemon's pid, start time, commands served and socket; None if none runs."""
    reply = _request({"control": "status"})
    return reply.get("status") if reply else None


def stop() -> bool:
    """Ask the daemon to exit once its running commands finish; False if none was running."""
    return _request({"control": "stop"}) is not None


def spawn(idle_timeout: float = DEFAULT_IDLE_TIMEOUT, wait: float = 0.0) -> dict | None:
    """Start a detached daemon; with `wait`, poll up to that many seconds for it to answer."""
    import subprocess

    private_dir(socket_dir())
    log = open(socket_path()[:-len(".sock")] + ".log", "ab")
    with log:
        subprocess.Popen([sys.executable, "-m", "codeagent", "daemon", "run",
                          "--idle-timeout", str(idle_timeout)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         env={**os.environ, "CODEAGENT_DAEMON": "0"}, cwd="/")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = status()
        if found:
            return found
        time.sleep(0.05)
    return None


def _spawn_quietly() -> None:
    try:
        spawn()
        debug("started a daemon")
    except (OSError, DaemonError) as exc:
        debug(f"could not start a daemon: {exc}")


def _command_name(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _prog_name() -> str:
    """The program name click shows in usage lines, as it would detect it in this process."""
    main_module = sys.modules.get("__main__")
    if getattr(main_module, "__package__", None) == "codeagent":
        return "python -m codeagent"
    return os.path.basename(sys.argv[0]) or "codeagent"


def _std_fds() -> list[int]:
    """fds 0-2 to hand over; a closed one is replaced by /dev/null, as the child would see."""
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def forward(argv: list[str], autostart: bool = False) -> int | None:
    """Run `codeagent argv` in the daemon; its exit status, or None when no daemon took the
    command (none running, stale code, unreadable cwd) and it must run in-process."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    sock = _connect(socket_path(), autostart)
    if sock is None:
        return None
    with sock:
        umask = os.umask(0o022)
        os.umask(umask)
        stream = sys.stdout
        request = {"argv": argv, "cwd": cwd, "env": dict(os.environ), "umask": umask,
                   "prog": _prog_name(),
                   "encoding": getattr(stream, "encoding", None) or "utf-8",
                   "errors": getattr(stream, "errors", None) or "strict"}
        try:
            send(sock, request, _std_fds())
        except OSError as exc:
            debug(f"could not send the command: {exc}")
            return None

        def relay(signum: int, _frame: object) -> None:
            try:
                send(sock, {"signal": signum})
            except OSError:
                pass

        previous = {s: signal.signal(s, relay) for s in FORWARDED_SIGNALS}
        try:
            return _await_exit(Reader(sock), previous)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def _connect(path: str, autostart: bool) -> socket.socket | None:
    """A connection to the daemon's socket at `path` when it is ours; else None (and, with
    `autostart`, a daemon started for the next command)."""
    if not trusted(path):
        debug(f"no daemon socket of ours at {path}")
        if autostart:
            _spawn_quietly()
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        debug(f"no daemon at {path}: {exc}")
        sock.close()
        if autostart:
            _spawn_quietly()
        return None
    return sock


def _await_exit(reader: Reader, previous: dict) -> int | None:
    """Follow the daemon's messages about a forwarded command to its end: the exit status
    (after dying of the command's signal, when it died of one), or None when the daemon
    declined it before it started (`previous`: the signal handlers to restore first)."""
    started = False
    while True:
        try:
            message = reader.read()
        except InterruptedError:
            continue
        except OSError:
            message = None
        debug(f"message {message}")
        if message is None:
            if not started:
                return None
            sys.stderr.write("error: the codeagent daemon went away while running the "
                             "command; run it again (CODEAGENT_DAEMON=0 bypasses the daemon)\n")
            return 1
        if "stale" in message:  # it stops; start its replacement on the new code
            _spawn_quietly()
            return None
        if "foreign" in message:
            debug(f"the daemon cannot run this command as this process would: {message['foreign']}")
            return None
        if "running" in message:
            started = True
        elif "signal" in message:  # die the way the command died
            signum = int(message["signal"])
            for s, handler in previous.items():
                signal.signal(s, handler)
            try:
                signal.signal(signum, signal.SIG_DFL)
            except (OSError, ValueError):
                pass  # SIGKILL, SIGSTOP: their disposition is already the default
            os.kill(os.getpid(), signum)
            return 128 + signum
        elif "exit" in message:
            return int(message["exit"])


def main() -> None:
    """The `codeagent` entry point: through the daemon when one runs, else in-process."""
    argv = sys.argv[1:]
    mode = os.environ.get("CODEAGENT_DAEMON", "")
    command = _command_name(argv)
    if mode != "0" and SUPPORTED and command not in NOT_FORWARDED:
        code = forward(argv, autostart=mode == "1")
        if code is not None:
            sys.stdout.flush()
            sys.exit(code)
    if command == "serve":  # a long-lived server with its own shutdown
        from ...cli import main as cli_main  # click (20-50 ms): not for a command the daemon runs

        cli_main()
        return
    code = run_cli()
    wind_down()
    os._exit(code)
