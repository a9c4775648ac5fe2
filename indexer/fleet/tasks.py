"""The fleet build's units of work, run by either engine in a worker process.

Each is a pure function of content apart from its writes into the store, which are
content-addressed: a task run twice (Ray retries one whose worker died) writes the same bytes
under the same object names, and a half-written object is a temp file that the next build's
sweep removes. Neither touches refs or the action cache: the driver records those.
"""

from __future__ import annotations

from pathlib import Path

from ...format.manifest import load_manifest, shard_key
from ...store import Store
from ..parse import parse_bytes
from ..secret_cache import load_secret_patterns

# (file bytes, language, blob id, size cap, a path the content has): parse_bytes' arguments
ParseJob = tuple[bytes, str, str, int, str]


def parse_batch(store_root: str, jobs: list[ParseJob]) -> list[tuple[str, str, int]]:
    """Parse a batch into shards stored under `store_root`; [(shard key, shard object id or
    "skip:<reason>", 1 when the shard object was new)] in the batch's order. The objects are
    flushed to disk before the answer: the driver's ref swap names them."""
    store = Store(store_root)
    load_secret_patterns(store)
    out: list[tuple[str, str, int]] = []
    for data, language, blob, max_bytes, path in jobs:
        key = shard_key(blob, language)
        result = parse_bytes(data, language, blob, max_bytes, path)
        if result.shard is None:
            out.append((key, f"skip:{result.reason}", 0))
            continue
        shard_id, written = store.add(result.shard)
        out.append((key, shard_id, int(written)))
    store.flush_written()
    return out


def assemble_manifest(store_root: str, manifest_id: str, previous_id: str | None) -> str:
    """Assemble one manifest (on its ref's previous assembly when there is one, as `codeagent
    build` does), its graph included; returns the id. Assembled already: nothing to do."""
    from ..assemble.graph_part import graph_phase  # pyarrow and DuckDB: only a worker that assembles
    from ..assemble.overlay import assemble_change
    from ..assemble.plan import Assembled, Assembly
    from ..budget import MemoryBudget

    store = Store(store_root)
    if store.is_assembled(manifest_id) and not store.graph_pending(manifest_id):
        return manifest_id
    manifest = load_manifest(store, manifest_id)
    previous = None
    if previous_id and previous_id != manifest_id and store.is_assembled(previous_id):
        try:
            previous = Assembled(load_manifest(store, previous_id), previous_id)
        except Exception:  # an unreadable previous manifest: assemble from the shards alone
            previous = None
    memory = MemoryBudget()
    assemble_change(Assembly(store, manifest, manifest_id, previous=previous, memory=memory), overlay=False)
    if store.graph_pending(manifest_id):
        graph_phase(store, manifest, manifest_id, memory=memory)
    store.flush_written()
    return manifest_id


def store_root(store: Store) -> str:
    return str(Path(store.root).resolve())
