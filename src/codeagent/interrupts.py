"""Ctrl-C in a command's process: raised once as KeyboardInterrupt at a point where Python can
unwind it, so the CLI answers exit 130 and one line. Python runs a signal handler between any
two bytecodes, and some of those are in callbacks whose exceptions it prints and drops (fork
hooks, weakref callbacks, finalizers): `held` keeps it out of a fork, `install` catches the
dropped ones and delivers them again."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator

INTERRUPTED_EXIT = 130  # 128 + SIGINT, as shells report a Ctrl-C
REDELIVER_SECONDS = 0.02  # after a dropped interrupt: long enough for the dropping callback to return

_interrupted = False
_in_hook = False
_command = "command"
_reported = False
_previous_hook = sys.unraisablehook


def interrupted() -> bool:
    """Whether this process received a Ctrl-C since `install`."""
    return _interrupted


def report() -> None:
    """Write the interrupted command's one line, once."""
    global _reported
    if not _reported:
        _reported = True
        sys.stderr.write(f"interrupted: codeagent {_command} stopped; the store is consistent (an "
                         "interrupted build leaves the previous index current)\n")
        sys.stderr.flush()


def _on_sigint(signum: int, frame: object) -> None:
    global _interrupted
    _interrupted = True
    if _in_hook:  # inside our own unraisable hook: raising here would be dropped again
        _redeliver()
        return
    raise KeyboardInterrupt


def _redeliver() -> None:
    import _thread

    timer = threading.Timer(REDELIVER_SECONDS, _thread.interrupt_main)
    timer.daemon = True
    try:
        timer.start()
    except RuntimeError:  # interpreter shutdown: no new threads; the caller's exit says 130
        pass


def _unraisable(info: sys.UnraisableHookArgs) -> None:
    """A KeyboardInterrupt raised by our handler inside a callback whose exceptions Python
    drops (fork hooks, weakref callbacks, __del__): no traceback; deliver it again shortly,
    outside the callback."""
    global _in_hook
    _in_hook = True
    try:
        if not (_interrupted and isinstance(info.exc_value, KeyboardInterrupt)):
            _previous_hook(info)
            return
        _redeliver()
    finally:
        _in_hook = False


def _record(signum: int, frame: object) -> None:
    global _interrupted
    _interrupted = True


def record_until_installed() -> None:
    """Until `install`: a Ctrl-C is recorded, not raised (main thread only), so a caller that
    installs later can end as an interrupted command instead of wherever it landed."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _record)


def install() -> None:
    """Take over Ctrl-C in this process (main thread only; elsewhere nothing changes)."""
    global _previous_hook
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)
        if sys.unraisablehook is not _unraisable:
            _previous_hook, sys.unraisablehook = sys.unraisablehook, _unraisable


def exit_on_sigint(command: str) -> None:
    """For the wind-down after `command` ran (threads joined, atexit handlers, streams
    flushed): a Ctrl-C then ends the process at once, exit 130 and the one line, not a
    traceback from wherever it lands."""
    global _command
    _command = command
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _exit_now)


def _exit_now(signum: int, frame: object) -> None:
    report()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(INTERRUPTED_EXIT)


@contextlib.contextmanager
def held() -> Iterator[None]:
    """Hold Ctrl-C for the duration (a process pool forking its workers), raise it after.

    Blocked in this thread, so children forked here start with it blocked (`ignore_in_worker`
    ignores it before unblocking); recorded, not raised, if another thread took it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: caught.append(signum))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending Ctrl-C lands in `caught`
        signal.signal(signal.SIGINT, previous)
        if caught:
            signal.raise_signal(signal.SIGINT)  # to the handler held back


def ignore_in_worker() -> None:
    """In a pool worker forked under `held`: Ctrl-C is the parent's to handle, once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
