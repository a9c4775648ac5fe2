"""Store maintenance: verify (re-hash everything, find dangling names) and gc."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import CodeagentError, IndexIncompatible
from ..hashing import is_object_id
from ..format.manifest import Manifest, load_manifest
from ..store import Store, StoreLock, VerifyProblem


@dataclass
class VerifyReport:
    objects: int = 0
    manifests: int = 0
    refs: int = 0
    problems: list[VerifyProblem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"ok": self.ok, "objects": self.objects, "manifests": self.manifests,
                "refs": self.refs, "problems": [p.to_dict() for p in self.problems]}


def _is_parquet(store: Store, object_id: str) -> bool:
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
    for ref, mid in refs.items():
        if not store.has(mid):
            report.problems.append(VerifyProblem("dangling_ref", ref, f"names absent manifest {mid}"))
            continue
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
        for oid in sorted(manifest.referenced_objects()):
            if not store.has(oid):
                report.problems.append(VerifyProblem("dangling_shard", oid, f"named by manifest {mid[:12]} ({ref})"))
            elif oid in manifest.shard_ids() and oid not in corrupt and not _is_parquet(store, oid):
                report.problems.append(VerifyProblem("malformed_shard", oid, "not a Parquet file"))
        if store.is_assembled(mid):
            for why in store.assembly_problems(mid):
                report.problems.append(VerifyProblem(
                    "corrupt_assembly", mid, f"{why}; delete {store.assembled_dir(mid)} and build again"))
    for key, value in store.iter_actions():
        if is_object_id(value) and not store.has(value):
            report.problems.append(VerifyProblem("dangling_action", key, f"names absent object {value}"))
    return report


@dataclass
class GcReport:
    kept_refs: list[str]
    objects_deleted: int
    bytes_freed: int
    actions_deleted: int
    assembled_deleted: int

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def gc_store(store: Store, keep_refs: list[str] | None = None, *, dry_run: bool = False) -> GcReport:
    """Delete objects that no kept ref's manifest needs (mark and sweep, under the build lock)."""
    from .assemble.pipeline import prune_assembled

    with StoreLock(store):
        refs = store.list_refs()
        kept = sorted(refs if keep_refs is None else [r for r in refs if r in keep_refs])
        live: set[str] = set()
        for ref in kept:
            mid = refs[ref]
            live.add(mid)
            try:
                manifest: Manifest = load_manifest(store, mid)
            except CodeagentError:
                continue
            live |= manifest.referenced_objects()
        deleted = freed = 0
        for oid in list(store.iter_objects()):
            if oid not in live:
                path = store.object_path(oid)
                freed += path.stat().st_size
                deleted += 1
                if not dry_run:
                    store.delete_object(oid)
        dead = [key for key, value in store.iter_actions() if is_object_id(value) and value not in live]
        actions = len(dead)
        if not dry_run:
            store.delete_actions(dead)
        if not dry_run:
            for ref in refs:
                if ref not in kept:
                    store.delete_ref(ref)
        assembled = 0 if dry_run else prune_assembled(store, {refs[r] for r in kept})
        if not dry_run:
            store.sweep_tmp()
    return GcReport(kept, deleted, freed, actions, assembled)


