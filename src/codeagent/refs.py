"""Naming manifests: ref names, branch names and manifest ids; work-tree freshness."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import format as fmt
from . import sources
from .errors import CodeagentError, IndexMissing, InvalidParameter
from .hashing import hash_bytes
from .format.manifest import Manifest, load_manifest
from .store import Store, read_log

WORKTREE_REF = "worktree"


def build_hint(repo: Path | None, spec: str | None) -> str:
    where = f" {repo}" if repo else ""
    if spec and spec != WORKTREE_REF:
        return f"run `codeagent build{where} --ref {spec.removeprefix('heads/')}`"
    return f"run `codeagent build{where}`"


def candidate_refs(spec: str, repo: Path | None = None) -> Iterator[str]:
    """Store ref names a user's spelling may mean, most specific first: the name as stored,
    the branch, tag, remote or commit it abbreviates, then (with `repo`) what git resolves it
    to, so `HEAD`, `refs/heads/main`, a short sha or `main~2` name the ref a build wrote. Git
    is asked only when the spellings before it were not enough."""
    if spec.startswith(("heads/", "tags/", "remotes/", "commits/", "repos/")) or spec == WORKTREE_REF:  # repos/: a fleet store (format/fleet.py)
        yield spec
    elif spec.startswith("refs/"):
        yield spec[len("refs/"):]
    else:
        yield from (f"heads/{spec}", f"tags/{spec}", f"remotes/{spec}", f"commits/{spec}")
    if repo is None or spec == WORKTREE_REF or not repo.exists():
        return
    try:
        name, sha = sources.resolve_ref(repo, spec)
    except CodeagentError:
        return
    yield name
    if name != f"commits/{sha}":
        yield f"commits/{sha}"


def default_ref(store: Store, repo: Path | None) -> str | None:
    """The work-tree index if there is one, else the current branch's, else the only ref."""
    refs = store.list_refs()
    if WORKTREE_REF in refs:
        return WORKTREE_REF
    branch = sources.current_branch(repo) if repo else None
    if branch and f"heads/{branch}" in refs:
        return f"heads/{branch}"
    return next(iter(refs)) if len(refs) == 1 else None


def resolve(store: Store, spec: str | None, repo: Path | None = None) -> tuple[str | None, str]:
    """(ref name or None, manifest id) for any spelling of an index: a store ref name, a
    branch, tag or remote (bare or under refs/), anything git resolves in `repo` (HEAD, a
    sha, main~1: the ref indexed at that commit), or a manifest id (prefix). Every command
    names indexes through this, so a name one command wrote, every other one reads."""
    if spec is None:
        ref = default_ref(store, repo)
        if ref is None:
            refs = store.list_refs()
            if refs:
                raise InvalidParameter(
                    f"several indexes exist ({', '.join(refs)}); say which with --ref")
            raise IndexMissing("this repository has no index yet", hint=build_hint(repo, None))
        return ref, store.read_ref(ref)  # type: ignore[return-value]
    for ref in candidate_refs(spec, repo):
        try:
            mid = store.read_ref(ref)
        except InvalidParameter:
            continue
        if mid:
            return ref, mid
    at_commit = _ref_at_commit(store, spec, repo)
    if at_commit is not None:
        return at_commit
    if len(spec) >= 8 and all(c in "0123456789abcdef" for c in spec):
        matches = [o for o in _manifest_candidates(store) if o.startswith(spec)]
        if len(matches) == 1:
            return None, matches[0]
        if len(matches) > 1:
            raise InvalidParameter(f"manifest id prefix {spec} is ambiguous ({len(matches)} matches)")
    raise IndexMissing(f"no index for {spec!r} in {store.root}", hint=build_hint(repo, spec))


def _ref_at_commit(store: Store, spec: str, repo: Path | None) -> tuple[str, str] | None:
    """The ref whose index is of the commit `spec` names in `repo` (a sha of a branch's tip
    names the branch's index), preferring branches, then tags."""
    if repo is None or spec == WORKTREE_REF or not repo.exists():
        return None
    try:
        _, sha = sources.resolve_ref(repo, spec)
    except CodeagentError:
        return None
    order = ("heads/", "tags/", "remotes/", "commits/")
    refs = store.list_refs()
    for ref in sorted((r for r in refs if r.startswith(order)),
                      key=lambda r: next(i for i, p in enumerate(order) if r.startswith(p))):
        mid = refs[ref]
        try:
            if load_manifest(store, mid).commit == sha:
                return ref, mid
        except CodeagentError:
            continue
    return None


def _manifest_candidates(store: Store) -> list[str]:
    ids = set(store.list_refs().values())
    base = store.root / fmt.ASSEMBLED_DIR
    if base.exists():
        ids.update(p.name for p in base.iterdir())
    ids.update(r.get("manifest_id", "") for r in read_log(store, "builds", limit=1000))
    return sorted(i for i in ids if i and store.has(i))


@dataclass(frozen=True)
class Freshness:
    state: str  # fresh | stale | unknown
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    detail: str = ""

    def to_dict(self, limit: int = 20) -> dict:
        return {"state": self.state, "added": list(self.added[:limit]),
                "removed": list(self.removed[:limit]), "modified": list(self.modified[:limit]),
                "changed_count": len(self.added) + len(self.removed) + len(self.modified),
                "detail": self.detail}


def freshness(store: Store, repo: Path | None, manifest: Manifest) -> Freshness:
    """Does the index still describe the work tree (worktree manifests) or the ref's commit?"""
    if repo is None or not repo.exists():
        return Freshness("unknown", detail="repository not available")
    if manifest.source == "git":
        ref = manifest.ref
        if ref.startswith("commits/"):
            return Freshness("fresh", detail="pinned to a commit")
        try:
            _, sha = sources.resolve_ref(repo, ref.split("/", 1)[1] if "/" in ref else ref)
        except Exception:
            return Freshness("unknown", detail=f"{ref} not found in the repository")
        return Freshness("fresh" if sha == manifest.commit else "stale",
                         detail="" if sha == manifest.commit else f"{ref} moved to {sha[:12]}")
    cache = sources.JsonCache(store, "worktree-stat.json")
    try:
        rules = sources.worktree_rules(repo)
    except CodeagentError as exc:
        return Freshness("unknown", detail=exc.message)
    files = sources.walk_worktree(repo, store, cache, sys.maxsize, rules)  # no size cap: compare every blob
    indexed = {f.path: f for f in manifest.files}
    current = {f.path for f in files}
    added = sorted(current - indexed.keys())
    removed = sorted(indexed.keys() - current)
    modified = []
    for f in files:
        old = indexed.get(f.path)
        if old is None or f.skip or not old.blob:  # no blob recorded: nothing to compare with
            continue
        blob = f.blob
        if not blob:
            try:
                blob = hash_bytes(sources.read_worktree_file(repo, f))
            except OSError:
                continue
        if blob != old.blob:
            modified.append(f.path)
    state = "fresh" if not (added or removed or modified) else "stale"
    return Freshness(state, tuple(added), tuple(removed), tuple(modified))
