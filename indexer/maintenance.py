"""Store maintenance: verify (re-hash everything, find dangling names) and gc; repair.py
re-creates what verify finds damaged."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import format as fmt
from ..errors import CodeagentError, IndexIncompatible, IndexMissing, StoreCorrupt
from ..hashing import is_object_id
from ..format.manifest import load_manifest
from ..refs import resolve
from ..store import Store, StoreLock, VerifyProblem
from ..store.scores import prune_scores


REPAIR_HINT = ("run `codeagent repair` to re-create what the refs use (shards from their sources, "
               "assembled indexes from their manifests)")


@dataclass
class VerifyReport:
    objects: int = 0
    manifests: int = 0
    refs: int = 0
    problems: list[VerifyProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def hint(self) -> str | None:
        """What to run about the problems (None when there are none)."""
        return None if self.ok else REPAIR_HINT

    def to_dict(self) -> dict:
        return {"ok": self.ok, "objects": self.objects, "manifests": self.manifests,
                "refs": self.refs, "problems": [p.to_dict() for p in self.problems],
                "hint": self.hint}


def is_parquet(store: Store, object_id: str) -> bool:
    """Magic bytes and a readable footer (the bytes were re-hashed already by verify)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        data = store.object_path(object_id).read_bytes()
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
            return False
        pq.read_metadata(pa.BufferReader(data))
        return True
    except (OSError, pa.ArrowException):
        return False


def verify_store(store: Store) -> VerifyReport:
    report = VerifyReport()
    report.problems.extend(store.verify_objects())
    report.objects = sum(1 for _ in store.iter_objects())
    corrupt = {p.name for p in report.problems}
    refs = store.list_refs()
    report.refs = len(refs)
    used_by: dict[str, str] = {}  # object -> what it is to which ref: named with its damage
    for ref, mid in refs.items():
        if not store.has(mid):
            report.problems.append(VerifyProblem("dangling_ref", ref, f"names absent manifest {mid}"))
            continue
        used_by.setdefault(mid, f"the manifest of {ref}")
        if mid in corrupt:
            continue
        try:
            manifest = load_manifest(store, mid)
        except IndexIncompatible as exc:  # an older (or newer) layout, not damage
            report.problems.append(VerifyProblem("incompatible_manifest", mid,
                                                 f"{exc.message} ({ref}): {exc.hint}"))
            continue
        except CodeagentError as exc:
            report.problems.append(VerifyProblem("bad_manifest", mid, exc.message))
            continue
        report.manifests += 1
        used_by.update({f.shard: f"the shard of {f.path} ({ref})" for f in manifest.files
                        if f.shard in corrupt and f.shard not in used_by})
        for oid in sorted(manifest.referenced_objects()):
            if not store.has(oid):
                report.problems.append(VerifyProblem("dangling_shard", oid, f"named by manifest {mid[:12]} ({ref})"))
            elif oid in manifest.shard_ids() and oid not in corrupt and not is_parquet(store, oid):
                report.problems.append(VerifyProblem("malformed_shard", oid, "not a Parquet file"))
        if store.is_assembled(mid):
            for why in store.assembly_problems(mid):
                report.problems.append(VerifyProblem(
                    "corrupt_assembly", mid, f"{why}; `codeagent repair` assembles it again"))
    for key, value in store.iter_actions():
        if is_object_id(value) and not store.has(value):
            report.problems.append(VerifyProblem("dangling_action", key, f"names absent object {value}"))
    report.problems = [replace(p, detail=f"{p.detail}: {used_by[p.name]}") if p.name in used_by
                       and p.kind == "corrupt_object" else p for p in report.problems]
    return report


@dataclass
class GcReport:
    kept_refs: list[str]
    objects_deleted: int
    bytes_freed: int
    actions_deleted: int
    assembled_deleted: int
    refs_deleted: list[str] = field(default_factory=list)
    dry_run: bool = False
    history_deleted: int = 0  # history views (format/history.py) of commits no kept manifest names
    scores_deleted: int = 0  # scores/<sha>.json (store/scores.py) of commits no kept manifest names

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def _kept_manifests(store: Store, refs: dict[str, str], keep_refs: list[str] | None,
                    repo: Path | None) -> tuple[list[str], set[str]]:
    """(ref names kept, manifest ids kept) for `--keep-refs` spelled any way `refs.resolve`
    reads (a branch, `HEAD`, a tag, a sha, a manifest-id prefix). A spelling that names no
    index is an error: keeping "nothing" by a typo would delete every index."""
    if keep_refs is None:
        return sorted(refs), set(refs.values())
    names: set[str] = set()
    ids: set[str] = set()
    for spec in keep_refs:
        try:
            ref, mid = resolve(store, spec, repo)
        except IndexMissing:
            raise IndexMissing(
                f"--keep-refs {spec} names no index in {store.root}; nothing was deleted",
                hint=f"the store's refs: {', '.join(refs) or 'none'}") from None
        ids.add(mid)
        names.update([ref] if ref is not None else [r for r, m in refs.items() if m == mid])
    return sorted(names), ids


def _live_objects(store: Store, refs: dict[str, str], kept: list[str], ids: set[str]) -> set[str]:
    """Every object a kept manifest needs. A kept manifest that cannot be read stops gc: what
    it names is unknown, so any delete could be its shards."""
    live = set(ids)
    for mid in sorted(ids):
        try:
            live |= load_manifest(store, mid).referenced_objects()
        except CodeagentError as exc:
            names = ", ".join(r for r in kept if refs.get(r) == mid) or mid[:12]
            raise StoreCorrupt(
                f"gc cannot read the manifest of {names} ({exc.message}); nothing was deleted",
                hint="run `codeagent verify`, rebuild that ref, or leave it out of --keep-refs") from exc
    return live


def gc_store(store: Store, keep_refs: list[str] | None = None, *, repo: Path | None = None,
             dry_run: bool = False) -> GcReport:
    """Delete objects that no kept ref's manifest needs (mark and sweep, under the build lock);
    with `dry_run`, only count what would go."""
    from .assemble.pipeline import prune_assembled  # pyarrow, DuckDB: +250-350 ms that verify need not pay

    with StoreLock(store):
        refs = store.list_refs()
        kept, ids = _kept_manifests(store, refs, keep_refs, repo)
        ids |= {b for b in map(store.assembly_base, ids) if b}  # an overlay's base: consolidation reads it
        live = _live_objects(store, refs, kept, ids)
        doomed_refs = [r for r in refs if r not in kept]
        dead = [key for key, value in store.iter_actions() if is_object_id(value) and value not in live]
        if not dry_run:  # names before what they name: a gc killed later leaves garbage, never
            for ref in doomed_refs:  # a ref or cache entry naming an object it deleted
                store.delete_ref(ref)
            store.delete_actions(dead)
        deleted = freed = 0
        for oid in list(store.iter_objects()):
            if oid not in live:
                try:
                    freed += store.object_path(oid).stat().st_size
                except FileNotFoundError:
                    continue
                deleted += 1
                if not dry_run:
                    store.delete_object(oid)
        if dry_run:
            base = store.root / fmt.ASSEMBLED_DIR
            assembled = sum(1 for e in (base.iterdir() if base.exists() else ()) if e.name not in ids)
        else:
            assembled = prune_assembled(store, ids)
            store.sweep_tmp()
        commits = {load_manifest(store, mid).commit for mid in ids} - {None}
        history = _prune_history(store, commits, dry_run)
        scores = prune_scores(store, commits, dry_run=dry_run)
    return GcReport(kept, deleted, freed, len(dead), assembled, doomed_refs, dry_run, history, scores)


def _prune_history(store: Store, commits: set[str], dry_run: bool) -> int:
    """Drop the history views of commits no kept manifest names (the count, or what would go)."""
    from .history import prune, stored_views  # only gc and builds read history views

    return sum(1 for c in stored_views(store.root) if c not in commits) if dry_run else prune(store.root, commits)
