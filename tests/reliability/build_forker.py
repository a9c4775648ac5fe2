"""A fork server for the crash suites: imports what a build needs once (`codeagent daemon`'s
PRELOAD, as the watcher's builder does), then forks a fresh child for each `codeagent` command
it is sent, so a kill lands in the command's work, not in the interpreter's start-up.

Protocol, one JSON object a line. In: {"argv": [...], "env": {...}, "out": FILE, "err": FILE}
(the child's environment is this process's plus `env`, so store.faults' hooks apply to that
command only; its stdout and stderr go to those files, else nowhere). Out:
{"pid": the child's pid} once forked, then {"exit": its exit code (-9 for a SIGKILL)} once
reaped. Each child leads a session of its own, so `os.killpg(pid, SIGKILL)` takes its pool
workers with it. It exits when its stdin closes.
"""

from __future__ import annotations

import json
import os
import sys

from codeagent.runtime.daemon.run import flush
from codeagent.runtime.daemon.server import preload
from codeagent.runtime.watch_builder import _child


def _say(reply: dict) -> None:
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


def _opened(path: str | None) -> int:
    return os.open(path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)


def main() -> None:
    preload()
    for line in sys.stdin:
        request = json.loads(line)
        flush()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.environ.update(request.get("env", {}))
                _child(request["argv"], _opened(request.get("out")), _opened(request.get("err")))
            finally:
                os._exit(1)  # _child exits by itself: this is a failure before it ran
        _say({"pid": pid})
        _, status = os.waitpid(pid, 0)
        _say({"exit": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    main()
