"""Manifests: the immutable list of a ref's files (path -> shard) and its id.

A manifest's id is the blake3 of its canonical bytes (sorted keys, no whitespace, files
sorted by path), so the same tree with the same versions always yields the same id.
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
        """Every object this manifest needs (shards plus extras such as vector objects)."""
        return self.shard_ids() | set(self.extras.get("objects", []))

    def file(self, path: str) -> FileEntry | None:
        for f in self.files:
            if f.path == path:
                return f
        return None

    def with_extras(self, **extras: object) -> "Manifest":
        merged = dict(self.extras)
        merged.update(extras)
        return replace(self, extras=merged)

    def to_dict(self) -> dict:
        return {
            "format": fmt.MANIFEST_FORMAT,
            "schema_version": self.schema_version,
            "extractor_version": self.extractor_version,
            "embedder_id": self.embedder_id,
            "ref": self.ref,
            "commit": self.commit,
            "source": self.source,
            "counts": self.counts,
            "extras": self.extras,
            "files": [dict(vars(f)) for f in sorted(self.files, key=lambda f: f.path)],  # asdict is ~10x slower
        }

    def canonical_bytes(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False).encode("utf-8")

    @property
    def id(self) -> str:
        return hash_bytes(self.canonical_bytes())

    @classmethod
    def from_bytes(cls, data: bytes) -> "Manifest":
        try:
            raw = json.loads(data)
        except ValueError as exc:
            raise StoreCorrupt(f"manifest is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict) or raw.get("format") != fmt.MANIFEST_FORMAT:
            raise StoreCorrupt("object is not a codeagent manifest")
        if raw.get("schema_version") != fmt.SCHEMA_VERSION:
            raise IndexIncompatible(
                f"manifest has schema version {raw.get('schema_version')}, this codeagent reads "
                f"{fmt.SCHEMA_VERSION}",
                hint="rebuild the index with `codeagent build` (or upgrade codeagent)",
            )
        files = tuple(FileEntry(**f) for f in raw["files"])
        return cls(
            ref=raw["ref"], commit=raw["commit"], source=raw["source"], files=files,
            schema_version=raw["schema_version"], extractor_version=raw["extractor_version"],
            embedder_id=raw.get("embedder_id"), extras=raw.get("extras") or {},
        )


def shard_key(blob: str, language: str) -> str:
    """The content address of a file's parse: path-independent by design."""
    return hash_parts("shard", str(fmt.SCHEMA_VERSION), fmt.EXTRACTOR_VERSION, language, blob)


def load_manifest(store: "Store", manifest_id: str) -> Manifest:
    """Read (re-hashing) and decode a manifest object."""
    return Manifest.from_bytes(store.get(manifest_id))
