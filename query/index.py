"""Opening one manifest's assembled DuckDB file read-only, and following a ref across builds.

A view answers from exactly one manifest: the DuckDB file is keyed by the manifest id and is
never written after its directory is renamed into place, so any number of readers may hold
it open while a build assembles the next manifest elsewhere. `IndexFollower` re-reads the
ref pointer on every request and swaps to the new manifest; requests in flight finish on the
view they started with.
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
from typing import Any

from .. import format as fmt
from .. import refs as refnames
from .. import sources
from ..errors import IndexIncompatible, IndexMissing, Timeout
from ..format.assembly import sql_literals, version_problem  # noqa: F401 (query's SQL callers take it from here)
from ..format.overlay import GRAPH_TABLES, OVERLAY_DB
from ..format.resident import drop_mapped_pages
from ..store import Store
from . import idle_memory
from .assembly_check import _Vanished, _check_assembly
from .freshness import FIRST_LOOK_WAIT, look_beside, worktree_freshness
from .dirwatch import Sleeper
from .overlay import connect_overlay, overlay_base_id, overlay_graph_db, overlay_graph_of, prepare_connection
from ..model import COMPLETE, Metadata
from .watchdog import WATCHDOG

WATCH_INTERVAL = 0.5  # seconds between an IndexFollower's looks at its ref (see _watch)
LATE_WAIT = 1.0  # seconds a new manifest's late loaders wait for its first answer (see _load_current)
WATCH_EXIT_WAIT = 10.0  # seconds the interpreter's exit waits for a watcher mid-load
_watching: weakref.WeakSet = weakref.WeakSet()  # followers whose watcher thread runs


def thread_cursor(con, local: threading.local, lock: threading.Lock):
    """This thread's cursor on `con` (DuckDB connections are not shared between threads)."""
    cur = getattr(local, "cursor", None)
    if cur is None:
        with lock:
            cur = con.cursor()
        local.cursor = cur
    return cur


def _repo_root(repo: Path | None) -> Path | None:
    repo = (Path.cwd() if repo is None else repo).resolve()
    if not repo.exists():
        return None
    return sources.git_toplevel(repo) or repo


def open_store(repo: Path | None, store_dir: Path | None) -> tuple[Store, Path | None]:
    """The store of `repo` (default: the current directory's repository) or `store_dir`."""
    root = _repo_root(repo)
    path = Path(store_dir) if store_dir else (root / ".codeagent" if root else None)
    if path is None or not (path / fmt.STORE_MARKER).exists():
        raise IndexMissing(f"no index at {path or repo}", hint=refnames.build_hint(repo, None))
    return Store(path), root


class IndexView:
    """A read-only connection to one manifest's assembled index. Thread-safe: every thread
    queries through its own cursor. Close it (or use it as a context manager) when done."""

    def __init__(self, store: Store, repo: Path | None, ref: str | None, manifest_id: str) -> None:
        import duckdb

        self.store = store
        self.repo = repo
        self.ref = ref
        self.manifest_id = manifest_id
        directory = store.assembled_dir(manifest_id)
        self.path = directory / fmt.DUCKDB_FILE
        if not store.is_assembled(manifest_id):
            raise _Vanished(manifest_id)
        _check_assembly(store, manifest_id, directory)
        self.base_id = overlay_base_id(directory)  # None: a full assembly
        self._graph_db = overlay_graph_db(directory, landed := bool(self.base_id) and store.graph_landed(manifest_id))
        self.graph_manifest_id = overlay_graph_of(directory, manifest_id, landed)  # see graph_pending
        # DuckDB shares one instance among a process's connections to a file (see idle_memory)
        self._db_key = str(self.path.resolve()) if self.base_id is None else None
        try:
            if self.base_id is None:
                self.con = duckdb.connect(str(self.path), read_only=True)
            else:
                if not store.is_assembled(self.base_id):
                    raise _Vanished(manifest_id)
                _check_assembly(store, self.base_id, store.assembled_dir(self.base_id))
                self.path = store.assembled_dir(self.base_id) / fmt.DUCKDB_FILE
                self.con = connect_overlay(self.path.parent, directory, landed)
        except (duckdb.IOException, duckdb.CatalogException) as exc:
            raise _Vanished(manifest_id) from exc
        idle_memory.opened(self._db_key)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._closed = False
        self.meta = dict(self.con.execute("SELECT key, value FROM meta").fetchall())
        self.tables: dict[str, set[str]] = {}  # tables and views -> columns
        for table, column in self.con.execute(
                "SELECT table_name, column_name FROM duckdb_columns() "
                "WHERE database_name = current_database() AND NOT internal").fetchall():
            self.tables.setdefault(table, set()).add(column)
        self._check_schema()
        self.commit = self.meta.get("commit") or None
        self.cache: dict[str, Any] = {}  # per-manifest memo for query helpers (name tables...)
        self.keep_text_in_memory, self.freshness_wait = False, None  # long-lived readers': memtext, worktree_freshness
        self._on_close: list = []
        self.loaders: list[Callable[["IndexView"], object]] = []  # see `loaded`
        self.late_loaders: list[Callable[["IndexView"], object]] = []
        self.answered = False  # an IndexFollower lent it to a request that has ended
        self.merged, self.previous = {}, {}  # structures merged here, and by the view before (overlay_arrays.Merged)

    def _check_schema(self) -> None:
        if self.meta.get("manifest_id") != self.manifest_id:
            raise IndexIncompatible(
                f"assembled index {self.manifest_id[:12]} does not describe its manifest",
                hint="rebuild the index with `codeagent build`")
        problem = version_problem(self.meta)
        if problem:
            raise IndexIncompatible(problem, hint="rebuild the index with `codeagent build` (or upgrade codeagent)")

    # ---- querying ---------------------------------------------------------------------------
    def cursor(self):
        return thread_cursor(self.con, self._local, self._lock)

    def sql(self, query: str, params: list | tuple | None = None) -> list[tuple]:
        return self.cursor().execute(query, params or []).fetchall()

    def masked_paths(self, table: str) -> frozenset[str]:
        """An overlay's paths whose rows of `table` replace (or delete) its base's; empty for a
        full assembly. With `base_id`, what a resident structure loaded for the base needs to
        follow this manifest: drop these paths' rows, add `<overlay_db(table)>.main.<table>`'s."""
        key = f"masked:{table}"
        if key not in self.cache:
            self.cache[key] = frozenset() if self.base_id is None else frozenset(
                r[0] for r in self.sql(f"SELECT path FROM {self.overlay_db(table)}.main.mask_{table}"))
        return self.cache[key]

    def overlay_db(self, table: str) -> str:
        """The database holding an overlay's rows and mask of `table` (format/overlay.py)."""
        return self._graph_db if table in GRAPH_TABLES else OVERLAY_DB

    @property
    def graph_pending(self) -> bool:
        """Graph answers come from graph_manifest_id's graph: this overlay's has not landed."""
        return self.graph_manifest_id != self.manifest_id

    def graph_moved(self) -> bool:
        """Has this pending view's graph landed (or a full assembly replaced it) since it opened?"""
        return self.graph_pending and not self.store.graph_pending(self.manifest_id)

    def has_table(self, name: str) -> bool:
        return name in self.tables

    def has_column(self, table: str, column: str) -> bool:
        return column in self.tables.get(table, ())

    def count(self, table: str) -> int:
        return self.count_where(table, "TRUE")

    def count_where(self, table: str, condition: str) -> int:
        """Rows of `table` meeting a fixed SQL condition (memoised: the index never changes)."""
        key = f"count:{table}:{condition}"
        if key not in self.cache:
            self.cache[key] = (self.sql(f"SELECT count(*) FROM {table} WHERE {condition}")[0][0]
                               if self.has_table(table) else 0)
        return self.cache[key]

    @contextmanager
    def deadline(self, seconds: float | None, cursor=None) -> Iterator[None]:
        """Interrupt this thread's running query (on `cursor`, default this view's) after
        `seconds`; raises Timeout."""
        import duckdb

        if not seconds:
            yield
            return
        cur = cursor or self.cursor()
        started = time.monotonic()
        token = WATCHDOG.arm(seconds, cur.interrupt)
        try:
            yield
        except duckdb.InterruptException as exc:
            raise _timeout(seconds) from exc
        finally:
            WATCHDOG.disarm(token)
        if time.monotonic() - started > seconds:  # the interrupt fell between two queries
            raise _timeout(seconds)

    # ---- metadata ---------------------------------------------------------------------------
    def freshness(self) -> str:
        """fresh | stale | unknown: does the index still describe the work tree or the ref,
        as they are now? (query.freshness keeps the answer while nothing it read changed.)"""
        try:
            return worktree_freshness(self.store, self.repo, self.manifest_id, first_wait=self.freshness_wait).state
        except Exception:
            return "unknown"

    def metadata(self, completeness: str = COMPLETE, *, freshness: bool = True) -> Metadata:
        return Metadata(ref=self.ref, manifest_id=self.manifest_id, commit=self.commit,
                        freshness=self.freshness() if freshness else "unknown",
                        completeness=completeness, graph="indexing" if self.graph_pending else "ready",
                        graph_manifest_id=self.graph_manifest_id if self.graph_pending else None)

    # ---- lifetime ---------------------------------------------------------------------------
    def on_close(self, fn) -> None:
        self._on_close.append(fn)

    def loaded(self, loader: Callable[["IndexView"], object], late: bool = False) -> None:
        """Record that `loader(view)` filled one of this view's in-memory tables, so an
        IndexFollower can load the same ones for the next manifest before it is asked
        (`late`: after every other one: what no first request waits for)."""
        loaders = self.late_loaders if late else self.loaders
        if loader not in loaders:
            loaders.append(loader)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for fn in self._on_close:
                fn()
            self.con.close()
            idle_memory.closed(self._db_key)

    def release_memory(self) -> None:
        """Hand back what DuckDB kept after the queries (idle_memory.release_database); no
        query of this view may run meanwhile."""
        if not self._closed:
            idle_memory.release_database(self.cursor(), self._db_key)

    def __enter__(self) -> "IndexView":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _timeout(seconds: float) -> Timeout:
    return Timeout(f"query exceeded its {seconds:g}s time limit",
                   hint="narrow the pattern or the path glob, or raise the timeout")


def open_index(repo: Path | None = None, store_dir: Path | None = None,
               ref: str | None = None) -> IndexView:
    """Open the manifest a ref (branch, tag, ref name or manifest id prefix) names, read-only.
    With `ref` None: the work-tree index, else the current branch's, else the only one.
    Raises IndexMissing (naming the build command) when there is no index for it.
    """
    store, root = open_store(repo, store_dir)
    for attempt in range(2):
        ref_name, manifest_id = refnames.resolve(store, ref, root)
        try:
            return IndexView(store, root, ref_name, manifest_id)
        except _Vanished:
            if attempt:
                raise IndexMissing(f"manifest {manifest_id[:12]} is not assembled",
                                   hint=refnames.build_hint(repo, ref)) from None
    raise AssertionError("unreachable")


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
                except _Vanished:
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
