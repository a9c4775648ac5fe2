"""In the child the server forked for one command: become the caller's process (streams,
directory, environment, signals), run the command, report its exit."""

from __future__ import annotations

import io
import os
import signal
import socket
import sys

from .protocol import Reader, send
from .run import flush, run_cli, wind_down

IN_CHILD = False  # True in a command's process forked by the server (runtime/warm.py asks)

def run_child(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the forked child: become the caller's command, run it, exit with its status."""
    global IN_CHILD
    IN_CHILD = True
    code = 1
    try:
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        _std_streams(request["encoding"], request["errors"],
                     bool(request["env"].get("PYTHONUNBUFFERED")))
        sys.argv = ["codeagent", *request["argv"]]
        _watch_caller(conn)
        try:
            code = run_cli(request["argv"], request.get("prog") or "codeagent")
        except KeyboardInterrupt:
            flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        wind_down()
    finally:
        flush()
        try:  # the caller may go now; the server's later report of this exit is then ignored
            send(conn, {"exit": code})
        except OSError:
            pass
        os._exit(code)


def _std_streams(encoding: str, errors: str, unbuffered: bool) -> None:
    """Text streams on fds 0-2 as a fresh interpreter would make them for the caller
    (`unbuffered`: its PYTHONUNBUFFERED)."""
    def text(fd: int, mode: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        tty = raw.isatty()
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding,
                                errors="backslashreplace" if fd == 2 else errors,
                                line_buffering=tty or fd == 2,
                                write_through=fd == 2 or (unbuffered and mode == "w"))

    sys.stdin, sys.stdout, sys.stderr = text(0, "r"), text(1, "w"), text(2, "w")
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _watch_caller(conn: socket.socket) -> None:
    """Relay the caller's signals to this process; die with it if it goes away."""
    import threading

    conn.settimeout(None)  # the server's accept timeout must not end the watch

    def watch() -> None:
        reader = Reader(conn)
        while True:
            try:
                message = reader.read()
            except (OSError, ValueError):
                message = None
            if message is None:
                os.kill(os.getpid(), signal.SIGKILL)
                return
            if "signal" in message:
                os.kill(os.getpid(), int(message["signal"]))

    threading.Thread(target=watch, name="codeagent-caller", daemon=True).start()
