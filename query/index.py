"""Opening one manifest's assembled DuckDB file read-only.

A view answers from exactly one manifest: the DuckDB file is keyed by the manifest id and is
never written after its directory is renamed into place, so any number of readers may hold
it open while a build assembles the next manifest elsewhere. Following a ref across builds
is `follower.IndexFollower`'s.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .. import format as fmt
from .. import refs as refnames
from .. import sources
from ..errors import AssemblyVanished, IndexIncompatible, IndexMissing, Timeout
from ..format.assembly import sql_literals, version_problem  # noqa: F401 (query's SQL callers take it from here)
from ..format.overlay import GRAPH_TABLES, OVERLAY_DB
from ..store import Store
from . import idle_memory
from .assembly_check import _check_assembly
from .freshness import worktree_freshness
from .overlay import connect_overlay, overlay_base_id, overlay_graph_db, overlay_graph_of
from ..model import COMPLETE, Metadata
from .watchdog import WATCHDOG



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
            raise AssemblyVanished(manifest_id)
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
                    raise AssemblyVanished(manifest_id)
                _check_assembly(store, self.base_id, store.assembled_dir(self.base_id))
                self.path = store.assembled_dir(self.base_id) / fmt.DUCKDB_FILE
                self.con = connect_overlay(self.path.parent, directory, landed)
        except (duckdb.IOException, duckdb.CatalogException) as exc:
            raise AssemblyVanished(manifest_id) from exc
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
        except AssemblyVanished:
            if attempt:
                raise IndexMissing(f"manifest {manifest_id[:12]} is not assembled",
                                   hint=refnames.build_hint(repo, ref)) from None
    raise AssertionError("unreachable")

