"""Test-only fault hooks of the store's write path. The reliability suites (tests/reliability)
set these environment variables; nothing else may:

CODEAGENT_TEST_NONATOMIC=1  write in place (no temp file, no rename) with a pause mid-write:
    the torn-write writer the crash harness must catch (its negative control).
CODEAGENT_TEST_FAULT=ERRNO[@N|@SUBDIR]  fail store writes with ERRNO (ENOSPC, EIO...) as a
    full or failing disk would: every write, writes number N and later of this process, or
    writes under one store subdirectory (objects, actions, refs, cache).
CODEAGENT_TEST_KILL_AT=N  SIGKILL this process at step N of its store operation (a write about
    to be renamed into place, a delete, an assembly step): the crash harness kills at a point
    measured in progress, not in wall time, so a slow or loaded machine kills mid-way as often.
CODEAGENT_TEST_KILL_SIGNAL=INT  send that signal at step N instead (a Ctrl-C at a known step).
CODEAGENT_TEST_STEPS=FILE  append each step's name to FILE (how many steps an operation has).
CODEAGENT_TEST_INT_AT_FORK=N  send SIGINT to this process's group (as a terminal's Ctrl-C) from
    inside its Nth os.fork, in the parent among the fork's hooks (logging's run there), while
    the child just forked starts: a Ctrl-C landed in a process pool's start-up.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from pathlib import Path

_fault_writes = 0
_steps = (0, 0)  # (pid, steps taken): a forked child counts its own
_forks = 0


def nonatomic() -> bool:
    return os.environ.get("CODEAGENT_TEST_NONATOMIC") == "1"


def injected_fault(path: Path | str) -> OSError | None:
    global _fault_writes
    spec = os.environ.get("CODEAGENT_TEST_FAULT")
    if not spec:
        return None
    _fault_writes += 1
    name, _, where = spec.partition("@")
    code = getattr(errno, name, errno.EIO)
    if not where or (where.isdigit() and _fault_writes >= int(where)) or where in Path(path).parts:
        return OSError(code, os.strerror(code), str(path))
    return None


def write_in_place(path: Path | str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        time.sleep(0.05)  # a slow disk: widens the torn window
        fh.write(data[len(data) // 2:])


def step(what: str) -> None:
    """One step of a store operation: counted, logged and killed at under test; else nothing."""
    global _steps
    kill_at, log = os.environ.get("CODEAGENT_TEST_KILL_AT"), os.environ.get("CODEAGENT_TEST_STEPS")
    if not (kill_at or log):
        return
    pid = os.getpid()
    _steps = (pid, (_steps[1] if _steps[0] == pid else 0) + 1)
    if log:
        with open(log, "a") as fh:
            fh.write(f"{what}\n")
    if kill_at and _steps[1] == int(kill_at):
        os.kill(pid, getattr(signal, "SIG" + os.environ.get("CODEAGENT_TEST_KILL_SIGNAL", "KILL")))


def _int_at_fork() -> None:
    global _forks
    _forks += 1
    if _forks == int(os.environ["CODEAGENT_TEST_INT_AT_FORK"]):
        pid = os.getpid()
        if os.getpgrp() == pid:  # our own group (a new session): never the test runner's
            os.killpg(pid, signal.SIGINT)
        else:
            os.kill(pid, signal.SIGINT)


if os.environ.get("CODEAGENT_TEST_INT_AT_FORK"):
    os.register_at_fork(after_in_parent=_int_at_fork)
