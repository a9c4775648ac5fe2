"""Following a ref across builds: `IndexFollower` re-reads the ref pointer on every request
and swaps to the new manifest's `IndexView`; requests in flight finish on the view they
started with. A watcher thread opens and warms the next manifest before a request needs it.
"""

from __future__ import annotations

import atexit
import posixpath
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import format as fmt
from .. import refs as refnames
from ..errors import AssemblyVanished, IndexMissing
from ..format.resident import drop_mapped_pages
from . import idle_memory
from .dirwatch import Sleeper
from .freshness import FIRST_LOOK_WAIT, look_beside
from .index import IndexView, open_store
from .overlay import prepare_connection

WATCH_INTERVAL = 0.5  # seconds between an IndexFollower's looks at its ref (see _watch)
LATE_WAIT = 1.0  # seconds a new manifest's late loaders wait for its first answer (see _load_current)
WATCH_EXIT_WAIT = 10.0  # seconds the interpreter's exit waits for a watcher mid-load
_watching: weakref.WeakSet = weakref.WeakSet()  # followers whose watcher thread runs


class IndexFollower:
    """A long-lived handle that always answers from the ref's newest manifest.

    `with follower.view() as v:` re-reads the ref pointer (one small file), swaps when it
    moved, and lends the view for the request; a superseded view closes when its last
    request ends.
    """

    def __init__(self, repo: Path | None = None, store_dir: Path | None = None,
                 ref: str | None = None) -> None:
        self.store, self.root = open_store(repo, store_dir)
        self.repo = repo
        self.spec = ref
        self.ref_name, _ = refnames.resolve(self.store, ref, self.root)
        self._lock = threading.Lock()
        self._opening = threading.Lock()  # one thread opens a new manifest, the others lease it
        self._current: IndexView | None = None
        self._leases: dict[int, int] = {}
        self._retired: dict[int, IndexView] = {}
        self.keep_text_in_memory = True  # a long-lived reader: see memtext.py
        self.warm_on_swap = True  # see _watch
        self._watcher: threading.Thread | None = None
        self._stop = threading.Event()
        self._sleeper: Sleeper | None = None
        self._first: list[Callable[[IndexView], object]] = []  # see warm
        self._in_flight = 0  # requests lent a view now
        self._read_since_drop = False  # a request ended since the arrays' pages were dropped

    def _pointer(self) -> str:
        if self.ref_name is None:
            return refnames.resolve(self.store, self.spec, self.root)[1]
        mid = self.store.read_ref(self.ref_name)
        if mid is None:
            raise IndexMissing(f"the index for {self.ref_name} was deleted",
                               hint=refnames.build_hint(self.repo, self.spec))
        return mid

    def _acquire(self) -> IndexView:
        for attempt in range(2):
            mid = self._pointer()
            with self._opening:
                cur = self._lease_current(mid)
                if cur is not None:
                    return cur
                try:
                    fresh = IndexView(self.store, self.root, self.ref_name, mid)
                    fresh.keep_text_in_memory, fresh.freshness_wait = self.keep_text_in_memory, FIRST_LOOK_WAIT
                except AssemblyVanished:
                    if attempt:
                        raise IndexMissing(f"manifest {mid[:12]} is not assembled",
                                           hint=refnames.build_hint(self.repo, self.spec)) from None
                    continue
                with self._lock:
                    old, self._current = self._current, fresh
                    if old is not None:
                        fresh.previous = dict(old.merged)
                        self._retire(old)
                    self._leases[id(fresh)] = self._leases.get(id(fresh), 0) + 1
                    return fresh
        raise AssertionError("unreachable")

    def _lease_current(self, mid: str) -> IndexView | None:
        with self._lock:
            cur = self._current
            if cur is not None and cur.manifest_id == mid and not cur.graph_moved():
                self._leases[id(cur)] = self._leases.get(id(cur), 0) + 1
                return cur
        return None

    def _retire(self, view: IndexView) -> None:
        if self._leases.get(id(view), 0) == 0:
            self._leases.pop(id(view), None)
            view.close()
        else:
            self._retired[id(view)] = view

    def _release(self, view: IndexView) -> None:
        with self._lock:
            n = self._leases.get(id(view), 1) - 1
            self._leases[id(view)] = n
            if n == 0 and id(view) in self._retired:
                self._retired.pop(id(view)).close()
                self._leases.pop(id(view), None)

    def _watch(self) -> None:
        """Background: when a build moves the ref (heard at once where inotify is, else at
        the next look), open the new manifest, work out its freshness (on a thread of its
        own: mostly git and stat calls) and load the in-memory tables the current view had
        (symbols, references, texts; the late ones last) before a request needs them. A
        request that comes first uses the new view too and waits on the same table's load
        instead of starting its own. First, the loaders `warm` was given, on the manifest
        current then."""
        first, self._first = self._first, []
        while first or not self._sleep():
            try:
                if first:
                    self._load_current(first)
                else:
                    self._warm_if_moved()
                    self._drop_pages_if_idle()
            except Exception as exc:  # a vanished or broken index: requests report it
                if not self._stop.is_set():
                    import sys

                    print(f"codeagent: warming the new index failed: {exc}", file=sys.stderr)
            first = []

    def _warm_if_moved(self) -> None:
        """One look of the watcher (a function of its own: no view outlives it in a frame)."""
        mid = self._pointer()
        with self._lock:
            cur = self._current
        if cur is None or (cur.manifest_id == mid and not cur.graph_moved()):
            return
        loaders, late = list(cur.loaders), list(cur.late_loaders)
        del cur
        look_beside(self.store, self.root, mid)
        self._load_current(loaders, late)

    def _drop_pages_if_idle(self) -> None:
        """At a look of the watcher with no request in flight, release what DuckDB kept for
        the requests since the last look (IndexView.release_memory) and unmap the resident
        arrays' pages they read (format.resident.drop_mapped_pages): a
        server's resident set falls back within WATCH_INTERVAL of a burst, and a burst pays
        the minor faults of mapping them again at most once per look, not once per request."""
        with self._lock:
            if self._in_flight or not self._read_since_drop:
                return
            self._read_since_drop = False
            if self._current is not None:  # under the lock: no request starts meanwhile
                self._current.release_memory()
        drop_mapped_pages()

    def _load_current(self, loaders: list[Callable[[IndexView], object]], late: list = ()) -> None:
        """Run `loaders`, then (once a request has been answered from the manifest, or after
        LATE_WAIT: they would compete with it for the CPU) the `late` ones and the spare
        connection for the next overlay."""
        fresh = self._acquire()
        try:
            for load in loaders:
                if self._stop.is_set():
                    break
                load(fresh)
            until = time.monotonic() + LATE_WAIT
            while late and not fresh.answered and time.monotonic() < until and not self._stop.wait(0.01):
                pass
            for load in late:
                if self._stop.is_set():
                    return
                load(fresh)
            fresh.previous = {}
            if not self._stop.is_set():
                prepare_connection(None if fresh.base_id is None else fresh.path.parent)
        finally:
            self._release(fresh)

    def _sleep(self) -> bool:
        """Wait for the next look (WATCH_INTERVAL, or the ref's directory changing); True: closing."""
        if self._sleeper is None:
            ref_dir = posixpath.dirname(self.ref_name or "")
            self._sleeper = Sleeper(str(self.store.root / fmt.REFS_DIR / ref_dir))
        if not self._stop.is_set():
            self._sleeper.sleep(WATCH_INTERVAL)
        return self._stop.is_set()

    def warm(self, loaders: list[Callable[[IndexView], object]]) -> None:
        """Open the current manifest and run `loaders` on it now, on the watcher thread (which
        this starts, and which the interpreter's exit waits for): a server's first request
        then finds the index open and checked, and what they load, loaded."""
        self._first = list(loaders)
        self._start_watcher()

    def _start_watcher(self) -> None:
        if self.warm_on_swap and self._watcher is None:
            with self._lock:
                if self._watcher is None:
                    self._watcher = threading.Thread(target=self._watch, name="codeagent-index-watch",
                                                     daemon=True)
                    self._watcher.start()
                    _watching.add(self)

    def _stop_watcher(self) -> None:
        """Stop the watcher and wait for a load it is in the middle of: a daemon thread still
        inside DuckDB when the interpreter exits aborts the process ("FATAL: exception not
        rethrown")."""
        self._stop.set()
        sleeper, watcher = self._sleeper, self._watcher
        if sleeper is not None:
            sleeper.wake()
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(WATCH_EXIT_WAIT)
            if not watcher.is_alive() and sleeper is not None:
                self._sleeper = None
                sleeper.close()

    @contextmanager
    def view(self) -> Iterator[IndexView]:
        self._start_watcher()
        v = self._acquire()
        with self._lock:
            self._in_flight += 1
        try:
            yield v
        finally:
            self._release(v)
            v.answered = True
            idle_memory.release_arrow()
            with self._lock:
                self._in_flight -= 1
                self._read_since_drop = True
            if self._watcher is None:  # no watcher to drop them when idle: now
                drop_mapped_pages()

    def close(self) -> None:
        self._stop_watcher()
        prepare_connection(None)
        with self._lock:
            for v in [self._current, *self._retired.values()]:
                if v is not None:
                    v.close()
            self._current = None
            self._retired.clear()
            self._leases.clear()


@atexit.register
def _stop_watchers() -> None:
    for follower in list(_watching):
        follower._stop_watcher()
