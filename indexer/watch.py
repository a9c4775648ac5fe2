"""Watch mode: follow the work tree with incremental builds, each in a process of its own.

`watchfiles` (inotify, FSEvents, ReadDirectoryChangesW under one API) reports changed paths;
a batch ends once the tree has been quiet for `quiet_ms` (at most `max_wait_ms` after its
first change). Paths that cannot change the work-tree index are dropped first: the store,
git's internals (except HEAD: a branch switch), files `.codeagentignore` or `[tool.codeagent]`
exclude, and untracked files `.gitignore` ignores. Each remaining batch runs `codeagent
build` as a child process (forked by the builder, watch_builder.py, which has the build's
libraries imported already), so the watcher holds no index open and writes nothing itself.
Changes that arrive while a build runs form the next batch: a branch switch rewriting
thousands of files is one or two builds, never one per file.

An edit's build publishes before its graph step (`build --graph-later`: symbols, texts and
postings first, format/overlay.py); the watcher runs that step at once as a build of its own
in the background, interrupted by the next change like a consolidation (the next graph step
follows every change since the last graph that landed).

Consolidation is kept off an edit's path: the builds keep their overlay past its usual bound
(`build --consolidate-later`) and say when it is due; once the work tree has been idle for
CONSOLIDATE_IDLE seconds the watcher consolidates (`build --consolidate`) in the
background. A change arriving meanwhile interrupts it (the store is left as it was: an
interrupted build changes nothing) and is built as an overlay at once; the consolidation is
tried again at the next idle time.

Events are dicts (see `WatchEvent`), printed as progress lines by `codeagent watch` and read
as JSON lines by `codeagent serve --watch`.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import sources
from ..errors import CodeagentError, NotARepository
from ..repo_config import RULE_FILES
from ..runtime.watch_builder import Builder, Job

DEFAULT_QUIET_MS = 100
DEFAULT_MAX_WAIT_MS = 2000
GIT_BUSY_WAIT = 30.0  # seconds a build waits for a git command holding the index lock
# Files whose change may change what the build includes, wherever .gitignore says otherwise.
RULE_NAMES = frozenset({".gitignore", *RULE_FILES})

CONSOLIDATE_IDLE = 2.0  # seconds without changes or builds before a due consolidation starts
# The graph step runs beside the server's first answer on the manifest it follows (its swap,
# the loads of the changed rows): at this lower CPU priority it leaves the cores to that.
BACKGROUND_NICE = 10
# {"event": "watching" | "changes" | "build_started" | "build_done" | "build_failed" |
#  "consolidating" | "consolidation_abandoned" | "graph_abandoned", ...}; a consolidation ends
# with build_done ("consolidation": true) or build_failed; the graph step of a build that
# published before it starts with build_started and ends with build_done ("graph": true).
WatchEvent = dict
Emit = Callable[[WatchEvent], None]


@dataclass
class WatchOptions:
    repo: Path
    store_dir: Path | None = None
    quiet_ms: int = DEFAULT_QUIET_MS
    max_wait_ms: int = DEFAULT_MAX_WAIT_MS
    stop: threading.Event | None = None  # set it to end `watch` (another thread, a test)
    initial_build: bool = True  # catch up with changes made while nothing watched


class ChangeFilter:
    """Which changed paths can change the work-tree index of `root` (see the module doc)."""

    def __init__(self, root: Path, store_root: Path) -> None:
        self.root = os.path.realpath(root)
        self.prefix = os.path.join(self.root, "")
        self.store = os.path.realpath(store_root)
        self.git_dir = os.path.join(self.root, ".git")
        self.is_git = os.path.isdir(self.git_dir)

    def quick(self, _change: object, path: str) -> bool:
        """watchfiles' per-event filter: no store, no .git but its HEAD. Cheap, no I/O."""
        if path == self.store or path.startswith(self.store + os.sep):
            return False
        if path == self.git_dir or path.startswith(self.git_dir + os.sep):
            return path == os.path.join(self.git_dir, "HEAD")
        return path.startswith(self.prefix)

    def relevant(self, paths: Iterable[str]) -> list[str]:
        """The repository-relative paths among `paths` (absolute) the index may care about."""
        rel = sorted({os.path.relpath(p, self.root).replace(os.sep, "/")
                      for p in paths if self.quick(None, p)})
        if not rel:
            return []
        try:
            rules = sources.worktree_rules(Path(self.root))
            rel = [p for p in rel if p.rsplit("/", 1)[-1] in RULE_NAMES or not rules.excluded(p)]
        except CodeagentError:
            pass  # a malformed rule file: let the build say so
        ignored = self._git_ignored([p for p in rel if not p.startswith(".git/")])
        return [p for p in rel if p not in ignored or p.rsplit("/", 1)[-1] in RULE_NAMES]

    def settled_before(self, rel: list[str], since_ns: int) -> bool:
        """Did every path last change before `since_ns` (a build started then saw them)? A
        deleted path cannot say when: False."""
        for p in rel:
            try:
                st = os.lstat(os.path.join(self.root, p))
            except OSError:
                return False
            if max(st.st_mtime_ns, st.st_ctime_ns) >= since_ns:
                return False
        return True

    def wait_for_git(self, stop: threading.Event | None) -> None:
        """Wait (a bounded while) for a git command holding the index lock, such as a
        checkout still writing files: its changes then make one build, not several."""
        lock = os.path.join(self.git_dir, "index.lock")
        deadline = time.monotonic() + GIT_BUSY_WAIT
        while os.path.exists(lock) and time.monotonic() < deadline:
            if stop is not None and stop.wait(0.05):
                return
            if stop is None:
                time.sleep(0.05)

    def _git_ignored(self, rel: list[str]) -> set[str]:
        """Paths .gitignore ignores (tracked files never are, as `git ls-files` lists them)."""
        if not self.is_git or not rel:
            return set()
        proc = subprocess.run(["git", "-C", self.root, "check-ignore", "-z", "--stdin"],
                              input=b"\0".join(os.fsencode(p) for p in rel) + b"\0",
                              capture_output=True, check=False)
        if proc.returncode not in (0, 1):
            return set()
        return {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}


def build_args(root: Path, store_dir: Path | None, consolidate: bool = False, graph_later: bool = False) -> list[str]:
    """The `codeagent` arguments of one incremental work-tree build (JSON on stdout), or of
    the consolidation of its overlay; `graph_later`: a small change is published before its
    graph step (the next build runs it)."""
    store = ["--store", str(store_dir)] if store_dir else []
    return ["build", str(root), "--worktree", "--json", "--wait", "60", *store,
            "--consolidate" if consolidate else "--consolidate-later", *(["--graph-later"] if graph_later else [])]


def run_build(root: Path, store_dir: Path | None, builder: Builder) -> WatchEvent:
    """Build the work tree in a child process of `builder`, publishing a small change before
    its graph step; its result as a build_done or build_failed event. A Ctrl-C (or any error
    here) kills the child before it propagates."""
    started = time.monotonic()
    return build_event(builder.run(build_args(root, store_dir, graph_later=True)), started)


def build_event(reply: tuple[int, str, str, float | None], started: float) -> WatchEvent:
    """A build's answer from the builder as a build_done or build_failed event."""
    code, out, err, cpu = reply
    seconds = round(time.monotonic() - started, 3)
    try:
        body = json.loads(out)
    except ValueError:
        lines = err.strip().splitlines()
        body = {"error": {"code": "internal_error", "message": lines[-1] if lines else "build failed"}}
    if code != 0 or "error" in body:
        return {"event": "build_failed", "seconds": seconds, "exit_code": code,
                "error": body.get("error", {"message": "build failed"})}
    return {"event": "build_done", "seconds": seconds, "at": round(time.time(), 3), "cpu": cpu,
            "phases": body.get("phases"), "changed": body["changed"],
            "ref": body["ref"], "manifest_id": body["manifest_id"],
            "files_total": body["files_total"], "files_parsed": body["files_parsed"],
            "consolidation_due": bool(body.get("consolidation_due")),
            "graph_pending": bool(body.get("graph_pending"))}


class Consolidation:
    """The watcher's background builds: the graph step of an overlay published before it, at
    once, and the consolidation of a grown overlay, when idle. A change interrupts either."""

    def __init__(self, root: Path, store_dir: Path | None, builder: Builder, emit: Emit) -> None:
        self.root, self.store_dir, self.builder, self.emit = root, store_dir, builder, emit
        self.due = False
        self.graph_due = False  # the last build published before its graph step
        self.graph = False  # the running job is that graph step, not a consolidation
        self.job: Job | None = None
        self.started, self.started_ns = 0.0, 0
        self.read_ns = 0  # when the last finished consolidation started reading the work tree
        self.active_at = time.monotonic()  # the last change or build end

    def after_build(self, event: WatchEvent) -> None:
        self.active_at = time.monotonic()
        if event["event"] == "build_done":
            self.graph_due = bool(event.get("graph_pending"))
            if event["changed"]:
                self.due = bool(event.get("consolidation_due"))

    def tick(self) -> None:
        """Report a finished background build, or start a due graph step at once or a due
        consolidation once idle."""
        if self.job is not None:
            if self.job.done.is_set():
                self._finish(self.job.wait())
            return
        if self.graph_due:
            self.graph_due, self.graph = False, True
            self.emit({"event": "build_started", "changes": 0, "graph": True})
            self._start(build_args(self.root, self.store_dir), BACKGROUND_NICE)
        elif self.due and time.monotonic() - self.active_at >= CONSOLIDATE_IDLE:
            self.graph = False
            self.emit({"event": "consolidating"})
            self._start(build_args(self.root, self.store_dir, True))

    def _start(self, argv: list[str], nice: int = 0) -> None:
        self.started, self.started_ns = time.monotonic(), time.time_ns()
        self.job = self.builder.start(argv, nice)

    def abandon(self) -> None:
        """Stop a running background build (a change came): the next build publishes before
        its graph step again, and a consolidation is tried again when idle."""
        self.active_at = time.monotonic()
        if self.job is None:
            return
        reply = self.job.cancel()
        if reply[0] == 0:
            self._finish(reply)  # it ended before the interrupt reached it
        else:
            self.job = None
            self.emit({"event": "graph_abandoned" if self.graph else "consolidation_abandoned"})

    def _finish(self, reply: tuple[int, str, str, float | None]) -> None:
        self.job = None
        event = build_event(reply, self.started)
        if not self.graph:
            self.due = False  # a failed one is tried again once a build says so
        elif event["event"] == "build_done" and event["changed"]:
            self.due = self.due or event["consolidation_due"]
        self.active_at = time.monotonic()
        if event["event"] == "build_done":
            self.read_ns = self.started_ns
        self.emit({**event, "graph": True} if self.graph else {**event, "consolidation": True})


def _root_and_store(opts: WatchOptions) -> tuple[Path, Path]:
    repo = sources.require_repo(opts.repo.resolve())
    root = sources.git_toplevel(repo) or repo
    return root, (opts.store_dir.resolve() if opts.store_dir else root / ".codeagent")


def watch(opts: WatchOptions, emit: Emit) -> None:
    """Build the work tree after each batch of relevant changes until `opts.stop` is set
    (or a Ctrl-C, which propagates once the running build is killed)."""
    from watchfiles import watch as fs_watch

    root, store_root = _root_and_store(opts)
    if not root.is_dir():
        raise NotARepository(f"{root} is not a directory")
    changes_filter = ChangeFilter(root, store_root)
    store_arg = opts.store_dir.resolve() if opts.store_dir else None
    # yield_on_timeout: the first (empty) batch comes once the watch is in place: `watching`
    # is said then, and the initial build cannot miss a change made while it runs
    batches = fs_watch(changes_filter.root, watch_filter=changes_filter.quick, debounce=opts.max_wait_ms,
                       step=opts.quiet_ms, stop_event=opts.stop, raise_interrupt=True,
                       rust_timeout=500, yield_on_timeout=True)
    builder = Builder()
    try:
        _follow(opts, emit, batches, changes_filter, root, store_arg, builder)
    finally:
        builder.stop()


def _follow(opts: WatchOptions, emit: Emit, batches: Iterator[set], changes_filter: ChangeFilter,
            root: Path, store_arg: Path | None, builder: Builder) -> None:
    catch_up, last_build_ns, started = opts.initial_build, 0, False
    consolidation = Consolidation(root, store_arg, builder, emit)
    try:
        for batch in _watched(batches):
            if not started:
                started = True
                emit({"event": "watching", "root": str(root), "quiet_ms": opts.quiet_ms})
            paths = changes_filter.relevant(path for _, path in batch)
            if not catch_up and (not paths or changes_filter.settled_before(paths, last_build_ns)):
                consolidation.tick()
                last_build_ns = max(last_build_ns, consolidation.read_ns)
                continue  # nothing relevant, or changes the previous build already read
            consolidation.abandon()
            if not catch_up and changes_filter.settled_before(paths, consolidation.read_ns):
                continue  # a consolidation that ended meanwhile read them
            catch_up = False
            changes_filter.wait_for_git(opts.stop)
            if paths:
                emit({"event": "changes", "count": len(paths), "sample": paths[:3]})
            emit({"event": "build_started", "changes": len(paths)})
            last_build_ns = time.time_ns()
            event = run_build(root, store_arg, builder)
            consolidation.after_build(event)
            emit(event)
            consolidation.tick()  # a graph step due starts at once
    finally:
        if consolidation.job is not None:
            consolidation.job.cancel()


def _watched(batches: Iterator[set]) -> Iterator[set]:
    """The batches; the operating system refusing to watch is an error saying what to do."""
    try:
        yield from batches
    except (OSError, RuntimeError) as exc:  # RuntimeError: watchfiles' internal error type
        raise CodeagentError(f"cannot watch the work tree: {exc}",
                             hint="on Linux raise the inotify limits (sysctl fs.inotify.max_user_watches"
                                  " and fs.inotify.max_user_instances), then start it again") from exc


def describe(event: WatchEvent) -> str | None:
    """One progress line for a person (None: nothing to say)."""
    kind = event["event"]
    if kind == "watching":
        return (f"watching {event['root']} (builds after {event['quiet_ms']} ms without "
                "changes; Ctrl-C stops)")
    if kind == "changes":
        more = f" and {event['count'] - len(event['sample'])} more" if event["count"] > len(event["sample"]) else ""
        return f"changed: {', '.join(event['sample'])}{more}"
    if kind == "build_done":
        if event.get("graph"):
            return f"graph of {event['manifest_id'][:12]} done ({event['seconds']:.2f}s)"
        if event.get("consolidation"):
            return f"consolidated {event['ref']} -> {event['manifest_id'][:12]} ({event['seconds']:.2f}s)"
        if not event["changed"]:
            return f"up to date: {event['ref']} is {event['manifest_id'][:12]} ({event['seconds']:.2f}s)"
        return (f"indexed {event['ref']} -> {event['manifest_id'][:12]}: {event['files_parsed']} of "
                f"{event['files_total']} files parsed ({event['seconds']:.2f}s)")
    if kind == "consolidating":
        return "consolidating the overlay into a new base (the work tree is idle)"
    if kind == "consolidation_abandoned":
        return "consolidation interrupted by a change: building that first"
    if kind == "graph_abandoned":
        return "graph step interrupted by a change: the next build runs it"
    if kind == "build_failed":
        err = event["error"]
        return f"build failed: {err.get('message')}" + (f" ({err['hint']})" if err.get("hint") else "")
    return None
