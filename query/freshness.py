"""Freshness on every request, without a work-tree scan per request.

`refs.freshness` compares a work tree with its manifest (git ls-files, the stat cache, a hash
of every file whose stat changed): 40-100 ms on a large repository, too much for each request.
The answer only changes when something on disk does, so it is kept until something it was
computed from changes: every file it saw, their directories (where files are created and
deleted), the ignore rules and git's index (for a branch's index: git's ref files). On Linux
inotify watches those directories (query.dirwatch): a request whose watch queue is empty keeps
the answer for the cost of one read, and the kernel queues an event before a writer's call
returns, so an edit is seen by the next request. Elsewhere a stat signature of every path is
compared instead; as in git's "racy git" rule, a signature holding an mtime close to the
moment it was taken is not trusted (file systems stamp times from a coarse clock: two writes a
few ms apart can share an mtime). Watches and signatures are set up before the comparison, so
a change made while comparing is seen by the next request.
"""

from __future__ import annotations

import contextvars
import os
import posixpath
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import refs as refnames
from ..format.manifest import load_manifest
from ..repo_config import RULE_FILES
from ..sources import RACY_NS  # mtimes this close to a signature's moment may not show a later write
from ..store import Store
from .dirwatch import DirWatch

# Besides the files: what decides which files the work tree has.
WATCHED = (".gitignore", ".git/index", ".git/info/exclude", *RULE_FILES)
INOTIFY = True  # False: stat signatures only (as where inotify is missing)
MAX_KEPT = 8  # answers kept per process (a server follows one or two manifests)
# A server's first look at a manifest compares every file whose stat the build's cache does not
# hold: all of them after a `touch`, a copy or a restore (1.6 s on 10x the stdlib, 0.3 s with
# the files in the page cache). A request gives it this long, then answers `unknown` while it
# goes on for the next request.
FIRST_LOOK_WAIT = 0.2


@dataclass(frozen=True)
class _Known:
    paths: tuple[str, ...]  # what the answer was computed from, repository-relative
    signature: tuple  # their stats (without a watch); () compares again next time
    answer: refnames.Freshness
    watch: DirWatch | None = None  # inotify on their directories
    again: bool = False  # compare once more (directories watched only after the comparison)


@dataclass
class _Running:
    """A look on a thread of its own: `done` is set once `answer` or `error` is."""
    done: threading.Event = field(default_factory=threading.Event)
    started: float = field(default_factory=time.monotonic)
    answer: refnames.Freshness | None = None
    error: Exception | None = None


_known: dict[tuple[str, str], _Known] = {}
_running: dict[tuple[str, str, str], _Running] = {}
_running_lock = threading.Lock()
_lock = threading.Lock()  # held across a watch's check and the comparison it may start
_looked: contextvars.ContextVar[dict | None] = contextvars.ContextVar("codeagent_fresh", default=None)


@contextmanager
def one_look() -> Iterator[None]:
    """Within (one request): the repository is looked at once per manifest, however many
    parts of the answer ask, so they agree and the stat sweep is paid once."""
    token = _looked.set({})
    try:
        yield
    finally:
        _looked.reset(token)


def worktree_freshness(store: Store, repo: Path | None, manifest_id: str, *,
                       first_wait: float | None = None) -> refnames.Freshness:
    """`refs.freshness` of the manifest against the repository as it is now. With `first_wait`
    (a server's requests), a first look (no answer kept: the work tree compared in full) is
    given that many seconds from its start; past them requests answer `unknown` at once, and
    the look goes on for the next."""
    looked = _looked.get()
    key = (str(store.root), manifest_id, str(repo))
    if looked is not None and key in looked:
        return looked[key]
    if first_wait is not None and repo is not None and key[:2] not in _known:
        running = _look_on_a_thread(store, repo, manifest_id)
        if not running.done.wait(max(0.0, running.started + first_wait - time.monotonic())):
            answer = refnames.Freshness("unknown", detail="the work tree is still being compared with the index")
        elif running.error is not None:
            raise running.error
        else:
            answer = running.answer
    else:
        answer = _look(store, repo, manifest_id)
    if looked is not None:
        looked[key] = answer
    return answer


def _look(store: Store, repo: Path | None, manifest_id: str) -> refnames.Freshness:
    if repo is None:
        return refnames.freshness(store, repo, load_manifest(store, manifest_id))
    key, root = (str(store.root), manifest_id), str(repo)
    with _lock:
        known = _known.get(key)
        if known is not None and known.watch is not None:
            if known.watch.changed() or known.again:
                if not known.watch.add(_abs(root, _directories(known.paths))):
                    known.watch.close()
                    _known.pop(key, None)
                    return refnames.freshness(store, repo, load_manifest(store, manifest_id))
                return _compare(store, repo, key, known.paths, known.watch)
            return known.answer
        manifest = None
        if known is None:
            manifest = load_manifest(store, manifest_id)
            paths = _watched(repo, manifest)
            watch = DirWatch.open(_abs(root, _directories(paths))) if paths and INOTIFY else None
            if watch is not None:
                return _compare(store, repo, key, paths, watch, manifest)
        else:
            paths = known.paths
        taken = time.time_ns()
        now = signature(root, paths)
        if known is not None and now == known.signature:
            return known.answer
        answer = refnames.freshness(store, repo, manifest or load_manifest(store, manifest_id))
        if answer.state == "unknown" or not paths:
            return answer
        if _racy(now, taken):
            now = ()  # compare again next time
        if not set(paths).issuperset(answer.added):
            # Stat the added files too from now on; this signature misses them, so the next
            # request compares once more and keeps a signature that covers them.
            paths, now = watched_paths(set(paths) | set(answer.added)), ()
        _keep(key, _Known(paths, now, answer))
        return answer


def _compare(store: Store, repo: Path, key: tuple[str, str], paths: tuple[str, ...],
             watch: DirWatch, manifest=None) -> refnames.Freshness:
    """The full comparison under an open watch (events since are queued for the next look)."""
    answer = refnames.freshness(store, repo, manifest or load_manifest(store, key[1]))
    if answer.state == "unknown":
        watch.close()
        with_known = _known.pop(key, None)
        if with_known is not None and with_known.watch is not watch and with_known.watch:
            with_known.watch.close()
        return answer
    again = False
    if not set(paths).issuperset(answer.added):
        paths = watched_paths(set(paths) | set(answer.added))
        missing = _directories(paths) - {os.path.relpath(d, repo) if d != str(repo) else ""
                                         for d in watch.directories}
        again = bool(missing)  # watched only now: a change before this was not queued
        if not watch.add(_abs(str(repo), missing)):
            watch.close()
            watch, again = None, False
            _keep(key, _Known(paths, (), answer))
            return answer
    _keep(key, _Known(paths, (), answer, watch, again))
    return answer


def _keep(key: tuple[str, str], known: _Known) -> None:
    """Keep `known` (under _lock): the newest answers of a process, each holding a watch (an
    inotify instance and a descriptor, both limited per user)."""
    old = _known.pop(key, None)
    if old is not None and old.watch is not None and old.watch is not known.watch:
        old.watch.close()
    _known[key] = known
    while len(_known) > MAX_KEPT:
        gone = _known.pop(next(iter(_known)))
        if gone.watch is not None:
            gone.watch.close()


def _directories(paths) -> set[str]:
    return {posixpath.dirname(p) for p in paths}


def _abs(root: str, relative) -> list[str]:
    return [os.path.join(root, d) if d else root for d in relative]


def _watched(repo: Path, manifest) -> tuple[str, ...]:
    """What decides the manifest's freshness: a work tree's files, or a ref's git files
    (none when git keeps them elsewhere, as in a linked work tree: then every request asks
    git)."""
    if manifest.source == "worktree":
        return watched_paths(f.path for f in manifest.files)
    if manifest.ref.startswith("commits/"):
        return ("",)  # pinned: always fresh
    if not (repo / ".git").is_dir():
        return ()
    return (".git/HEAD", ".git/packed-refs", f".git/refs/{manifest.ref}")


def watched_paths(files) -> tuple[str, ...]:
    """The files, every directory holding one (the root included), and the rule files."""
    out = set(files)
    for path in list(out):
        parent = posixpath.dirname(path)
        while parent not in out:
            out.add(parent)
            if not parent:
                break
            parent = posixpath.dirname(parent)
    out.add("")
    out.update(WATCHED)
    return tuple(sorted(out))


def _racy(stats: tuple, taken_ns: int) -> bool:
    return any(st is not None and st[0] >= taken_ns - RACY_NS for st in stats)


def signature(root: str, paths: tuple[str, ...]) -> tuple:
    """(mtime, size, inode, ctime) of each path, None for a missing one."""
    prefix = os.path.join(root, "")
    out = []
    for path in paths:
        try:
            st = os.lstat(prefix + path if path else root)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns))
    return tuple(out)


def look_beside(store: Store, repo: Path | None, manifest_id: str) -> None:
    """Work out a manifest's freshness on a thread of its own (mostly git and stat calls, so
    it runs beside a reader loading the manifest's tables); the next look finds it kept."""
    _look_on_a_thread(store, repo, manifest_id)


def _look_on_a_thread(store: Store, repo: Path | None, manifest_id: str) -> _Running:
    """The look at this manifest running on a thread of its own: one started now, or the one
    already running (a request and the server's warming ask at once)."""
    key = (str(store.root), manifest_id, str(repo))
    with _running_lock:
        running = _running.get(key)
        if running is not None:
            return running
        running = _running[key] = _Running()

    def look() -> None:
        try:
            running.answer = _look(store, repo, manifest_id)
        except Exception as exc:  # handed to a request waiting for it, which reports it
            running.error = exc
        finally:
            with _running_lock:
                _running.pop(key, None)
            running.done.set()
    threading.Thread(target=look, name="codeagent-freshness", daemon=True).start()
    return running
