"""What every tool shares: the repository sandbox and the index follower (one per server).

The follower re-reads the ref pointer on each request, so a build that swaps the ref is
answered from on the next request without a restart. When there is no index yet, it is
looked for again on every request.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import CodeagentError, IndexIncompatible, IndexMissing
from ..query import IndexFollower, IndexView, open_index
from ..query.memtext import resident_texts
from ..query.symbol_table import SymbolTable
from ..query.status import served_repository
from ..query.sandbox import Sandbox
from .schemas import ResponseMetadata


# Seconds a graph answer waits for the followed manifest's graph step (an overlay published
# before it, the watcher running that step: ~1 s on the standard library) before it answers
# from the previous build's graph, marked `graph: indexing`.
GRAPH_WAIT = 5.0

# A hint telling a CLI user to run `codeagent search ...`: an agent has tools for that.
CLI_SEARCH = re.compile(r"`codeagent search\b")


@dataclass(frozen=True)
class ServerConfig:
    repo: Path
    ref: str | None = None
    store_dir: Path | None = None
    allow_build: bool = False
    tools: str = "core"  # core | all: the profile of app.tool_table


class ServerState:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        self.root, self.store_dir = served_repository(config.repo, config.store_dir)
        self.sandbox = Sandbox(self.root, self.store_dir)
        self._follower = None
        self._lock = threading.Lock()
        self.active_job: dict | None = None  # the build a build tool is running, if any
        self.watch: dict | None = None  # serve --watch: {"building": job or None, "last": event}
        self.subscriptions: set[str] = set()  # resource URIs the client subscribed to

    def running_build(self) -> dict | None:
        """The build running for this server (a build tool's or the watcher's), if any."""
        return self.active_job or (self.watch or {}).get("building")

    def warm_up(self) -> None:
        """Open the served index and load what a first request reads (the symbol table, the
        file texts its snippets are cut from, the work tree's freshness) in the background,
        while the server starts: a first look-up no longer pays for them (IndexFollower.warm;
        the texts are mapped, but their first use settles the view: a full GC pass, ~20 ms
        on 10x the stdlib). No index: nothing to do."""
        try:
            follower = self.follower()
        except CodeagentError:
            return
        follower.warm([SymbolTable.warm, resident_texts, IndexView.freshness, SymbolTable.complete])

    def follower(self):
        with self._lock:
            if self._follower is None:
                self._follower = IndexFollower(self.root, self.store_dir, self.config.ref)
            return self._follower

    @contextmanager
    def view(self, ref: str | None = None) -> Iterator:
        """The index view for one request (IndexMissing without one): the followed ref's
        current manifest, or the one `ref` names (a branch, tag, store ref or manifest id)."""
        if ref is None or ref == self.config.ref:
            with self.follower().view() as v:
                yield v
            return
        try:
            view = open_index(self.root, self.store_dir, ref)
        except IndexMissing:
            if not self._names_served(ref):
                raise
            view = None
        if view is None:  # HEAD, or the commit the served index is of: the served index
            with self.follower().view() as v:
                yield v
            return
        try:
            yield view
        finally:
            view.close()

    def _names_served(self, ref: str) -> bool:
        """Does `ref` (no index of its own) mean what the server serves? `HEAD` does (seed
        003: the current HEAD, else the default index), and so does any spelling git resolves
        to the commit the served index is of."""
        if ref.upper() == "HEAD":
            return True
        sha = self.sandbox.commit_of(ref)
        try:
            with self.follower().view() as v:
                return sha is not None and v.commit == sha
        except CodeagentError:
            return False

    def wait_for_graph(self, ref: str | None = None, timeout: float = GRAPH_WAIT) -> None:
        """Before a graph answer on the followed ref: while its manifest's graph step has not
        landed and a build is running, wait (at most `timeout`) so the answer is exact; past
        that, or with no build running, it answers marked `graph: indexing`."""
        if ref is not None and ref != self.config.ref:
            return
        deadline = time.monotonic() + timeout
        while True:
            with self.view(ref) as v:
                if not v.graph_pending:
                    return
            if self.running_build() is None or time.monotonic() > deadline:
                return
            time.sleep(0.02)

    def build_command(self) -> str:
        """The command that builds what this server serves (no absolute paths)."""
        ref = f" --ref {self.config.ref}" if self.config.ref and self.config.ref != "worktree" else ""
        store = ""
        if self.config.store_dir:
            inside = self.store_dir.is_relative_to(self.root)
            store = f" --store {self.store_dir.relative_to(self.root) if inside else 'STORE_DIR'}"
        return f"codeagent build{ref}{store}"

    def scrub(self, exc: CodeagentError) -> CodeagentError:
        """`exc` ready for a client: no absolute paths; index_missing names the build command,
        or the index_repo tool when the server offers it."""
        local = (str(self.root), str(self.store_dir))
        if isinstance(exc, IndexMissing) and (not exc.hint or any(p in exc.hint for p in local)):
            exc.hint = f"run `{self.build_command()}` in the repository"
        if exc.hint and CLI_SEARCH.search(exc.hint):
            exc.hint = "find it with search_symbols or search_code, then pass a symbol_id"
        if (self.config.allow_build and isinstance(exc, (IndexMissing, IndexIncompatible))
                and "--embedder" not in (exc.hint or "")):
            exc.hint = "call the index_repo tool, which builds the index"
        return scrub(exc, [self.root, Path(self.sandbox.root)], self.store_dir)

    @contextmanager
    def optional_view(self) -> Iterator:
        """The index view, or a `NoIndex` saying why there is no usable one."""
        with ExitStack() as stack:
            try:
                v = stack.enter_context(self.view())
            except IndexMissing:
                v = NoIndex("not_indexed")
            except IndexIncompatible:
                v = NoIndex("reindex_required")
            yield v

    def close(self) -> None:
        with self._lock:
            if self._follower is not None:
                self._follower.close()
                self._follower = None


@dataclass(frozen=True)
class NoIndex:
    """Stands in for a view when file tools answer without an index."""

    schema_status: str  # not_indexed | reindex_required


def metadata_of(view, completeness: str = "complete") -> ResponseMetadata:
    """The response metadata block for an answer from `view` (or a NoIndex)."""
    if isinstance(view, NoIndex):
        return ResponseMetadata(completeness=completeness, schema_status=view.schema_status)
    m = view.metadata(completeness)
    return ResponseMetadata(ref=m.ref, manifest_id=m.manifest_id, commit=m.commit,
                            freshness=m.freshness, completeness=m.completeness,
                            schema_status=m.schema_status, graph=m.graph,
                            graph_manifest_id=m.graph_manifest_id)


def scrub(exc: CodeagentError, roots: list[Path], store: Path) -> CodeagentError:
    """`exc` without absolute local paths in its message or hint (they go to clients):
    paths under a repository root become relative, an outside store becomes `<store>`."""
    pairs = [] if any(store.is_relative_to(r) for r in roots) else [(str(store), "<store>")]
    for r in sorted({str(r) for r in roots}, key=len, reverse=True):
        pairs += [(r + "/", ""), (r, "<repo>")]
    for old, new in pairs:
        exc.message = exc.message.replace(old, new)
        if exc.hint:
            exc.hint = exc.hint.replace(old, new)
    return exc
