"""`codeagent sync`: download a published index, verify it, assemble it, swap the ref.

Order: choose the index (the ref, else the nearest published ancestor), fetch its manifest
(delta: only chunks no local manifest has), refuse it if this build cannot read it, fetch
the objects the store lacks (each verified before it enters the store), seed the action
cache from the manifest so a local build reuses every shard, assemble, then swap the
local ref. Any failure before the swap leaves the previous local index as it was.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from ... import format as fmt
from ...embedding import KNOWN_EMBEDDERS, get_embedder, parse_embedder_id
from ...errors import CodeagentError, IndexIncompatible
from ...format.manifest import Manifest
from ...refs import WORKTREE_REF
from ...sources import git_toplevel, resolve_ref
from ...store import Store, StoreLock, append_log
from ...store.scores import is_commit_sha, keep_scores
from ..build import BuildOptions, build
from .remote import open_remote
from .resolve import MAX_ANCESTORS, SyncTarget, choose
from .transfer import ATTEMPTS, Progress, TransferStats, fetch_into_store, fetch_manifest


@dataclass
class SyncOptions:
    repo: Path
    source: str
    ref: str | None = None
    store_dir: Path | None = None
    require_commit: str | None = None
    build: bool = False
    jobs: int = 8
    attempts: int = ATTEMPTS
    max_ancestors: int = MAX_ANCESTORS
    lock_wait: float = 0.0
    progress: Progress | None = None


@dataclass
class SyncResult:
    remote: str
    target: SyncTarget
    commit: str | None = None
    previous_manifest_id: str | None = None
    objects_total: int = 0
    objects_present: int = 0
    stats: TransferStats = field(default_factory=TransferStats)
    seconds_fetch: float = 0.0
    seconds_assemble: float = 0.0
    seconds: float = 0.0
    build: dict | None = None

    @property
    def changed(self) -> bool:
        return self.previous_manifest_id != self.target.manifest_id

    def to_dict(self) -> dict:
        return {
            "remote": self.remote, **self.target.to_dict(), "commit": self.commit,
            "previous_manifest_id": self.previous_manifest_id, "changed": self.changed,
            "objects_total": self.objects_total, "objects_present": self.objects_present,
            "objects_fetched": self.stats.objects,
            "manifest_chunks_fetched": self.stats.chunks, "bytes_fetched": self.stats.bytes,
            "bytes_received": self.stats.bytes_received, "retries": self.stats.retries,
            "problems": self.stats.problems, "seconds_fetch": round(self.seconds_fetch, 4),
            "seconds_assemble": round(self.seconds_assemble, 4), "seconds": round(self.seconds, 4),
            "build": self.build,
        }


def check_readable(manifest: Manifest) -> None:
    """Refuse a manifest whose extractor or embedder this build cannot read (schema: in from_bytes)."""
    if manifest.extractor_version != fmt.EXTRACTOR_VERSION:
        raise IndexIncompatible(
            f"the published index was made by extractor version {manifest.extractor_version}, "
            f"this codeagent reads {fmt.EXTRACTOR_VERSION}",
            hint="upgrade codeagent to the version CI uses, or build locally with `codeagent build`")
    if manifest.embedder_id:
        name = parse_embedder_id(manifest.embedder_id)[0] if "-v" in manifest.embedder_id else ""
        if name not in KNOWN_EMBEDDERS:
            raise IndexIncompatible(f"the published index's vectors come from embedder "
                                    f"{manifest.embedder_id!r}, unknown to this codeagent",
                                    hint="upgrade codeagent, or build locally with `codeagent build`")
        if name == "hash":
            get_embedder(manifest.embedder_id)


def check_commit(manifest: Manifest, required: str | None, repo: Path | None) -> None:
    if not required:
        return
    want = required.lower()
    if repo is not None and not all(c in "0123456789abcdef" for c in want):
        want = resolve_ref(repo, required)[1]
    if len(want) < 7 or not (manifest.commit or "").startswith(want):
        raise IndexIncompatible(
            f"the published index is for commit {(manifest.commit or 'none')[:12]}, "
            f"not the required {required}",
            hint="wait for CI to publish that commit, or build it locally with `codeagent build`")


def _local_manifests(store: Store) -> dict[str, bytes]:
    out = {}
    for mid in set(store.list_refs().values()):
        try:
            out[mid] = store.get(mid)
        except CodeagentError:
            continue
    return out


def _assembly_base(store: Store, manifest: Manifest, local: dict[str, bytes]) -> tuple[Manifest, str] | None:
    """The assembled local manifest sharing the most entries: assembly copies it, then patches."""
    best, best_shared = None, 0
    new = set(manifest.files)
    for mid, data in local.items():
        if not store.is_assembled(mid):
            continue
        try:
            old = Manifest.from_bytes(data)
        except CodeagentError:
            continue
        shared = len(new.intersection(old.files))
        if shared > best_shared:
            best, best_shared = (old, mid), shared
    return best


def seed_actions(store: Store, manifest: Manifest) -> int:
    """Record shard key -> shard for every entry, so a local build reuses the synced shards."""
    todo = {}
    for f in manifest.files:
        if f.shard_key and (f.shard or f.reason) and store.get_action(f.shard_key) is None:
            todo[f.shard_key] = f.shard or f"skip:{f.reason}"
    with store.batched_actions():
        for key, value in todo.items():
            store.put_action(key, value)
    return len(todo)


def sync(opts: SyncOptions) -> SyncResult:
    """Sync the published index of `opts.ref` (default: the current branch); see module doc."""
    started = time.perf_counter()
    progress = opts.progress or (lambda *a: None)
    repo = opts.repo.resolve()
    top = git_toplevel(repo) if repo.exists() else None
    store = Store(opts.store_dir or (top or repo) / ".codeagent", create=True)
    with open_remote(opts.source) as remote:
        target = choose(remote, top, opts.ref, opts.max_ancestors)
        result = SyncResult(remote.label, target)
        with StoreLock(store, wait=opts.lock_wait):
            result.previous_manifest_id = store.read_ref(target.local_ref)
            local = _local_manifests(store)
            mid = target.manifest_id
            data = fetch_manifest(remote, store, mid, list(local.values()), result.stats,
                                  attempts=opts.attempts)
            manifest = Manifest.from_bytes(data)
            check_readable(manifest)
            check_commit(manifest, opts.require_commit, top)
            result.commit = manifest.commit
            needed = sorted(manifest.referenced_objects())
            result.objects_total = len(needed)
            result.objects_present = sum(1 for oid in needed if store.has(oid))
            fetch_into_store(remote, store, needed, result.stats, jobs=opts.jobs,
                             attempts=opts.attempts, progress=progress)
            result.seconds_fetch = time.perf_counter() - started
            _install(store, manifest, mid, target.local_ref, local, result, progress, opts.jobs)
            _bring_scores(remote, store, manifest.commit)
    result.seconds = time.perf_counter() - started
    append_log(store, "syncs", {"remote": result.remote, "ref": target.local_ref, "manifest_id": mid,
                                "bytes": result.stats.bytes, "seconds": round(result.seconds, 3),
                                "at": int(time.time())})
    if opts.build:
        result.build = _build_on_top(opts, top or repo, store, target.manifest_id)
        result.seconds = time.perf_counter() - started
    return result


def _bring_scores(remote, store: Store, commit: str | None) -> None:
    """Keep the search-quality figures published for the synced commit (an unreadable or
    mismatched document is left on the remote: figures never fail a sync)."""
    if not is_commit_sha(commit):
        return
    data = remote.read_scores(commit)
    if data is not None:
        keep_scores(store, commit, data)


def _install(store: Store, manifest: Manifest, mid: str, ref: str, local: dict[str, bytes],
             result: SyncResult, progress: Progress, jobs: int) -> None:
    from ..assemble.pipeline import assemble, prune_assembled  # pyarrow, DuckDB: +250-350 ms, only to install
    from ..assemble.plan import Assembly  # with the two above: only to install

    seed_actions(store, manifest)
    t0 = time.perf_counter()
    assemble(Assembly(store, manifest, mid, progress=progress).on(_assembly_base(store, manifest, local)))
    result.seconds_assemble = time.perf_counter() - t0
    store.set_ref(ref, mid)
    keep = set(store.list_refs().values())
    if result.previous_manifest_id:
        keep.add(result.previous_manifest_id)
    prune_assembled(store, keep)


def _build_on_top(opts: SyncOptions, repo: Path, store: Store, synced_id: str) -> dict:
    """Index the work tree. With no work-tree index yet, the synced one is its starting point,
    so the build reuses its entries and patches a copy of its database instead of assembling
    every file again; the build swaps the ref to the work tree's own manifest."""
    with StoreLock(store, wait=opts.lock_wait):
        if store.read_ref(WORKTREE_REF) is None:
            store.set_ref(WORKTREE_REF, synced_id)
    res = build(BuildOptions(repo=repo, store_dir=opts.store_dir, lock_wait=opts.lock_wait,
                             progress=opts.progress))
    return res.to_dict()
