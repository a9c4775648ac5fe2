"""Running the CLI in this process and leaving it cleanly: in the caller's own process, or in
the child the daemon forked for it."""

from __future__ import annotations

import sys

def run_cli(args: list[str] | None = None, prog_name: str | None = None) -> int:
    """Run the click CLI; its exit status."""
    try:
        from ...cli import main as cli_main  # click (20-50 ms): not for a command the daemon runs

        cli_main(args=args, prog_name=prog_name)
        return 0
    except SystemExit as exc:
        return exit_code(exc.code)
    except KeyboardInterrupt:  # a Ctrl-C while starting, before the CLI handles it
        sys.stderr.write("interrupted: codeagent stopped while starting; nothing was changed\n")
        return 130


def wind_down() -> None:
    """What an interpreter exit does before its finalization: join non-daemon threads, run
    atexit handlers, flush the streams. The caller then calls os._exit, so daemon threads are
    not unwound and extension modules are not torn down: a daemon thread unwound inside DuckDB
    at shutdown aborts the process with "terminate called without an active exception"
    (duckdb/duckdb#13904; seen once in a full test run, on `codeagent diff`)."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    flush()


def exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
