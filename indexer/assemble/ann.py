"""The per-manifest vector artifact: matrix, row keys and (when large enough) a usearch index.

Rows are the manifest's items, files in path order. Below ANN_THRESHOLD rows the query
side searches the matrix exactly; above it a usearch HNSW index is written too.
When the base's artifact (plan.py) used the same embedder, rows of unchanged paths are
copied from it and its usearch index is patched (remove changed keys, add new ones) instead
of rebuilt, unless too much changed or deleted slots pile up. Layout: `format.py`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from ... import format as fmt
from ...embedding import parse_embedder_id
from ...format.manifest import Manifest
from ...store import Store
from .plan import Assembly
from .vectors import load_block

ANN_THRESHOLD = 20000  # rows; CODEAGENT_ANN_THRESHOLD overrides it when the build runs
REBUILD_FRACTION = 0.3  # patch the previous index only while changes stay below this share
CONNECTIVITY = 16
EXPANSION_ADD = 64
EXPANSION_SEARCH = 96
# Up to this many vectors per add, insertion runs on one thread: the graph, and so the file and
# every search result, is the same on each build. Concurrent inserts race, and with many
# near-identical vectors (a one-function file's chunk and its symbol) they left a row unreachable
# about one full build in ten. Larger adds use every core (40k random rows, d=256: 17 s on one
# thread, 8 s on two).
SERIAL_ADD_ROWS = 10000


ROW_DTYPE = np.dtype([("key", "<i8"), ("kind", "u1"), ("ordinal", "<i4")])
KIND_CODES = {"s": 0, "c": 1}


def _layout(manifest: Manifest) -> list[tuple[str, str]]:
    """(path, vector object id) for each indexed file with vectors, sorted by path."""
    vec_map = manifest.extras.get("vectors") or {}
    return [(f.path, vec_map[f.shard]) for f in manifest.files if f.shard in vec_map]


def _base_artifact(base_dir: Path | None, embedder_id: str) -> dict | None:
    """The base's artifact (meta, files, rows, matrix) when it is reusable."""
    if base_dir is None or not (base_dir / fmt.VECTORS_META).exists():
        return None
    meta = json.loads((base_dir / fmt.VECTORS_META).read_text())
    if meta.get("embedder_id") != embedder_id or not (base_dir / fmt.VECTOR_ROWS).exists():
        return None
    files = json.loads((base_dir / fmt.VECTOR_FILES).read_text())["files"]
    return {"meta": meta, "dir": base_dir, "rows": np.load(base_dir / fmt.VECTOR_ROWS),
            "spans": {(p, o): (first, count) for p, o, first, count in files},
            "matrix": np.load(base_dir / fmt.VECTORS_MATRIX, mmap_mode="r")}


def _ann_index(dim: int):
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="f16", connectivity=CONNECTIVITY,
                 expansion_add=EXPANSION_ADD, expansion_search=EXPANSION_SEARCH)


def _assemble_rows(store: Store, manifest: Manifest, base: dict | None) -> dict:
    """Rows of the new artifact, reusing the previous one's rows and keys per unchanged file
    (also when it moved: same vector object, a path no longer there)."""
    spans = base["spans"] if base else {}
    next_key = int(base["rows"]["key"].max()) + 1 if base and len(base["rows"]) else 0
    layout = _layout(manifest)
    used = {spans[k][0] for k in layout if k in spans}
    moved: dict[str, list[tuple[int, int]]] = {}  # object -> spans no path claims (moved files)
    for (_path, obj), span in spans.items():
        if span[0] not in used:
            moved.setdefault(obj, []).append(span)
    rows: list[np.ndarray] = []
    parts: list[np.ndarray] = []
    files: list[list] = []
    kept = 0
    added: list[int] = []
    first = 0
    for path, obj in layout:
        span = spans.get((path, obj)) or (moved[obj].pop() if moved.get(obj) else None)
        if span is not None:
            start, count = span
            rows.append(base["rows"][start:start + count])  # type: ignore[index]
            parts.append(np.asarray(base["matrix"][start:start + count]))  # type: ignore[index]
            kept += count
        else:
            block = load_block(store, obj, manifest.embedder_id)
            count = len(block.items)
            recs = np.zeros(count, dtype=ROW_DTYPE)
            recs["key"] = np.arange(next_key, next_key + count)
            recs["kind"] = [KIND_CODES[k] for k, _o, _h in block.items]
            recs["ordinal"] = [o for _k, o, _h in block.items]
            added.extend(range(next_key, next_key + count))
            next_key += count
            rows.append(recs)
            parts.append(block.vectors)
        files.append([path, obj, first, count])
        first += count
    return {"rows": np.concatenate(rows) if rows else np.zeros(0, dtype=ROW_DTYPE),
            "parts": parts, "files": files, "kept": kept, "added": added}


def _threshold() -> int:
    return int(os.environ.get("CODEAGENT_ANN_THRESHOLD", ANN_THRESHOLD))


def _add_threads(count: int) -> int:
    return 1 if count <= SERIAL_ADD_ROWS else (os.cpu_count() or 1)


def _write_index(work_dir: Path, rows: dict, matrix: np.ndarray, base: dict | None) -> dict:
    """Write the usearch file when large enough; returns the meta fields it decided."""
    n = matrix.shape[0]
    if n < _threshold():
        return {"ann": False, "deleted": 0, "ann_build": "none"}
    keys = rows["rows"]["key"].astype(np.uint64)
    base_meta = base["meta"] if base else {}
    removed = (base_meta.get("count", 0) - rows["kept"]) if base else 0
    deleted = base_meta.get("deleted", 0) + removed
    patchable = (base is not None and base_meta.get("ann")
                 and (removed + len(rows["added"])) < REBUILD_FRACTION * n
                 and deleted < REBUILD_FRACTION * n)
    if patchable and removed == 0 and not rows["added"]:  # same keys (moves, skipped files)
        shutil.copyfile(base["dir"] / fmt.ANN_FILE, work_dir / fmt.ANN_FILE)  # type: ignore[index]
        return {"ann": True, "deleted": deleted, "ann_build": "reused"}
    if patchable:
        index = _ann_index(matrix.shape[1])
        index.load(str(base["dir"] / fmt.ANN_FILE))  # type: ignore[index]
        old_keys = base["rows"]["key"].astype(np.uint64)  # type: ignore[index]
        gone = old_keys[~np.isin(old_keys, keys)]
        if len(gone):
            index.remove(gone)
        if rows["added"]:
            pos = np.isin(keys, np.asarray(rows["added"], dtype=np.uint64))
            index.add(keys[pos], matrix[pos], threads=_add_threads(int(pos.sum())))
        index.save(str(work_dir / fmt.ANN_FILE))
        return {"ann": True, "deleted": deleted, "ann_build": "patched"}
    index = _ann_index(matrix.shape[1])
    index.add(keys, matrix, threads=_add_threads(n))
    index.save(str(work_dir / fmt.ANN_FILE))
    return {"ann": True, "deleted": 0, "ann_build": "full"}


def build_vector_artifact(assembly: Assembly, work_dir: Path, base_dir: Path | None) -> None:
    """Write the manifest's vector files into its assembled directory (nothing without vectors),
    reusing the base's (`base_dir`) rows of unchanged files; the build's memory budget is not
    read: the vectors' count sets what this holds."""
    store, manifest, manifest_id = assembly.store, assembly.manifest, assembly.manifest_id
    if not manifest.embedder_id or not manifest.extras.get("vectors"):
        return

    dim = parse_embedder_id(manifest.embedder_id)[2]
    base = _base_artifact(base_dir, manifest.embedder_id)
    rows = _assemble_rows(store, manifest, base)
    matrix = (np.concatenate(rows["parts"]).astype(np.float16, copy=False) if rows["parts"]
              else np.zeros((0, dim), dtype=np.float16))
    np.save(work_dir / fmt.VECTORS_MATRIX, matrix)
    np.save(work_dir / fmt.VECTOR_ROWS, rows["rows"])
    (work_dir / fmt.VECTOR_FILES).write_text(json.dumps({"files": rows["files"]}, separators=(",", ":")))
    decided = _write_index(work_dir, rows, matrix, base)
    meta = {"embedder_id": manifest.embedder_id, "dim": dim, "count": int(matrix.shape[0]),
            "threshold": _threshold(), "manifest_id": manifest_id, **decided}
    (work_dir / fmt.VECTORS_META).write_text(json.dumps(meta, sort_keys=True, indent=1))
