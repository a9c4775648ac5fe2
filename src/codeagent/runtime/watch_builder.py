"""The watcher's builder: one process that imports what a build needs once, then forks a fresh
child for each of the watcher's builds.

A fresh `codeagent build` spends ~0.35 s of CPU importing (DuckDB, pyarrow, numpy,
tree-sitter: `codeagent daemon`'s PRELOAD) before it reads a file, several seconds of wall
time on a loaded machine; a watch build is usually a one-file change. The child is forked
from a process that has them imported already, so each build is still a process of its own
(its memory returned and its failures contained when it exits, its writes counted in
/proc/<pid>/io of the builder that reaps it) and the watcher still holds no index open.

Protocol, one JSON object a line: the watcher writes {"argv": [...]} (a `codeagent` command
line; "nice": N runs it at that lower CPU priority) to the builder's stdin; the builder answers on its stdout with {"pid": the child's pid}
once forked, then {"exit": code, "out": stdout text, "err": stderr text, "cpu": the child's
CPU seconds} once the child has exited. The builder leads a process group of its own (its
children with it), so the watcher stops a running build by killing that group, or one
build it started in the background (`Job`, a consolidation) by interrupting that child; it
exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from ..cli import child_command
from .daemon.run import flush, run_cli, wind_down
from .daemon.server import preload
from ..interrupts import INTERRUPTED_EXIT


def builder_command() -> tuple[list[str], str]:
    """(argv, cwd) of a builder process."""
    argv, cwd = child_command()
    return [argv[0], "-m", "codeagent.runtime.watch_builder"], cwd


class Builder:
    """The watcher's side: a builder process started on first use (and again if it died)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def run(self, argv: list[str]) -> tuple[int, str, str, float | None]:
        """(exit code, stdout, stderr, CPU seconds) of `codeagent <argv>` run in a child of
        the builder. Any exception here (a Ctrl-C) kills the builder and its children first."""
        try:
            return self._run(argv)
        except BaseException:
            self.stop(kill=True)
            raise

    def _run(self, argv: list[str]) -> tuple[int, str, str, float | None]:
        for attempt in range(2):
            proc = self._started()
            reply = _exchange(proc, argv)
            if reply is not None:
                return reply
            self.stop(kill=True)  # it died: start another once, then say so
        return DIED

    def start(self, argv: list[str], nice: int = 0) -> Job:
        """Run `codeagent <argv>` in a child of the builder without waiting for it (`nice`: at
        that lower CPU priority); nothing else may use the builder until the job is done
        (`Job.wait` or `Job.cancel`)."""
        return Job(self._started(), argv, nice)

    def _started(self) -> subprocess.Popen:
        if self.proc is None or self.proc.poll() is not None:
            argv, cwd = builder_command()
            self.proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         text=True, start_new_session=True)
        return self.proc

    def stop(self, kill: bool = False) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if kill and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            proc.stdin.close()
        except OSError:
            pass
        proc.wait()
        proc.stdout.close()


DIED = (1, "", "the watcher's build process stopped unexpectedly", None)
Reply = tuple[int, str, str, float | None]


def _exchange(proc: subprocess.Popen, argv: list[str], on_pid=None, nice: int = 0) -> Reply | None:
    """Send one command to the builder `proc` and read its answer (None: the builder died);
    `on_pid` hears the child's pid as soon as it is forked."""
    try:
        proc.stdin.write(json.dumps({"argv": argv, "nice": nice}) + "\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                return None
            reply = json.loads(line)
            if "pid" in reply:
                if on_pid is not None:
                    on_pid(reply["pid"])
                continue
            return int(reply["exit"]), reply["out"], reply["err"], reply.get("cpu")
    except (OSError, ValueError):
        return None


class Job:
    """One command run by the builder in the background (a thread waits for its answer)."""

    def __init__(self, proc: subprocess.Popen, argv: list[str], nice: int = 0) -> None:
        self.pid: int | None = None
        self.reply: Reply | None = None
        self.done = threading.Event()
        self._forked = threading.Event()
        threading.Thread(target=self._wait, args=(proc, argv, nice), daemon=True).start()

    def _wait(self, proc: subprocess.Popen, argv: list[str], nice: int) -> None:
        try:
            self.reply = _exchange(proc, argv, self._on_pid, nice) or DIED
        finally:
            self._forked.set()
            self.done.set()

    def _on_pid(self, pid: int) -> None:
        self.pid = pid
        self._forked.set()

    def wait(self, timeout: float | None = None) -> Reply | None:
        """The command's answer, or None if it has not ended within `timeout`."""
        return self.reply if self.done.wait(timeout) else None

    def cancel(self, grace: float = 5.0) -> Reply:
        """Interrupt the command (a Ctrl-C: the build cleans up; sent again until the child,
        which ignores it until it has set its handler, ends), killed if it has not ended
        `grace` seconds after it was forked; its answer (it may have ended first). A builder
        still importing (seconds on a loaded machine) is waited for: the child it forks next
        is the one to interrupt, not a build to wait out."""
        self._forked.wait()  # its pid, or its end: set either way
        deadline = time.monotonic() + grace
        while self.pid is not None and not self.done.is_set():
            try:
                os.kill(self.pid, signal.SIGINT if time.monotonic() < deadline else signal.SIGKILL)
            except OSError:
                break
            self.done.wait(0.2)
        self.done.wait()
        return self.reply or DIED


def serve() -> None:
    """The builder's loop (`python -m codeagent.runtime.watch_builder`)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the watcher stops builds, by killing the group
    preload()
    for line in sys.stdin:
        request = json.loads(line)
        reply = run_forked(request["argv"], request.get("nice", 0))
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


def run_forked(argv: list[str], nice: int = 0) -> dict:
    """Run `codeagent <argv>` in a forked child (`nice`: at that lower CPU priority); its exit
    code and output."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        flush()
        pid = os.fork()
        if pid == 0:
            _child(argv, out.fileno(), err.fileno(), nice)
        sys.stdout.write(json.dumps({"pid": pid}) + "\n")
        sys.stdout.flush()
        _, status, usage = os.wait4(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        texts = []
        for f in (out, err):
            f.seek(0)
            texts.append(f.read().decode("utf-8", "replace"))
    return {"exit": code, "out": texts[0], "err": texts[1],
            "cpu": round(usage.ru_utime + usage.ru_stime, 3)}


def _child(argv: list[str], out: int, err: int, nice: int = 0) -> None:
    """In the forked child: output to `out`/`err`, run the command, exit (never returns)."""
    code: int | None = None
    try:
        if nice:
            os.nice(nice)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        for fd, target in ((devnull, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
        os.close(devnull)
        sys.argv = ["codeagent", *argv]
        code = run_cli(argv, "codeagent")
        wind_down()
    except KeyboardInterrupt:  # a cancel (sent once the pid is known) before run_cli handles one
        code = INTERRUPTED_EXIT if code is None else code
    finally:
        flush()
        os._exit(1 if code is None else code)


if __name__ == "__main__":
    serve()
