"""The per-manifest vector artifact: matrix, key table and (when large enough) a usearch index.

Rows are the manifest's items in (path, doc_kind, ordinal) order. Below ANN_THRESHOLD rows
the query side searches the matrix exactly; above it a usearch HNSW index is written too.
When the previous manifest's artifact used the same embedder, rows of unchanged paths are
copied from it and its usearch index is patched (remove changed keys, add new ones) instead
of rebuilt, unless too much changed or deleted slots pile up. Layout: `format.py`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from .. import format as fmt
from ..manifest import Manifest
from ..store import Store
from .assemble import artifact_step
from .vectors import load_block

ANN_THRESHOLD = int(os.environ.get("CODEAGENT_ANN_THRESHOLD", "20000"))
REBUILD_FRACTION = 0.3  # patch the previous index only while changes stay below this share
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 96


def _layout(manifest: Manifest) -> list[tuple[str, str]]:
    """(path, vector object id) for each indexed file with vectors, sorted by path."""
    vec_map = manifest.extras.get("vectors") or {}
    return [(f.path, vec_map[f.shard]) for f in manifest.files if f.shard in vec_map]


def _previous(prev_dir: Path | None, embedder_id: str) -> dict | None:
    """The previous artifact (meta, keys table, matrix) when it is reusable."""
    if prev_dir is None or not (prev_dir / fmt.VECTORS_META).exists():
        return None
    meta = json.loads((prev_dir / fmt.VECTORS_META).read_text())
    if meta.get("embedder_id") != embedder_id:
        return None
    import pyarrow.parquet as pq

    keys = pq.read_table(prev_dir / fmt.VECTOR_KEYS)
    matrix = np.load(prev_dir / fmt.VECTORS_MATRIX, mmap_mode="r")
    return {"meta": meta, "keys": keys, "matrix": matrix, "dir": prev_dir}


def _ann_index(dim: int):
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="f16", connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


def _keys_schema():
    import pyarrow as pa

    return pa.schema([("key", pa.int64()), ("path", pa.string()), ("doc_kind", pa.string()),
                      ("ordinal", pa.int32()), ("object", pa.string())])


def _prev_spans(prev: dict | None) -> tuple[dict[tuple[str, str], tuple[int, int]], int]:
    """{(path, object): (first row, row count)} of the previous artifact, and its next key."""
    if prev is None:
        return {}, 0
    t = prev["keys"]
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for r, (path, obj) in enumerate(zip(t.column("path").to_pylist(), t.column("object").to_pylist())):
        first, count = spans.get((path, obj), (r, 0))
        spans[(path, obj)] = (first, count + 1)
    keys = t.column("key").to_numpy()
    return spans, (int(keys.max()) + 1 if len(keys) else 0)


def _assemble_rows(store: Store, manifest: Manifest, prev: dict | None) -> dict:
    """Rows of the new artifact, reusing the previous one's rows and keys per unchanged path."""
    import pyarrow as pa

    spans, next_key = _prev_spans(prev)
    tables: list = []
    parts: list[np.ndarray] = []
    kept = 0
    added: list[int] = []
    for path, obj in _layout(manifest):
        span = spans.get((path, obj))
        if span is not None:
            first, count = span
            tables.append(prev["keys"].slice(first, count).select(  # type: ignore[index]
                ["key", "path", "doc_kind", "ordinal", "object"]))
            parts.append(np.asarray(prev["matrix"][first:first + count]))  # type: ignore[index]
            kept += count
            continue
        block = load_block(store, obj, manifest.embedder_id)
        keys = list(range(next_key, next_key + len(block.items)))
        next_key += len(keys)
        added.extend(keys)
        parts.append(block.vectors)
        tables.append(pa.table({
            "key": keys, "path": [path] * len(keys), "doc_kind": [k for k, _o, _h in block.items],
            "ordinal": [o for _k, o, _h in block.items], "object": [obj] * len(keys)},
            schema=_keys_schema()))
    return {"tables": tables, "parts": parts, "kept": kept, "added": added}


def _write_index(work_dir: Path, rows: dict, matrix: np.ndarray, prev: dict | None) -> dict:
    """Write the usearch file when large enough; returns the meta fields it decided."""
    n = matrix.shape[0]
    if n < ANN_THRESHOLD:
        return {"ann": False, "deleted": 0, "ann_build": "none"}
    keys = rows["table"].column("key").to_numpy().astype(np.uint64)
    prev_meta = prev["meta"] if prev else {}
    removed = (prev_meta.get("count", 0) - rows["kept"]) if prev else 0
    deleted = prev_meta.get("deleted", 0) + removed
    patchable = (prev is not None and prev_meta.get("ann")
                 and (removed + len(rows["added"])) < REBUILD_FRACTION * n
                 and deleted < REBUILD_FRACTION * n)
    if patchable:
        shutil.copyfile(prev["dir"] / fmt.ANN_FILE, work_dir / fmt.ANN_FILE)  # type: ignore[index]
        index = _ann_index(matrix.shape[1])
        index.load(str(work_dir / fmt.ANN_FILE))
        old_keys = prev["keys"].column("key").to_numpy().astype(np.uint64)  # type: ignore[index]
        gone = old_keys[~np.isin(old_keys, keys)]
        if len(gone):
            index.remove(gone)
        if rows["added"]:
            pos = np.isin(keys, np.asarray(rows["added"], dtype=np.uint64))
            index.add(keys[pos], matrix[pos], threads=os.cpu_count() or 1)
        index.save(str(work_dir / fmt.ANN_FILE))
        return {"ann": True, "deleted": deleted, "ann_build": "patched"}
    index = _ann_index(matrix.shape[1])
    index.add(keys, matrix, threads=os.cpu_count() or 1)
    index.save(str(work_dir / fmt.ANN_FILE))
    return {"ann": True, "deleted": 0, "ann_build": "full"}


@artifact_step
def build_vector_artifact(store: Store, manifest: Manifest, manifest_id: str, work_dir: Path,
                          prev_dir: Path | None) -> None:
    """Write the manifest's vector files into its assembled directory (nothing without vectors)."""
    if not manifest.embedder_id or not manifest.extras.get("vectors"):
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..embedding import parse_embedder_id

    dim = parse_embedder_id(manifest.embedder_id)[2]
    prev = _previous(prev_dir, manifest.embedder_id)
    rows = _assemble_rows(store, manifest, prev)
    matrix = (np.concatenate(rows["parts"]).astype(np.float16, copy=False) if rows["parts"]
              else np.zeros((0, dim), dtype=np.float16))
    np.save(work_dir / fmt.VECTORS_MATRIX, matrix)
    table = pa.concat_tables(rows["tables"]) if rows["tables"] else _keys_schema().empty_table()
    table = table.add_column(0, "row", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    rows["table"] = table
    pq.write_table(table, work_dir / fmt.VECTOR_KEYS)
    decided = _write_index(work_dir, rows, matrix, prev)
    meta = {"embedder_id": manifest.embedder_id, "dim": dim, "count": int(matrix.shape[0]),
            "threshold": ANN_THRESHOLD, "manifest_id": manifest_id, **decided}
    (work_dir / fmt.VECTORS_META).write_text(json.dumps(meta, sort_keys=True, indent=1))
