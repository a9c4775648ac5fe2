"""Vector objects: one per (embedder id, shard), holding a vector per symbol and free chunk.

A shard's items are its symbols and the chunks no symbol covers. Each item carries the hash
of (embedder id, the exact text embedded), so when a file changes only its changed items
are embedded again; a moved or copied file reuses its whole object through the action
cache. Object layout: `format.VECTORS_MAGIC`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ... import format as fmt
from ...embedders.base import MAX_TEXT_CHARS
from ...embedding import Embedder, embed_batched, get_embedder, resolve_embedder_id
from ...errors import IndexIncompatible, StoreCorrupt
from ...hashing import hash_parts
from ...format.manifest import Manifest
from ...store import Store, append_log
from ...format.shard import chunk_text, decode_table, read_shard

Progress = Callable[[str, int, int], None]
Item = tuple[str, int, str]  # (doc_kind "s" | "c", ordinal, item hash)


@dataclass
class VectorBlock:
    embedder_id: str
    dim: int
    items: list[Item]
    vectors: np.ndarray  # len(items) x dim, float16

    def encode(self) -> bytes:
        header = json.dumps({"embedder_id": self.embedder_id, "dim": self.dim,
                             "items": [list(i) for i in self.items]},
                            sort_keys=True, separators=(",", ":")).encode("utf-8")
        body = np.ascontiguousarray(self.vectors, dtype="<f2").tobytes()
        return fmt.VECTORS_MAGIC + header + b"\n" + body


def decode_block(data: bytes, expect_embedder: str | None = None) -> VectorBlock:
    """Parse a vector object; refuses one made by another embedder than `expect_embedder`."""
    if not data.startswith(fmt.VECTORS_MAGIC):
        raise StoreCorrupt("object is not a codeagent vector object")
    head_end = data.index(b"\n", len(fmt.VECTORS_MAGIC))
    header = json.loads(data[len(fmt.VECTORS_MAGIC):head_end])
    if expect_embedder is not None and header["embedder_id"] != expect_embedder:
        raise IndexIncompatible(
            f"a vector object was made by embedder {header['embedder_id']}, but the manifest "
            f"says {expect_embedder}",
            hint="rebuild with `codeagent build --embedder NAME` so every vector is in one space",
        )
    items = [(k, int(o), h) for k, o, h in header["items"]]
    dim = int(header["dim"])
    vectors = np.frombuffer(data, dtype="<f2", offset=head_end + 1).reshape(len(items), dim)
    return VectorBlock(header["embedder_id"], dim, items, vectors)


def load_block(store: Store, object_id: str, expect_embedder: str | None = None) -> VectorBlock:
    return decode_block(store.get(object_id), expect_embedder)


def vectors_action_key(embedder_id: str, shard_id: str) -> str:
    return hash_parts("vectors", embedder_id, shard_id)


def symbol_text(sym: dict, source: bytes) -> str:
    """What a symbol's vector says: a title line (kind, qualified name), then doc and body."""
    body = source[sym["start_byte"]:sym["end_byte"]][:MAX_TEXT_CHARS * 2].decode("utf-8", "replace")
    title = f"{sym['kind']} {sym['qualified_name'] or sym['name']}"
    return f"{title}\n{sym['signature'] or ''}\n{sym['doc'] or ''}\n{body}"[:MAX_TEXT_CHARS]


def chunk_vector_text(chunk: dict, source: bytes) -> str:
    """What a chunk's vector says: its heading line, then its text."""
    return f"{chunk['heading'] or ''}\n{chunk_text(chunk, source)}"[:MAX_TEXT_CHARS]


def shard_items(row: dict) -> list[tuple[str, int, str]]:
    """(doc_kind, ordinal, text) for a decoded shard's symbols and symbol-less chunks."""
    source = (row["text"] or "").encode("utf-8")
    out = [("s", s["ordinal"], symbol_text(s, source)) for s in row["symbols"] or ()]
    out += [("c", c["ordinal"], chunk_vector_text(c, source)) for c in row["chunks"] or ()
            if c["symbol"] < 0]
    return out


def read_shard_items(store: Store, shard_id: str) -> list[tuple[str, int, str]]:
    import pyarrow as pa

    try:
        table = read_shard(store.get(shard_id), ["text", "chunks", "symbols"])
    except (pa.ArrowInvalid, OSError) as exc:  # hash matches but the bytes are not our Parquet
        raise StoreCorrupt(f"shard {shard_id[:12]} is not a readable Parquet file: {exc}",
                           hint="run `codeagent verify`, delete the object and build again") from exc
    return shard_items(decode_table(table))


@dataclass
class VectorStats:
    shards_reused: int = 0
    shards_embedded: int = 0
    items_reused: int = 0
    items_embedded: int = 0


class _Reuse:
    """Vectors by item hash from the previous manifest's objects of the changed paths."""

    def __init__(self, store: Store, embedder_id: str) -> None:
        self.store = store
        self.embedder_id = embedder_id
        self.by_hash: dict[str, np.ndarray] = {}

    def add_object(self, object_id: str) -> None:
        try:
            block = load_block(self.store, object_id, self.embedder_id)
        except (StoreCorrupt, IndexIncompatible):
            return
        for (_k, _o, h), vec in zip(block.items, block.vectors):
            self.by_hash.setdefault(h, vec)


def _previous_map(previous: Manifest | None, embedder_id: str) -> dict[str, str]:
    if previous is None or previous.embedder_id != embedder_id:
        return {}
    return dict(previous.extras.get("vectors") or {})


SHARD_GROUP = 64  # shards read and embedded together (bounds memory on cold builds)


def _embed_group(store: Store, embedder: Embedder, group: list[str], reuse: _Reuse,
                 stats: VectorStats) -> dict[str, str]:
    items_of: dict[str, list[tuple[str, int, str, str]]] = {}
    texts: dict[str, str] = {}
    for shard_id in group:
        items = [(k, o, hash_parts(embedder.id, t)[:32], t) for k, o, t in read_shard_items(store, shard_id)]
        items_of[shard_id] = items
        for _k, _o, h, t in items:
            if h not in reuse.by_hash:
                texts.setdefault(h, t)
            else:
                stats.items_reused += 1
    order = list(texts)
    computed = dict(zip(order, embed_batched(embedder, [texts[h] for h in order]).astype(np.float16)))
    stats.items_embedded += len(order)
    out: dict[str, str] = {}
    for shard_id, items in items_of.items():
        vecs = [computed[h] if h in computed else reuse.by_hash[h] for _k, _o, h, _t in items]
        matrix = np.stack(vecs) if vecs else np.zeros((0, embedder.dim), dtype=np.float16)
        block = VectorBlock(embedder.id, embedder.dim, [(k, o, h) for k, o, h, _t in items], matrix)
        out[shard_id] = store.put(block.encode())
        stats.shards_embedded += 1
    return out


POOL_MIN_SHARDS = 4 * SHARD_GROUP  # below this a process pool costs more than it saves
_pool_state: tuple | None = None  # (store, embedder, reuse), inherited by forked workers


def _pool_job(group: list[str]) -> tuple[dict[str, str], VectorStats]:
    store, embedder, reuse = _pool_state  # type: ignore[misc]
    stats = VectorStats()
    return _embed_group(store, embedder, group, reuse, stats), stats


def _groups_in_pool(store: Store, embedder: Embedder, groups: list[list[str]], reuse: _Reuse):
    """Yield (objects, stats) per group from one forked worker per core."""
    global _pool_state
    from ...runtime.pool import fork_pool  # multiprocessing (10-20 ms): only a large embedding forks

    _pool_state = (store, embedder, reuse)
    try:
        with fork_pool(os.cpu_count() or 1) as pool:
            yield from pool.map(_pool_job, groups)
    finally:
        _pool_state = None


def _embed_shards(store: Store, embedder: Embedder, pending: list[str], reuse: _Reuse,
                  stats: VectorStats, progress: Progress | None) -> dict[str, str]:
    """Write vector objects for shards without one; returns {shard id: vector object id}.
    Large batches run in a process pool unless the embedder already uses every core.
    Progress is reported per shard ("embed", done, total)."""
    groups = [pending[i:i + SHARD_GROUP] for i in range(0, len(pending), SHARD_GROUP)]
    parallel = ((os.cpu_count() or 1) > 1 and len(pending) >= POOL_MIN_SHARDS
                and getattr(embedder, "parallel", True))
    results = (_groups_in_pool(store, embedder, groups, reuse) if parallel else
               ((_embed_group(store, embedder, g, reuse, stats), None) for g in groups))
    out: dict[str, str] = {}
    for part, part_stats in results:
        out.update(part)
        for shard_id, object_id in part.items():  # in this process: a pool worker cannot flush a batch
            store.put_action(vectors_action_key(embedder.id, shard_id), object_id)
        if part_stats is not None:
            for name, value in part_stats.__dict__.items():
                setattr(stats, name, getattr(stats, name) + value)
        if progress is not None:
            progress("embed", len(out), len(pending))
    return out


def attach_vectors(store: Store, manifest: Manifest, embedder_name: str,
                   previous: Manifest | None, progress: Progress | None = None) -> Manifest:
    """Return `manifest` with its vectors: embedder id set, objects listed in extras."""
    started = time.perf_counter()
    embedder_id = resolve_embedder_id(embedder_name)  # the model loads only if something is new
    previous_map = _previous_map(previous, embedder_id)
    stats = VectorStats()
    found: dict[str, str] = {}
    pending: list[str] = []
    for shard_id in sorted(manifest.shard_ids()):
        object_id = previous_map.get(shard_id) or store.get_action(vectors_action_key(embedder_id, shard_id))
        if object_id and store.has(object_id):
            found[shard_id] = object_id
            stats.shards_reused += 1
        else:
            pending.append(shard_id)
    embedder = get_embedder(embedder_name) if pending else None
    if embedder is not None and embedder.id != embedder_id:
        raise IndexIncompatible(f"embedder {embedder_name} made {embedder.id}, expected {embedder_id}")
    reuse = _Reuse(store, embedder_id)
    if pending and previous is not None and previous_map:
        old_by_path = {f.path: f.shard for f in previous.files if f.shard}
        pending_set = set(pending)
        for f in manifest.files:
            old = old_by_path.get(f.path)
            if f.shard in pending_set and old and old in previous_map:
                reuse.add_object(previous_map[old])
    if embedder is not None:
        found.update(_embed_shards(store, embedder, pending, reuse, stats, progress))
    objects = sorted(set(manifest.extras.get("objects", [])) | set(found.values()))
    append_log(store, "vectors", {"embedder_id": embedder_id, **stats.__dict__,
                                  "seconds": round(time.perf_counter() - started, 3),
                                  "at": int(time.time())})
    return replace(manifest, embedder_id=embedder_id).with_extras(
        objects=objects, vectors=dict(sorted(found.items())))
