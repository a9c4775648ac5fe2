"""Manifests: the immutable list of a ref's files (path -> shard) and its id.

A manifest's id is the blake3 of its canonical bytes (sorted keys, no whitespace, files
sorted by path), so the same tree with the same versions always yields the same id.

A work-tree build may store its manifest as a delta instead (MANIFEST_DELTA_FORMAT): the
header of the whole manifest, its base (the id of a full manifest) and only the entries that
differ from the base's (`files`: new or changed entries, `removed`: paths gone). A small edit
then writes a few hundred bytes, not a list of every file. `load_manifest` resolves a delta
on its base, so every reader sees the whole manifest (`Manifest.base_manifest` names the base,
which `referenced_objects` lists: gc keeps it and verify checks it). A delta's base is never
a delta (one level, nothing to chain). Its id is the hash of its own bytes, so the same tree
reached through a delta has another id than its full manifest; committed trees (published,
synced, compared across stores) are always full.

MANIFEST_DELTA_VERSION history:
  1: header as a full manifest's, plus base, files (differing entries) and removed (paths).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from dataclasses import dataclass, field, replace

from .. import format as fmt
from ..errors import IndexIncompatible, StoreCorrupt
from ..hashing import hash_bytes, hash_parts

if TYPE_CHECKING:
    from ..store import Store

MANIFEST_DELTA_FORMAT = "codeagent-manifest-delta"
MANIFEST_DELTA_VERSION = 1
# A delta lists at most this many differing paths (~330 bytes each); past it the manifest is
# written whole and becomes the next deltas' base. Each edit writes the delta of every path
# changed since the base, so the bound trades that (on average half of it) against how often
# the whole list is written again.
MANIFEST_DELTA_MAX = 256
# Canonical JSON sorts keys: "counts" comes before "delta_version" and "format".
_DELTA_PREFIX = b'{"base":'


@dataclass(frozen=True)
class FileEntry:
    path: str
    blob: str  # blake3 of the file's bytes ("" when unreadable)
    size: int
    language: str
    status: str  # fmt.STATUS_INDEXED | fmt.STATUS_SKIPPED
    reason: str = ""  # one of fmt.SKIP_REASONS when skipped
    shard_key: str = ""
    shard: str = ""  # object id of the Parquet shard

    @property
    def indexed(self) -> bool:
        return self.status == fmt.STATUS_INDEXED


@dataclass(frozen=True)
class Manifest:
    ref: str
    commit: str | None
    source: str  # "git" (a committed tree) or "worktree"
    files: tuple[FileEntry, ...]
    schema_version: int = fmt.SCHEMA_VERSION
    extractor_version: str = fmt.EXTRACTOR_VERSION
    embedder_id: str | None = None
    # JSON-canonical additions, e.g. {"objects": [vector object ids...], "vectors": {...}}.
    # Every object id a manifest needs besides shards must be listed under "objects".
    extras: dict = field(default_factory=dict)
    # Set when read from a delta (module doc): the full manifest it was resolved on.
    base_manifest: str | None = field(default=None, compare=False)

    @property
    def counts(self) -> dict:
        by_language: dict[str, int] = {}
        skipped: dict[str, int] = {}
        for f in self.files:
            if f.indexed:
                by_language[f.language] = by_language.get(f.language, 0) + 1
            else:
                skipped[f.reason] = skipped.get(f.reason, 0) + 1
        return {
            "files": len(self.files),
            "indexed": sum(by_language.values()),
            "skipped": sum(skipped.values()),
            "bytes": sum(f.size for f in self.files),
            "by_language": dict(sorted(by_language.items())),
            "skipped_by_reason": dict(sorted(skipped.items())),
        }

    def shard_ids(self) -> set[str]:
        return {f.shard for f in self.files if f.shard}

    def referenced_objects(self) -> set[str]:
        """Every object this manifest needs (shards plus extras such as vector objects, and the
        base manifest of a delta)."""
        base = {self.base_manifest} if self.base_manifest else set()
        return self.shard_ids() | set(self.extras.get("objects", [])) | base

    def file(self, path: str) -> FileEntry | None:
        for f in self.files:
            if f.path == path:
                return f
        return None

    def with_extras(self, **extras: object) -> "Manifest":
        merged = dict(self.extras)
        merged.update(extras)
        return replace(self, extras=merged)

    def _header(self) -> dict:
        return {
            "schema_version": self.schema_version,
            "extractor_version": self.extractor_version,
            "embedder_id": self.embedder_id,
            "ref": self.ref,
            "commit": self.commit,
            "source": self.source,
            "counts": self.counts,
            "extras": self.extras,
        }

    def to_dict(self) -> dict:
        return {"format": fmt.MANIFEST_FORMAT, **self._header(),
                "files": [dict(vars(f)) for f in sorted(self.files, key=lambda f: f.path)]}  # asdict is ~10x slower

    def canonical_bytes(self) -> bytes:
        return _canonical(self.to_dict())

    def differences(self, base: "Manifest") -> tuple[list[FileEntry], list[str]]:
        """(entries new or changed since `base`, in path order; paths `base` has and this lacks)."""
        old = {f.path: f for f in base.files}
        paths = {f.path for f in self.files}
        return ([f for f in sorted(self.files, key=lambda f: f.path) if old.get(f.path) != f],
                sorted(p for p in old if p not in paths))

    def delta_bytes(self, base_id: str, changed: list[FileEntry], removed: list[str]) -> bytes:
        """This manifest's canonical bytes as a delta (module doc) on the full manifest `base_id`,
        from which it differs by `differences`."""
        return _canonical({
            "format": MANIFEST_DELTA_FORMAT, "delta_version": MANIFEST_DELTA_VERSION,
            **self._header(), "base": base_id,
            "files": [dict(vars(f)) for f in changed], "removed": removed,
        })

    @property
    def id(self) -> str:
        return hash_bytes(self.canonical_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> "Manifest":
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise StoreCorrupt(f"manifest is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.get("format") not in (fmt.MANIFEST_FORMAT, MANIFEST_DELTA_FORMAT):
            raise StoreCorrupt("object is not a codeagent manifest")
        if raw.get("schema_version") != fmt.SCHEMA_VERSION:
            raise IndexIncompatible(
                f"manifest has schema version {raw.get('schema_version')}, this codeagent reads "
                f"{fmt.SCHEMA_VERSION}",
                hint="rebuild the index with `codeagent build` (or upgrade codeagent)",
            )
        if raw.get("format") == MANIFEST_DELTA_FORMAT:
            raise StoreCorrupt("a manifest delta is read through load_manifest (it needs its base)")
        files = tuple(FileEntry(**f) for f in raw["files"])
        return cls(
            ref=raw["ref"], commit=raw["commit"], source=raw["source"], files=files,
            schema_version=raw["schema_version"], extractor_version=raw["extractor_version"],
            embedder_id=raw.get("embedder_id"), extras=raw.get("extras") or {},
        )


def shard_key(blob: str, language: str) -> str:
    """The content address of a file's parse: path-independent by design."""
    return hash_parts("shard", str(fmt.SCHEMA_VERSION), fmt.EXTRACTOR_VERSION, language, blob)


# How many decoded manifests a Store keeps (load_manifest): a build reads its previous manifest
# and that one's base (a delta's) up to three times each, ~6 ms of CPU a read on the stdlib.
MANIFESTS_KEPT = 4


def load_manifest(store: "Store", manifest_id: str) -> Manifest:
    """Read (re-hashing) and decode a manifest object; a delta is resolved on its base. Each
    is read once per Store (an object's content never changes; the MANIFESTS_KEPT latest kept)."""
    return _kept(store, manifest_id, lambda: _read_manifest(store, manifest_id))


def _kept(store: "Store", manifest_id: str, read) -> Manifest:
    """The decoded manifest `manifest_id` from the Store's MANIFESTS_KEPT latest, `read()` else."""
    kept = store.decoded_manifests
    got = kept.get(manifest_id)
    if got is None:
        kept[manifest_id] = got = read()
        while len(kept) > MANIFESTS_KEPT:
            kept.pop(next(iter(kept)), None)
    return got


def _read_manifest(store: "Store", manifest_id: str) -> Manifest:
    data = store.get(manifest_id)
    if not data.startswith(_DELTA_PREFIX):
        return Manifest.from_bytes(data)
    try:
        raw = json.loads(data)
    except ValueError as exc:
        raise StoreCorrupt(f"manifest {manifest_id[:12]} is not valid JSON: {exc}") from exc
    if raw.get("delta_version") != MANIFEST_DELTA_VERSION:
        raise IndexIncompatible(
            f"manifest {manifest_id[:12]} is a delta of version {raw.get('delta_version')}, this "
            f"codeagent reads {MANIFEST_DELTA_VERSION}",
            hint="rebuild the index with `codeagent build` (or upgrade codeagent)")
    base_id = raw.get("base") or ""
    base = _kept(store, base_id, lambda: _read_base(store, manifest_id, base_id))
    gone = set(raw["removed"]) | {f["path"] for f in raw["files"]}
    files = [f for f in base.files if f.path not in gone] + [FileEntry(**f) for f in raw["files"]]
    header = Manifest.from_bytes(_canonical({**raw, "format": fmt.MANIFEST_FORMAT, "files": []}))
    return replace(header, files=tuple(sorted(files, key=lambda f: f.path)), base_manifest=base_id)


def _read_base(store: "Store", manifest_id: str, base_id: str) -> Manifest:
    """The full manifest `base_id` the delta `manifest_id` is on."""
    try:
        base_data = store.get(base_id)
    except StoreCorrupt as exc:
        raise StoreCorrupt(f"manifest {manifest_id[:12]} is a delta on {base_id[:12]}, which cannot be "
                           f"read: {exc.message}", hint="run `codeagent build` (it rebuilds the "
                           "work tree's index from the sources)") from exc
    if base_data.startswith(_DELTA_PREFIX):
        raise StoreCorrupt(f"manifest {manifest_id[:12]} is a delta on another delta")
    return Manifest.from_bytes(base_data)


def paths_changed(store: "Store", old_id: str, new_id: str) -> set[str]:
    """The paths whose entries differ between two manifests: from their deltas alone when
    both are deltas on one base (or one is the other's base), else from both read whole."""
    old, new = _delta_entries(store, old_id), _delta_entries(store, new_id)
    if old is not None and new is not None and old[0] == new[0]:
        return {p for p in old[1].keys() | new[1].keys() if old[1].get(p, 0) != new[1].get(p, 0)}
    if old is None and new is not None and new[0] == old_id:
        return set(new[1])
    if new is None and old is not None and old[0] == new_id:
        return set(old[1])
    changed, removed = load_manifest(store, new_id).differences(load_manifest(store, old_id))
    return {f.path for f in changed} | set(removed)


def _delta_entries(store: "Store", manifest_id: str) -> tuple[str, dict[str, dict | None]] | None:
    """(base, path -> its entry, None when removed) of a delta manifest; None for a whole one."""
    data = store.get(manifest_id)
    if not data.startswith(_DELTA_PREFIX):
        return None
    raw = json.loads(data)
    if raw.get("delta_version") != MANIFEST_DELTA_VERSION:
        return None
    return raw["base"], {**dict.fromkeys(raw["removed"]), **{f["path"]: f for f in raw["files"]}}


def stored_form(store: "Store", manifest: Manifest, previous: Manifest | None,
                     previous_id: str | None) -> tuple[bytes, str]:
    """(the bytes to store, the id) of a new manifest built after `previous`: for a work tree
    close to the previous manifest's full base (the previous manifest itself, or the base of
    its delta), a delta on that base (module doc), so a small edit does not write a list of
    every file; else the whole manifest."""
    def whole() -> tuple[bytes, str]:
        data = manifest.canonical_bytes()
        return data, hash_bytes(data)

    base_id = (previous.base_manifest or previous_id) if previous is not None else None
    base = None
    if manifest.source == "worktree" and not manifest.extras and base_id:
        try:
            base = previous if base_id == previous_id else load_manifest(store, base_id)
        except Exception:  # unreadable: a full manifest starts a new base
            base = None
    if base is None or base.base_manifest:
        return whole()
    changed, removed = manifest.differences(base)
    if len(changed) + len(removed) > MANIFEST_DELTA_MAX:
        return whole()
    if not changed and not removed:
        data, manifest_id = whole()
        if manifest_id == base_id:  # the base's tree again: its id, nothing new to store
            return data, manifest_id
    data = manifest.delta_bytes(base_id, changed, removed)
    return data, hash_bytes(data)


def _canonical(obj: dict) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
