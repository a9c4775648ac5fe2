"""Has anything in these directories changed since? Linux inotify through ctypes (no extra
dependency): the kernel queues an event before the writer's call returns, so a request that
finds the queue empty knows nothing changed, at the cost of one read. Elsewhere, or past the
watch limit, `DirWatch.open` answers None and the caller falls back to stat signatures."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import select
import sys
import threading

# inotify(7): a file written, its metadata changed, an entry created, deleted or moved; the
# watched directory itself deleted or moved.
_MASK = 0x2 | 0x4 | 0x8 | 0x40 | 0x80 | 0x100 | 0x200 | 0x400 | 0x800
_NONBLOCK_CLOEXEC = os.O_NONBLOCK | os.O_CLOEXEC
_libc = None


def _lib():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
    return _libc


class DirWatch:
    """One inotify instance watching a set of directories (not their subdirectories)."""

    def __init__(self, fd: int, directories: frozenset[str]) -> None:
        self.fd = fd
        self.directories = directories

    @classmethod
    def open(cls, directories) -> "DirWatch | None":
        """A watch on every one of `directories` (absolute paths; a missing one is skipped, its
        parent reports its creation), or None when inotify is unavailable or out of watches."""
        if not sys.platform.startswith("linux"):
            return None
        try:
            lib = _lib()
            fd = lib.inotify_init1(_NONBLOCK_CLOEXEC)
        except (OSError, AttributeError):
            return None
        if fd < 0:
            return None
        watch = cls(fd, frozenset())
        if not watch.add(directories):
            watch.close()
            return None
        return watch

    def add(self, directories) -> bool:
        """Watch these too (again: a directory deleted and made anew is a new inode to watch);
        False when the kernel refuses one that exists (no watches left)."""
        lib = _lib()
        added = set(self.directories)
        for d in directories:
            if lib.inotify_add_watch(self.fd, os.fsencode(d), _MASK) < 0:
                if ctypes.get_errno() not in (2, 20):  # ENOENT, ENOTDIR: gone since
                    return False
                continue
            added.add(d)
        self.directories = frozenset(added)
        return True

    def changed(self) -> bool:
        """Did anything happen since the last call (or since opening)? Drains the queue."""
        seen = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                return True
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


class Sleeper:
    """Sleeps until a timeout, `wake()`, or (with inotify) a change in `directory`: a long-lived
    reader's watcher hears a build swap its ref (a rename into the refs directory) at once
    instead of at its next timed look."""

    def __init__(self, directory: str) -> None:
        self._event = threading.Event()
        self._watch = DirWatch.open([directory])
        self._pipe = os.pipe() if self._watch is not None else None

    def sleep(self, timeout: float) -> None:
        if self._watch is None or self._pipe is None:
            self._event.wait(timeout)
            return
        ready, _, _ = select.select([self._watch.fd, self._pipe[0]], [], [], timeout)
        if self._watch.fd in ready:
            self._watch.changed()
        if self._pipe[0] in ready:
            os.read(self._pipe[0], 4096)

    def wake(self) -> None:
        self._event.set()
        if self._pipe is not None:
            os.write(self._pipe[1], b"w")

    def close(self) -> None:
        """Only once its sleeper thread has ended."""
        if self._watch is not None:
            self._watch.close()
        if self._pipe is not None:
            for fd in self._pipe:
                os.close(fd)
            self._pipe = None
