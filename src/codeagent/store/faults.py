"""Fault injection: the seam the tests set on the store, as restic's overridable `tempFile`.

Product code asks the installed `Faults` at its write points and steps (`step`,
`injected_fault`, `nonatomic`, `write_in_place`, `overlay_max_bytes`); the default one does
nothing and reads nothing. A test in the same process installs its own
(`faults.install(Faults(kill_at=1, kill_signal="INT"))`). A test that runs `codeagent` as a
process (the crash, interrupt and I/O-fault suites, the watcher's builds) cannot reach that
seam, so the process edge has one test-only entry point: `from_environment()`, called once by
the CLI's entry (`codeagent.cli.LazyGroup.main`: in-process, in a daemon's child and in a
watcher's forked build alike), and the only reader of these variables:

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
CODEAGENT_TEST_OVERLAY_MAX_BYTES=N  an overlay's size bound instead of OVERLAY_MAX_BYTES
    (indexer/assemble/overlay.py), so a test's small overlay passes it.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

ENVIRONMENT = {  # variable -> Faults field (from_environment)
    "CODEAGENT_TEST_NONATOMIC": "nonatomic", "CODEAGENT_TEST_FAULT": "fault",
    "CODEAGENT_TEST_KILL_AT": "kill_at", "CODEAGENT_TEST_KILL_SIGNAL": "kill_signal",
    "CODEAGENT_TEST_STEPS": "steps_log", "CODEAGENT_TEST_INT_AT_FORK": "int_at_fork",
    "CODEAGENT_TEST_OVERLAY_MAX_BYTES": "overlay_max_bytes",
}


@dataclass
class Faults:
    """What a test asks of the store's write path (the fields mirror the variables above)."""

    nonatomic: bool = False
    fault: str | None = None  # ERRNO[@N|@SUBDIR]
    kill_at: int | None = None
    kill_signal: str = "KILL"
    steps_log: str | None = None
    int_at_fork: int | None = None
    overlay_max_bytes: int | None = None
    from_environment: bool = False  # installed by from_environment(), not by a test in-process
    _writes: int = field(default=0, repr=False)
    _steps: tuple[int, int] = field(default=(0, 0), repr=False)  # (pid, steps): a fork counts its own
    _forks: int = field(default=0, repr=False)

    def injected_fault(self, path: Path | str) -> OSError | None:
        if not self.fault:
            return None
        self._writes += 1
        name, _, where = self.fault.partition("@")
        code = getattr(errno, name, errno.EIO)
        if not where or (where.isdigit() and self._writes >= int(where)) or where in Path(path).parts:
            return OSError(code, os.strerror(code), str(path))
        return None

    def step(self, what: str) -> None:
        if not (self.kill_at or self.steps_log):
            return
        pid = os.getpid()
        self._steps = (pid, (self._steps[1] if self._steps[0] == pid else 0) + 1)
        if self.steps_log:
            with open(self.steps_log, "a") as fh:
                fh.write(f"{what}\n")
        if self.kill_at and self._steps[1] == self.kill_at:
            os.kill(pid, getattr(signal, "SIG" + self.kill_signal))

    def at_fork(self) -> None:
        if not self.int_at_fork:
            return
        self._forks += 1
        if self._forks == self.int_at_fork:
            pid = os.getpid()
            if os.getpgrp() == pid:  # our own group (a new session): never the test runner's
                os.killpg(pid, signal.SIGINT)
            else:
                os.kill(pid, signal.SIGINT)


NONE = Faults()
_current = NONE
_fork_hook = False


def install(faults: Faults) -> Faults:
    """Make `faults` the store's seam for this process (and the children it forks); returns
    the one it replaces, for a test to put back."""
    global _current, _fork_hook
    previous, _current = _current, faults
    if faults.int_at_fork and not _fork_hook:  # os.register_at_fork has no unregister
        os.register_at_fork(after_in_parent=lambda: _current.at_fork())
        _fork_hook = True
    return previous


def from_environment(environ: Mapping[str, str] = os.environ) -> None:
    """The process edge's one read of the CODEAGENT_TEST_* variables (see above): installs what
    they ask for, else drops what an earlier command of this process (a daemon's, whose child
    inherits it) installed from its own environment. A seam a test installed in-process stays."""
    given = {ENVIRONMENT[name]: value for name, value in environ.items() if name in ENVIRONMENT and value}
    if not given:
        if _current.from_environment:
            install(NONE)
        return
    ints = ("kill_at", "int_at_fork", "overlay_max_bytes")
    install(Faults(**{key: (int(value) if key in ints else value == "1" if key == "nonatomic" else value)
                      for key, value in given.items()}, from_environment=True))


def nonatomic() -> bool:
    return _current.nonatomic


def injected_fault(path: Path | str) -> OSError | None:
    return _current.injected_fault(path)


def step(what: str) -> None:
    """One step of a store operation: counted, logged and killed at under test; else nothing."""
    _current.step(what)


def overlay_max_bytes(default: int) -> int:
    return _current.overlay_max_bytes or default


def write_in_place(path: Path | str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        time.sleep(0.05)  # a slow disk: widens the torn window
        fh.write(data[len(data) // 2:])
