"""Which published index to sync: the ref asked for, else the nearest published ancestor.

A branch nobody has published yet usually forked from one that was: walk the commit's
first-parent history (then its other ancestors) and take the first commit the remote has
an index for (`commits/<sha>`, written by every publish).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...errors import IndexMissing, InvalidParameter
from ...refs import candidate_refs
from ... import sources
from .remote import Remote

MAX_ANCESTORS = 200


@dataclass(frozen=True)
class SyncTarget:
    manifest_id: str
    local_ref: str  # the local ref name the index is stored under
    requested: str  # what the user asked for (ref name or commit)
    remote_ref: str | None  # the remote ref it came from, None for commits/<sha>
    fallback_commit: str | None = None  # set when an ancestor's index is used
    distance: int = 0  # commits between the requested one and the fallback

    def to_dict(self) -> dict:
        return {"requested": self.requested, "remote_ref": self.remote_ref,
                "local_ref": self.local_ref, "manifest_id": self.manifest_id,
                "fallback_commit": self.fallback_commit, "distance": self.distance}


def _rev_list(repo: Path, start: str, *args: str, limit: int) -> list[str]:
    proc = subprocess.run(["git", "-C", str(repo), "rev-list", f"--max-count={limit}", *args, start],
                          capture_output=True, text=True)
    return proc.stdout.split() if proc.returncode == 0 else []


def ancestors(repo: Path, commit: str, limit: int = MAX_ANCESTORS) -> list[str]:
    """`commit` and its ancestors: first-parent history first, then the rest by date."""
    first = _rev_list(repo, commit, "--first-parent", limit=limit)
    seen = set(first)
    rest = [c for c in _rev_list(repo, commit, "--date-order", limit=limit) if c not in seen]
    return (first + rest)[:limit]


def _published_commits(remote: Remote) -> dict[str, str]:
    return {v["commit"]: v["manifest"] for v in remote.refs_index().values() if v.get("commit")}


def nearest_published(remote: Remote, repo: Path, commit: str,
                      limit: int = MAX_ANCESTORS) -> tuple[str, str, int] | None:
    """(commit, manifest id, distance) of the nearest ancestor with a published index."""
    known = _published_commits(remote)
    for distance, sha in enumerate(ancestors(repo, commit, limit)):
        mid = known.get(sha) or remote.read_commit(sha)
        if mid:
            return sha, mid, distance
    return None


def _direct(remote: Remote, spec: str) -> tuple[str, str] | None:
    for name in candidate_refs(spec):
        try:
            mid = remote.read_ref(name)
        except InvalidParameter:
            continue
        if mid:
            return name, mid
    return None


def choose(remote: Remote, repo: Path | None, spec: str | None,
           limit: int = MAX_ANCESTORS) -> SyncTarget:
    """The index to sync for `spec` (default: the current branch); see module doc."""
    start: str | None = None
    if spec is None:
        if repo is None:
            raise InvalidParameter("no repository here, so there is no current branch",
                                   hint="pass --ref BRANCH")
        branch = sources.current_branch(repo)
        spec = f"heads/{branch}" if branch else None
        start = sources.head_commit(repo)
        if spec is None and start is None:
            raise InvalidParameter("the repository has no commits", hint="pass --ref BRANCH")
    if spec is not None:
        hit = _direct(remote, spec)
        if hit:
            return SyncTarget(hit[1], hit[0], spec, hit[0])
    if repo is not None and start is None and spec is not None:
        try:
            _, start = sources.resolve_ref(repo, spec.removeprefix("heads/"))
        except Exception:
            start = None
    requested = spec or (start or "")
    if start is not None and repo is not None:
        mid = remote.read_commit(start)
        if mid:
            return SyncTarget(mid, f"commits/{start}", requested, None, start, 0)
        found = nearest_published(remote, repo, start, limit)
        if found:
            sha, mid, distance = found
            return SyncTarget(mid, f"commits/{sha}", requested, None, sha, distance)
    remote.require_remote()
    published = ", ".join(list(remote.list_refs())[:10]) or "none"
    raise IndexMissing(
        f"{remote.label} has no index for {requested or 'this checkout'}"
        + (f" nor for any of its last {limit} ancestors" if start else ""),
        hint=f"published refs: {published}; pass --ref, or build locally with `codeagent build`")
