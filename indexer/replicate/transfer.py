"""Moving objects between the local store and a remote: verified, retried, in parallel.

Every downloaded object is re-hashed before it enters the local store
(`Store.put_verified`); a truncated, bit-flipped or wrong object is fetched again, and
after `attempts` tries the transfer fails with RemoteError. Objects already verified stay
in the store, so an interrupted sync resumes where it stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field

from ...errors import RemoteError, StoreCorrupt
from ...hashing import hash_bytes
from ...store import Store
from . import manifest_chunks
from .remote import Remote

Progress = Callable[[str, int, int], None]
ATTEMPTS = 3
BACKOFF = 0.05  # seconds, times the attempt number


@dataclass
class TransferStats:
    objects: int = 0  # objects moved (verified), manifests included
    chunks: int = 0  # manifest chunks moved (delta transfer of manifests)
    bytes: int = 0  # bytes of those objects
    bytes_received: int = 0  # every byte read, bad attempts included
    retries: int = 0
    problems: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, *, objects: int = 0, chunks: int = 0, nbytes: int = 0, received: int = 0,
            retries: int = 0, problem: str | None = None) -> None:
        with self._lock:
            self.objects += objects
            self.chunks += chunks
            self.bytes += nbytes
            self.bytes_received += received
            self.retries += retries
            if problem and len(self.problems) < 20:
                self.problems.append(problem)

    def to_dict(self) -> dict:
        return {"objects": self.objects, "chunks": self.chunks, "bytes": self.bytes, "bytes_received": self.bytes_received,
                "retries": self.retries, "problems": list(self.problems)}


def fetch_verified(remote: Remote, object_id: str, stats: TransferStats, *,
                   attempts: int = ATTEMPTS, what: str = "object") -> bytes:
    """The remote's copy of an object, re-hashed; retried on a bad copy or a failed read."""
    last = ""
    for attempt in range(1, attempts + 1):
        try:
            data = remote.get_object(object_id)
        except RemoteError as exc:
            data, last = None, exc.message
        else:
            if data is None:
                raise RemoteError(f"{remote.label} lacks {what} {object_id[:12]}",
                                  hint="the remote is incomplete: publish the index to it again")
            stats.add(received=len(data))
            actual = hash_bytes(data)
            if actual == object_id:
                chunk = what == "manifest chunk"
                stats.add(objects=0 if chunk else 1, chunks=int(chunk), nbytes=len(data),
                          retries=attempt - 1)
                return data
            last = f"got {len(data)} bytes hashing to {actual[:12]}"
        stats.add(problem=f"{what} {object_id[:12]} attempt {attempt}: {last}")
        if attempt < attempts:
            time.sleep(BACKOFF * attempt)
    stats.add(retries=attempts - 1)
    raise RemoteError(
        f"{what} {object_id[:12]} from {remote.label} failed verification {attempts} times ({last})",
        hint="the remote copy may be damaged: republish it, then sync again (objects already "
        "verified are kept, the previous local index is untouched)")


def _run_parallel(fn: Callable[[str], None], ids: list[str], jobs: int, progress: Progress,
                  stage: str) -> None:
    total = len(ids)
    progress(stage, 0, total)
    if not ids:
        return
    done = 0
    lock = threading.Lock()

    def one(oid: str) -> None:
        nonlocal done
        fn(oid)
        with lock:
            done += 1
            progress(stage, done, total)

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(one, oid) for oid in ids]
        wait(futures, return_when=FIRST_EXCEPTION)
        for fut in futures:
            fut.cancel()
        for fut in futures:
            if fut.done() and not fut.cancelled() and fut.exception() is not None:
                raise fut.exception()  # type: ignore[misc]


def fetch_into_store(remote: Remote, store: Store, ids: Iterable[str], stats: TransferStats, *,
                     jobs: int = 8, attempts: int = ATTEMPTS,
                     progress: Progress = lambda *a: None) -> None:
    """Download every id the store lacks; each enters the store only once verified."""
    missing = [oid for oid in ids if not store.has(oid)]

    def one(oid: str) -> None:
        store.put_verified(oid, fetch_verified(remote, oid, stats, attempts=attempts))

    _run_parallel(one, missing, jobs, progress, "fetch")


def fetch_manifest(remote: Remote, store: Store, manifest_id: str, local: list[bytes],
                   stats: TransferStats, *, attempts: int = ATTEMPTS) -> bytes:
    """A manifest's bytes: from the store, else rebuilt from chunks (fetching only the
    chunks the `local` manifests lack), else downloaded whole; always verified."""
    if store.has(manifest_id):
        return store.get(manifest_id)
    try:
        data = _manifest_from_chunks(remote, manifest_id, local, stats, attempts)
    except RemoteError as exc:
        stats.add(problem=f"manifest {manifest_id[:12]} chunks: {exc.message}")
        data = None
    if data is None:
        data = fetch_verified(remote, manifest_id, stats, attempts=attempts, what="manifest")
    store.put_verified(manifest_id, data)
    return data


def _manifest_from_chunks(remote: Remote, manifest_id: str, local: list[bytes],
                          stats: TransferStats, attempts: int) -> bytes | None:
    listing = remote.read_chunk_list(manifest_id)
    if listing is None:
        return None
    stats.add(received=len(listing), nbytes=len(listing))
    have = manifest_chunks.chunk_map(local)
    parts = []
    for cid in manifest_chunks.decode_list(manifest_id, listing):
        chunk = have.get(cid)
        if chunk is None:
            chunk = fetch_verified(remote, cid, stats, attempts=attempts, what="manifest chunk")
            have[cid] = chunk
        parts.append(chunk)
    data = b"".join(parts)
    if hash_bytes(data) != manifest_id:
        stats.add(problem=f"manifest {manifest_id[:12]}: chunks did not join to it")
        return None
    return data


def upload_objects(remote: Remote, store: Store, ids: Iterable[str], stats: TransferStats, *,
                   jobs: int = 8, progress: Progress = lambda *a: None) -> None:
    """Upload the ids the remote lacks; the local copy is re-hashed before it leaves."""
    ids = list(ids)

    def one(oid: str) -> None:
        if remote.has_object(oid):
            return
        try:
            data = store.get(oid)
        except StoreCorrupt as exc:
            raise StoreCorrupt(f"cannot publish: {exc.message}", hint=exc.hint) from None
        remote.put_object(oid, data)
        stats.add(objects=1, nbytes=len(data))

    _run_parallel(one, ids, jobs, progress, "upload")


def upload_manifest(remote: Remote, manifest_id: str, data: bytes, stats: TransferStats) -> None:
    """Chunks the remote lacks, the chunk list, then the whole manifest object."""
    chunks = manifest_chunks.split(data)
    for chunk in chunks:
        cid = hash_bytes(chunk)
        if not remote.has_object(cid):
            remote.put_object(cid, chunk)
            stats.add(nbytes=len(chunk))
    listing = manifest_chunks.encode_list(manifest_id, chunks)
    remote.put_chunk_list(manifest_id, listing)
    if not remote.has_object(manifest_id):
        remote.put_object(manifest_id, data)
        stats.add(objects=1, nbytes=len(data))
