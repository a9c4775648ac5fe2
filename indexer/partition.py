"""Partitioned builds for CI fleets: `build --ref REV --partition I/N --to REMOTE` parses one
deterministic slice of the tree and uploads its shards; `build --ref REV --from-partitions
REMOTE` (any one machine) joins the slices into the manifest and assembles it. Shards are
pure functions of content, so the manifest is byte-identical to a one-machine build.

A file belongs to slice `int(git blob id) % N`: identical content lands in one slice and is
parsed once. On the remote, under `partitions/<commit>/<N>/`:

    <I>             a partition's result: the object id of its entries (JSON), written last
    <I>.parts/<H>   checkpoints while it runs: object ids of (shard key -> shard) batches
                    whose shards are uploaded already, so a partition killed midway re-runs
                    (on this machine or another) without parsing those files again
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .. import format as fmt
from .. import sources
from ..errors import InvalidParameter, RemoteError
from ..format.manifest import FileEntry, Manifest, shard_key
from ..hashing import hash_bytes
from ..store import Store, StoreLock, faults
from .embed import attach_vectors
from .build import BuildOptions, BuildResult, _Builder, _assemble_and_swap, \
    _previous, _read_and_parse, _resolve, _reused_and_needed, _walk
from .replicate.remote import Remote, open_remote
from .replicate.transfer import TransferStats, fetch_into_store, upload_objects

CHECKPOINT_FILES = 64  # files parsed between two checkpoints of a partition
PARTITION_FORMAT = "codeagent-partition"


@dataclass
class PartitionResult:
    ref: str
    commit: str
    partition: str  # "I/N"
    files: int = 0
    files_parsed: int = 0
    files_resumed: int = 0  # known from checkpoints of an earlier, interrupted run
    objects_uploaded: int = 0
    partition_id: str = ""
    seconds: float = 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "seconds": round(self.seconds, 4)}

    def summary(self) -> str:
        return (f"partition {self.partition} of {self.ref} @ {self.commit[:12]}: {self.files} files "
                f"({self.files_parsed} parsed now, {self.files_resumed} from an earlier run), "
                f"{self.objects_uploaded} objects uploaded; {self.seconds:.2f}s")


def parse_partition(text: str) -> tuple[int, int]:
    """(I, N) of `I/N`, 0 <= I < N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if m is None or not 0 <= int(m.group(1)) < int(m.group(2)):
        raise InvalidParameter(f"--partition {text!r} is not I/N with 0 <= I < N",
                               hint="e.g. --partition 0/4 ... --partition 3/4 for four machines")
    return int(m.group(1)), int(m.group(2))


def slice_of(f: sources.SourceFile, n: int) -> int:
    """The partition a file belongs to: by content (git blob id), by path for files without one."""
    key = f.git_sha or hash_bytes(f.path.encode("utf-8", "surrogateescape"))
    return int(key[:15], 16) % n


def _prefix(commit: str, n: int) -> str:
    return f"partitions/{commit}/{n}"


def _entries_bytes(commit: str, i: int, n: int, entries: list[FileEntry]) -> bytes:
    body = {"format": PARTITION_FORMAT, "commit": commit, "partition": [i, n],
            "extractor_version": fmt.EXTRACTOR_VERSION,
            "entries": [asdict(e) for e in sorted(entries, key=lambda e: e.path)]}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _read_pointer(remote: Remote, key: str) -> bytes | None:
    """The object a partitions/ pointer names (verified), None when the pointer is absent."""
    raw = remote.backend.read(key)
    if raw is None:
        return None
    oid = raw.decode().strip()
    data = remote.get_object(oid)
    if data is None or hash_bytes(data) != oid:
        raise RemoteError(f"{key} on {remote.label} names an object that is missing or damaged",
                          hint="run that partition again")
    return data


def _put_pointer(remote: Remote, key: str, data: bytes) -> None:
    oid = hash_bytes(data)
    if not remote.has_object(oid):
        remote.put_object(oid, data)
    remote.backend.write(key, f"{oid}\n".encode())


class _ResumingBuilder(_Builder):
    """A builder that also knows the shard keys an earlier run of its partition checkpointed
    (their shards are on the remote, not necessarily in this machine's store)."""

    resumed: dict[str, str]

    def entry_from_action(self, path: str, blob: str, size: int, language: str) -> FileEntry | None:
        key = shard_key(blob, language)
        value = self.resumed.get(key)
        if value is None:
            return super().entry_from_action(path, blob, size, language)
        if value.startswith("skip:"):
            return FileEntry(path, blob, size, language, fmt.STATUS_SKIPPED, value[5:], key, "")
        return FileEntry(path, blob, size, language, fmt.STATUS_INDEXED, "", key, value)


def _checkpoints(remote: Remote, prefix: str) -> dict[str, str]:
    """shard key -> shard id (or skip:reason) of the checkpoints of an earlier run."""
    out: dict[str, str] = {}
    for key in remote.backend.list(prefix) or []:
        data = _read_pointer(remote, key)
        if data is not None:
            out.update(json.loads(data))
    return out


def _committed_tree(opts: BuildOptions, without_ref: str) -> tuple[Path, Store, str, str]:
    """(repository top, its store, ref name, commit) of the committed tree `opts.rev`."""
    if opts.rev is None:
        raise InvalidParameter(without_ref)
    repo, _ = _resolve(opts)
    store = Store(opts.store_path if opts.store_dir else repo / ".codeagent", create=True)
    ref, commit = sources.resolve_ref(repo, opts.rev)
    return repo, store, ref, commit


def build_partition(opts: BuildOptions, i: int, n: int, dest: str) -> PartitionResult:
    """Parse slice I of N of `opts.rev`'s tree into the local store, uploading its shards (with
    checkpoints) and then its entries to the remote `dest`."""
    started = time.perf_counter()
    repo, store, ref, commit = _committed_tree(opts, "--partition needs --ref: a partition is a slice "
                                               "of a committed tree")
    result = PartitionResult(ref, commit, f"{i}/{n}")
    stats = TransferStats()
    with open_remote(dest, create=True) as remote, StoreLock(store, wait=opts.lock_wait):
        remote.init()
        store.sweep_tmp()
        prefix = f"{_prefix(commit, n)}/{i}"
        builder = _ResumingBuilder(opts, repo, store)
        builder.resumed = _checkpoints(remote, f"{prefix}.parts")
        cache = sources.JsonCache(store, "gitblobs.json")
        opts, files = _walk(builder, repo, store, cache, commit)
        mine = [f for f in files if slice_of(f, n) == i]
        entries, need = _reused_and_needed(builder, store, None, mine, [])
        builder.start_workers(len(need))
        try:
            for part, start in enumerate(range(0, len(need), CHECKPOINT_FILES)):
                with store.batched_actions():
                    done = _read_and_parse(builder, repo, True, need[start:start + CHECKPOINT_FILES], cache)
                entries.extend(done)
                _checkpoint(remote, store, f"{prefix}.parts", done, stats)
                faults.step(f"checkpoint {part}")
        finally:
            builder.close()
        cache.save()
        upload_objects(remote, store, sorted({e.shard for e in entries if e.shard}), stats)
        data = _entries_bytes(commit, i, n, entries)
        _put_pointer(remote, prefix, data)
    result.files, result.files_parsed = len(mine), builder.parsed
    result.files_resumed = sum(1 for e in entries if e.shard_key in builder.resumed)
    result.objects_uploaded, result.partition_id = stats.objects, hash_bytes(data)
    result.seconds = time.perf_counter() - started
    return result


def _checkpoint(remote: Remote, store: Store, folder: str, done: list[FileEntry], stats: TransferStats) -> None:
    """Upload the shards of `done`, then a checkpoint naming them by shard key (under a name
    of its own content: a later run never overwrites an earlier run's checkpoint)."""
    upload_objects(remote, store, sorted({e.shard for e in done if e.shard}), stats)
    actions = {e.shard_key: (e.shard if e.indexed else f"skip:{e.reason}") for e in done if e.shard_key}
    if actions:
        data = json.dumps(actions, sort_keys=True).encode()
        _put_pointer(remote, f"{folder}/{hash_bytes(data)[:32]}", data)


def _partition_entries(remote: Remote, commit: str) -> tuple[int, list[FileEntry]]:
    """(N, the entries of all N partitions) of the one complete partitioning of `commit`."""
    keys = remote.backend.list(f"partitions/{commit}")
    if keys is None:
        raise RemoteError(f"{remote.label} cannot list its partitions",
                          hint="use a directory, file://, s3:// or gs:// remote for partitioned builds")
    found: dict[int, set[int]] = {}
    for key in keys:
        parts = key.split("/")
        if len(parts) == 4 and parts[2].isdigit() and parts[3].isdigit():
            found.setdefault(int(parts[2]), set()).add(int(parts[3]))
    complete = [n for n, got in sorted(found.items()) if got == set(range(n))]
    if not complete:
        missing = {n: sorted(set(range(n)) - got) for n, got in found.items()}
        raise RemoteError(
            f"no complete partitioned build of {commit[:12]} on {remote.label}"
            + (f" (missing partitions: {', '.join(f'{i}/{n}' for n, ids in missing.items() for i in ids)})"
               if missing else ""),
            hint="run `codeagent build --ref REV --partition I/N --to REMOTE` for each I first")
    n = complete[-1]
    entries: list[FileEntry] = []
    for i in range(n):
        body = json.loads(_read_pointer(remote, f"{_prefix(commit, n)}/{i}") or b"{}")
        if body.get("extractor_version") != fmt.EXTRACTOR_VERSION or body.get("partition") != [i, n]:
            raise RemoteError(f"partition {i}/{n} of {commit[:12]} was made by another codeagent version",
                              hint="run the partitions again with this version")
        entries += [FileEntry(**e) for e in body["entries"]]
    return n, entries


def build_from_partitions(opts: BuildOptions, source: str) -> BuildResult:
    """Join the partitions of `opts.rev`'s commit from the remote `source` into its manifest,
    fetch their shards, assemble and point the ref at it (as `build` does)."""
    started = time.perf_counter()
    repo, store, ref, commit = _committed_tree(opts, "--from-partitions needs --ref: the commit the "
                                               "partitions were built from")
    with open_remote(source) as remote, StoreLock(store, wait=opts.lock_wait):
        remote.require_remote()
        store.sweep_tmp()
        n, entries = _partition_entries(remote, commit)
        builder = _Builder(opts, repo, store)
        _, files = _walk(builder, repo, store, sources.JsonCache(store, "gitblobs.json"), commit)
        _check_cover(files, entries, n)
        stats = TransferStats()
        fetch_into_store(remote, store, sorted({e.shard for e in entries if e.shard}), stats)
        repairs: list[str] = []
        previous_id, previous = _previous(store, ref, repairs)
        manifest = Manifest(ref=ref, commit=commit, source="git",
                            files=tuple(sorted(entries, key=lambda e: e.path)))
        manifest = attach_vectors(store, manifest, opts.embedder, previous, opts.progress)
        data = manifest.canonical_bytes()
        manifest_id = hash_bytes(data)
        store.put(data)
        if manifest_id != previous_id or not store.is_assembled(manifest_id):
            _assemble_and_swap(builder, ref, previous_id, builder.assembly(manifest, manifest_id, previous, previous_id))
    return BuildResult(ref=ref, commit=commit, manifest_id=manifest_id, previous_manifest_id=previous_id,
                       changed=manifest_id != previous_id, files_total=len(manifest.files),
                       files_reused=len(manifest.files),
                       files_skipped=manifest.counts["skipped_by_reason"],
                       skipped_files=[{"path": e.path, "reason": e.reason} for e in manifest.files if not e.indexed],
                       seconds=time.perf_counter() - started, repairs=repairs)


def _check_cover(files: list[sources.SourceFile], entries: list[FileEntry], n: int) -> None:
    """The partitions together list exactly the tree's files (the same rules read them)."""
    want, got = {f.path for f in files}, [e.path for e in entries]
    if len(got) != len(set(got)) or set(got) != want:
        odd = sorted((want ^ set(got)) | {p for p in got if got.count(p) > 1})[:5]
        raise RemoteError(f"the {n} partitions do not cover the tree exactly (first: {', '.join(odd)})",
                          hint="run every partition again from the same commit and codeagent version")
