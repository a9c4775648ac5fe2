"""`codeagent status`: what the store holds and whether it still matches the repository."""

from __future__ import annotations

from pathlib import Path

from ..errors import CodeagentError, IndexMissing, StoreCorrupt
from ..format.manifest import Manifest, load_manifest
from ..refs import WORKTREE_REF
from ..sources import git_toplevel, require_repo
from ..store import Store, read_log
from ..store.scores import read_scores
from .freshness import worktree_freshness


def manifest_status(store: Store, root: Path, manifest_id: str,
                    manifest: Manifest | None = None) -> dict:
    """One manifest: what it indexed and whether it still matches the repository (the fields
    `codeagent status` gives for each ref and the MCP index_status for the one it serves)."""
    m = manifest or load_manifest(store, manifest_id)
    return {"manifest_id": manifest_id, "commit": m.commit, "source": m.source,
            "counts": m.counts, "schema_version": m.schema_version,
            "extractor_version": m.extractor_version, "embedder_id": m.embedder_id,
            "freshness": worktree_freshness(store, root, manifest_id).to_dict()}


def served_status(view, root: Path) -> dict:
    """The index `view` answers from, for the MCP index_status: `manifest_status` with the
    assembled row counts, the store's refs and its recent builds."""
    m = manifest_status(view.store, root, view.manifest_id)
    counts = dict(m["counts"])
    counts.update(symbols=view.count("symbols"), chunks=view.count("chunks"),
                  edges=view.count("edges"))
    return {**m, "counts": counts, "refs": sorted(view.store.list_refs()),
            "recent_builds": read_log(view.store, "builds", limit=10),
            "search_quality": read_scores(view.store, m["commit"])}


def file_states(store_dir: Path, manifest_id: str, paths: list[str]) -> list[dict]:
    """What manifest `manifest_id` holds for each path: `state` indexed, skipped (`reason`
    says why) or absent (deleted, ignored or never a file)."""
    entries = {f.path: f for f in load_manifest(Store(store_dir), manifest_id).files}
    out = []
    for p in paths:
        f = entries.get(p)
        state = "absent" if f is None else "indexed" if f.indexed else "skipped"
        out.append({"path": p, "state": state, "reason": f.reason if f is not None else ""})
    return out


def served_repository(repo: Path, store_dir: Path | None) -> tuple[Path, Path]:
    """(top directory, store directory) of the repository a server answers for: the git work
    tree holding `repo` (else `repo` itself) and `store_dir` or TOP/.codeagent."""
    repo = require_repo(repo.resolve())
    root = git_toplevel(repo) or repo
    return root, store_dir.resolve() if store_dir else root / ".codeagent"


def store_status(repo: Path, store_dir: Path | None = None) -> dict:
    repo = repo.resolve()
    top = git_toplevel(repo) if repo.exists() else None
    root = top or repo
    path = store_dir or root / ".codeagent"
    try:
        store = Store(path)
    except CodeagentError:
        raise IndexMissing(f"no index at {path}", hint=f"run `codeagent build {root}`") from None
    refs = []
    worktree = None
    present: set[str] | None = None
    for ref, mid in store.list_refs().items():
        entry = {"ref": ref, "manifest_id": mid}
        try:
            m = load_manifest(store, mid)
        except CodeagentError as exc:
            state = ({"state": "damaged", "detail": f"{exc.message}; `codeagent repair` mends it"}
                     if isinstance(exc, StoreCorrupt) else {"state": "unknown"})
            entry.update(error=exc.to_dict(), counts={"indexed": 0, "skipped": 0},
                         commit=None, freshness=state)
            refs.append(entry)
            continue
        entry.update(manifest_status(store, root, mid, m))
        entry["search_quality"] = read_scores(store, m.commit)
        fresh = entry["freshness"]
        present = store.present_objects() if present is None else present
        damage = _damage(store, mid, m, present)
        if damage:
            fresh.update(state="damaged", detail=f"{damage}; `codeagent repair` mends it")
        entry["assembled"] = store.is_assembled(mid) and not damage
        if ref == WORKTREE_REF:
            worktree = fresh
        refs.append(entry)
    return {
        "store": str(store.root), "store_bytes": store.size_bytes(),
        "objects": sum(1 for _ in store.iter_objects()), "refs": refs, "worktree": worktree,
        "recent_builds": read_log(store, "builds", limit=10),
    }


def describe_scores(figures: dict) -> str:
    """One line: `search quality on its own history: MRR@10 0.71 (bm25 0.52), ...`."""
    auto, base = figures["modes"].get("auto", {}), figures["modes"].get("bm25-file", {})

    def cell(name: str, label: str) -> str:
        mine = f"{auto[name]:.2f}" if name in auto else "-"
        return f"{label} {mine}" + (f" (bm25 {base[name]:.2f})" if name in base else "")

    return (f"search quality on its own history: {cell('mrr@10', 'MRR@10')}, {cell('acc@1', 'Acc@1')}, "
            f"{cell('acc@5', 'Acc@5')}; {figures['tasks']} tasks at {figures['commit'][:12]}")


def _damage(store: Store, mid: str, manifest, present: set[str]) -> str:
    """Why the ref's index is not whole ("" when it is): objects gone, assembled files changed."""
    missing = sorted(o for o in manifest.referenced_objects() if o not in present)
    if missing:
        return f"{len(missing)} objects it names are missing from the store"
    damaged = store.damaged_objects([mid, *manifest.referenced_objects()])
    if damaged:
        return (f"{len(damaged)} objects it names are damaged (their bytes do not hash to their "
                f"names: {', '.join(o[:12] for o in damaged[:3])})")
    if store.is_assembled(mid):
        problems = store.assembly_problems(mid, trust_mtime=True)
        if problems:
            return f"its assembled index is damaged ({problems[0]})"
        base = store.assembly_base(mid)  # an overlay answers with its base's database
        if base is not None and (not base or not store.is_assembled(base)
                                 or store.assembly_problems(base, trust_mtime=True)):
            return "the assembled index its overlay sits on is missing or damaged"
    return ""
