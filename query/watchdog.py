"""One long-lived thread that calls a function once its deadline passes (interrupting a DuckDB
cursor whose query overran its time limit), unless the deadline was disarmed first.

A `threading.Timer` per request starts and stops a thread each time: 1-4 ms of every MCP
call on a loaded two-core machine, more than a symbol lookup itself.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import threading
import time
from collections.abc import Callable


class Watchdog:
    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []
        self._armed: dict[int, Callable[[], None]] = {}  # disarming drops the reference
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, fn: Callable[[], None]) -> int:
        """Call `fn` from the watchdog thread after `seconds`; returns a token for `disarm`."""
        token = next(self._ids)
        with self._cond:
            heapq.heappush(self._heap, (time.monotonic() + seconds, token))
            self._armed[token] = fn
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="codeagent-watchdog",
                                                daemon=True)
                self._thread.start()
            elif self._heap[0][1] == token:
                self._cond.notify()
        return token

    def disarm(self, token: int) -> None:
        """After this returns, the token's function is not called (if it has not been)."""
        with self._cond:
            self._armed.pop(token, None)

    def _run(self) -> None:
        with self._cond:
            while True:
                while self._heap and self._heap[0][1] not in self._armed:
                    heapq.heappop(self._heap)
                if not self._heap:
                    self._cond.wait()
                    continue
                due, token = self._heap[0]
                wait = due - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                # under the lock: a deadline disarmed before this never fires
                with contextlib.suppress(Exception):  # e.g. a cursor closed meanwhile
                    self._armed.pop(token)()


WATCHDOG = Watchdog()
