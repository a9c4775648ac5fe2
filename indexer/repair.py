"""`codeagent repair`: re-create every damaged or missing object the store's refs use.

A shard is parsed again from its source (the work-tree file or the committed blob whose
content hash the manifest records) and kept only if it hashes to the same name; an assembled
index is assembled again from its manifest; a manifest that cannot be read is built again
from the ref's sources. What cannot be re-created is named, with what to run.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CodeagentError, StoreCorrupt
from ..format.manifest import FileEntry, Manifest, load_manifest
from ..hashing import hash_bytes, is_object_id
from ..refs import WORKTREE_REF
from ..store import Store, StoreLock


@dataclass
class RepairReport:
    refs: int = 0
    repaired: list[dict] = field(default_factory=list)  # {"kind", "name", "how"}
    unrepaired: list[dict] = field(default_factory=list)  # {"kind", "name", "detail"}

    @property
    def ok(self) -> bool:
        return not self.unrepaired

    def to_dict(self) -> dict:
        return {"ok": self.ok, "refs": self.refs, "repaired": self.repaired,
                "unrepaired": self.unrepaired}


def repair_store(store: Store, repo: Path | None) -> RepairReport:
    """Repair what every ref of `store` uses (under the build lock); refs whose manifest is
    unreadable are built again from `repo` afterwards (a build takes the lock itself)."""
    report = RepairReport()
    rebuild: list[str] = []
    with StoreLock(store):
        store.sweep_tmp()
        # Objects are never rewritten, and a build would reuse damaged bytes under a known
        # name: every damaged object goes first, then what the refs miss is made again.
        damaged = store.drop_damaged(o for o in store.iter_objects() if is_object_id(o))
        refs = store.list_refs()
        report.refs = len(refs)
        for ref, mid in sorted(refs.items()):
            manifest = _readable_manifest(store, mid)
            if manifest is None:
                rebuild.append(ref)
                continue
            if _repair_objects(store, repo, ref, manifest, damaged, report):
                _repair_assembly(store, ref, manifest, mid, report)
    for ref in rebuild:
        _rebuild(store, repo, ref, refs[ref], report)
    return report


def _readable_manifest(store: Store, mid: str) -> Manifest | None:
    """The ref's manifest, or None (missing or damaged, or its delta base is: a build of the
    ref makes it again)."""
    try:
        return load_manifest(store, mid)
    except StoreCorrupt:
        return None


def _repair_objects(store: Store, repo: Path | None, ref: str, manifest: Manifest,
                    damaged: set[str], report: RepairReport) -> bool:
    """Make again the objects the manifest names that are gone; True when all are there."""
    from .maintenance import is_parquet  # pyarrow: only a repair with a readable manifest

    lost = sorted(o for o in manifest.referenced_objects() if not store.has(o))
    malformed = sorted(o for o in manifest.shard_ids() if o not in lost and not is_parquet(store, o))
    for oid in malformed:  # its bytes are the ones the manifest names: only a new manifest helps
        report.unrepaired.append({"kind": "shard", "name": oid, "detail": (
            f"not a Parquet file, though it hashes to its name ({ref}): run `codeagent build` "
            "for that ref to index its files again")})
    by_shard: dict[str, list[FileEntry]] = {}
    for entry in manifest.files:
        if entry.shard in lost:
            by_shard.setdefault(entry.shard, []).append(entry)
    for oid in lost:
        how = "damaged" if oid in damaged else "missing"
        entries = by_shard.get(oid)
        if entries and _reparse(store, repo, manifest, entries, oid):
            report.repaired.append({"kind": "shard", "name": oid,
                                    "how": f"{how}; parsed again from {entries[0].path} ({ref})"})
            continue
        report.unrepaired.append({
            "kind": "shard" if entries else "object", "name": oid,
            "detail": (f"{how}; its source {entries[0].path} is no longer at hand ({ref})" if entries
                       else f"{how}; not a shard ({ref}): run `codeagent build` for that ref")})
    return not malformed and all(store.has(o) for o in lost)


def _reparse(store: Store, repo: Path | None, manifest: Manifest, entries: list[FileEntry],
             oid: str) -> bool:
    from .parse import parse_bytes  # the extractors: only a repair that parses loads them

    for entry in entries:
        data = _source_bytes(repo, manifest, entry) if repo is not None else None
        if data is None:
            continue
        shard = parse_bytes(data, entry.language, entry.blob, len(data) + 1, entry.path).shard
        if shard is not None and hash_bytes(shard) == oid:
            store.put(shard)
            return True
    return False


def _source_bytes(repo: Path, manifest: Manifest, entry: FileEntry) -> bytes | None:
    """The bytes whose content hash the entry records: the work-tree file, else the blob at
    the manifest's commit."""
    try:
        data = (repo / entry.path).read_bytes()
        if hash_bytes(data) == entry.blob:
            return data
    except OSError:
        pass
    if not manifest.commit:
        return None
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{manifest.commit}:{entry.path}"],
                          capture_output=True)
    if proc.returncode == 0 and hash_bytes(proc.stdout) == entry.blob:
        return proc.stdout
    return None


def _repair_assembly(store: Store, ref: str, manifest: Manifest, mid: str, report: RepairReport) -> None:
    """Assemble the manifest again when its assembled index (or the one its overlay sits on)
    is missing or damaged."""
    from .assemble.graph_part import graph_phase  # pyarrow, DuckDB: not for a whole store
    from .assemble.pipeline import assemble
    from .assemble.plan import Assembly

    why = ""
    if not store.is_assembled(mid):
        why = "missing"
    elif problems := store.assembly_problems(mid):
        why = f"damaged ({problems[0]})"
    elif (base := store.assembly_base(mid)) is not None and (
            not base or not store.is_assembled(base) or store.assembly_problems(base)):
        why = "damaged (the assembled index its overlay sits on)"
    if not why:
        return
    shutil.rmtree(store.assembled_dir(mid), ignore_errors=True)
    try:
        assemble(Assembly(store, manifest, mid), replace=True)
        if store.graph_pending(mid):
            graph_phase(store, manifest, mid)
    except CodeagentError as exc:
        report.unrepaired.append({"kind": "assembly", "name": mid,
                                  "detail": f"{why}; assembling it again failed: {exc.message} ({ref})"})
        return
    report.repaired.append({"kind": "assembly", "name": mid, "how": f"{why}; assembled again ({ref})"})


def _rebuild(store: Store, repo: Path | None, ref: str, mid: str, report: RepairReport) -> None:
    """Build `ref` again from its sources (its manifest could not be read)."""
    from .build import BuildOptions, build  # the whole build: only for an unreadable manifest

    if repo is None:
        report.unrepaired.append({"kind": "manifest", "name": mid,
                                  "detail": f"damaged or missing ({ref}); no repository to build it from"})
        return
    rev = None if ref == WORKTREE_REF else (ref.split("/", 1)[1] if ref.startswith("commits/") else f"refs/{ref}")
    try:
        result = build(BuildOptions(repo=repo, store_dir=store.root, rev=rev, jobs=1))
    except CodeagentError as exc:
        report.unrepaired.append({"kind": "manifest", "name": mid,
                                  "detail": f"damaged or missing ({ref}); building it again failed: {exc.message}"})
        return
    how = ("damaged or missing; built again from the sources" if result.manifest_id == mid else
           f"damaged or missing; the sources moved, so {ref} was built again as {result.manifest_id[:12]}")
    report.repaired.append({"kind": "manifest", "name": mid, "how": f"{how} ({ref})"})
