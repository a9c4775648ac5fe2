"""Publishing an index: objects first, then the manifest, then `commits/<sha>`, then the ref.

A reader of the remote therefore never sees a ref (or commit pointer) naming an object
that is not there yet. `bundle` publishes into a fresh tar file renamed into place.
"""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import InvalidParameter, StoreCorrupt
from ...format.manifest import load_manifest
from ...refs import WORKTREE_REF, resolve
from ...sources import current_branch, git_toplevel
from ...store import Store
from ...store.scores import scores_document
from .bundle import BundleBackend
from .remote import Remote, open_remote
from .transfer import Progress, TransferStats, upload_manifest, upload_objects


@dataclass
class PublishResult:
    remote: str
    refs: list[dict] = field(default_factory=list)  # {ref, manifest_id, commit, objects_total}
    stats: TransferStats = field(default_factory=TransferStats)
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {"remote": self.remote, "refs": self.refs, "objects_uploaded": self.stats.objects,
                "bytes_uploaded": self.stats.bytes, "seconds": round(self.seconds, 4)}


def open_store(repo: Path, store_dir: Path | None) -> tuple[Store, Path]:
    """The store of REPO (or --store) and the repository's top level."""
    repo = repo.resolve()
    top = git_toplevel(repo) if repo.exists() else None
    root = top or repo
    return Store(store_dir or root / ".codeagent"), root


def publish_ref(store: Store, repo: Path | None, spec: str | None) -> tuple[str, str]:
    """(ref, manifest id) to publish: `spec`, else the current branch's index."""
    if spec is None and repo is not None:
        branch = current_branch(repo)
        if branch and store.read_ref(f"heads/{branch}"):
            spec = f"heads/{branch}"
    ref, mid = resolve(store, spec, repo)
    if ref is None or ref == WORKTREE_REF:
        raise InvalidParameter(
            f"publish a committed tree, not {'a bare manifest id' if ref is None else 'the work tree'}",
            hint="build it with `codeagent build --ref BRANCH`, then `codeagent publish --ref BRANCH`")
    return ref, mid


def publish_into(remote: Remote, store: Store, ref: str, manifest_id: str, result: PublishResult, *,
                 jobs: int = 8, progress: Progress = lambda *a: None) -> None:
    manifest = load_manifest(store, manifest_id)
    needed = sorted(manifest.referenced_objects())
    absent = [oid for oid in needed if not store.has(oid)]
    if absent:
        raise StoreCorrupt(f"cannot publish {ref}: {len(absent)} objects it needs are missing locally "
                           f"(first {absent[0][:12]})", hint="run `codeagent verify`, then rebuild")
    upload_objects(remote, store, needed, result.stats, jobs=jobs, progress=progress)
    upload_manifest(remote, manifest_id, store.get(manifest_id), result.stats)
    if manifest.commit:
        remote.set_commit(manifest.commit, manifest_id)
        publish_scores(remote, store, manifest.commit)
    remote.set_ref(ref, manifest_id, manifest.commit)
    result.refs.append({"ref": ref, "manifest_id": manifest_id, "commit": manifest.commit,
                        "objects_total": len(needed)})


def publish_scores(remote: Remote, store: Store, commit: str) -> bool:
    """Upload the search-quality figures the store holds for `commit`, if any: the stored
    document's bytes, so the remote's file is the store's."""
    data = scores_document(store, commit)
    if data is None:
        return False
    remote.put_scores(commit, data)
    return True


def publish(repo: Path, dest: str, spec: str | None = None, *, store_dir: Path | None = None,
            jobs: int = 8, progress: Progress = lambda *a: None) -> PublishResult:
    """Upload the index of `spec` (default: the current branch) to the remote `dest`."""
    started = time.perf_counter()
    store, top = open_store(repo, store_dir)
    ref, mid = publish_ref(store, top, spec)
    with open_remote(dest, create=True) as remote:
        remote.init()
        result = PublishResult(remote.label)
        publish_into(remote, store, ref, mid, result, jobs=jobs, progress=progress)
    result.seconds = time.perf_counter() - started
    return result


def bundle(repo: Path, out: Path, specs: list[str] | None = None, *, store_dir: Path | None = None,
           progress: Progress = lambda *a: None) -> PublishResult:
    """Write the indexes of `specs` (default: the current branch) into one tar file `out`."""
    started = time.perf_counter()
    store, top = open_store(repo, store_dir)
    targets = [publish_ref(store, top, s) for s in (specs or [None])]
    out = out.resolve()
    tmp = out.parent / f".{out.name}.tmp-{secrets.token_hex(6)}"
    result = PublishResult(str(out))
    try:
        with Remote(BundleBackend(tmp, create=True)) as remote:
            remote.init()
            for ref, mid in targets:
                publish_into(remote, store, ref, mid, result, jobs=1, progress=progress)
        os.replace(tmp, out)
    finally:
        if tmp.exists():
            tmp.unlink()
    result.seconds = time.perf_counter() - started
    return result
