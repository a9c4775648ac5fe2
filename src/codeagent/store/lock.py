"""The writer lock: one build (or gc) at a time per store."""

from __future__ import annotations

import fcntl
import os
import time
from typing import TYPE_CHECKING

from .. import format as fmt
from ..errors import StoreLocked

if TYPE_CHECKING:
    from .objects import Store

_HELD_LOCK_FDS: set[int] = set()


def _drop_inherited_locks() -> None:
    # A forked child (a parser pool worker) must not keep the parent's flock alive: if the
    # parent is killed, orphaned workers would otherwise hold the store lock indefinitely.
    # Closing the child's copy drops a reference only; the parent's lock stands.
    for fd in _HELD_LOCK_FDS:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCK_FDS.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


class StoreLock:
    """An exclusive, non-blocking writer lock on a store (one build at a time)."""

    def __init__(self, store: Store, *, wait: float = 0.0) -> None:
        self.path = store.root / fmt.LOCK_FILE
        self.wait = wait
        self._fd: int | None = None

    def __enter__(self) -> "StoreLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise StoreLocked(
                        f"another build holds the store lock ({holder})",
                        hint="wait for it to finish, or pass --wait SECONDS",
                    ) from None
                time.sleep(0.05)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the holder's pid is informative only; a full disk must not break locking
        self._fd = fd
        _HELD_LOCK_FDS.add(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            _HELD_LOCK_FDS.discard(self._fd)
            os.close(self._fd)
            self._fd = None


