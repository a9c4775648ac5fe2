"""A reader process for the concurrency suite: query the ref's index until told to stop.

Usage: reader_child.py STORE REPO MODE STOP_FILE
MODE raw: read the ref, open the assembled DuckDB read-only (retrying when a newer build
pruned it: that is what readers must do). MODE engine: the query engine's IndexFollower.
Each answer says which manifest produced it; it is checked against that manifest's own
file list (count and the marker file's bytes), so an answer mixing two manifests is caught.
Prints one JSON line of counts at the end.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import duckdb

from codeagent import format as fmt
from codeagent.hashing import hash_bytes
from codeagent.format.manifest import load_manifest
from codeagent.query.overlay import connect_overlay
from codeagent.store import Store

QUERY = """SELECT (SELECT value FROM meta WHERE key = 'manifest_id'),
    (SELECT count(*) FROM files), (SELECT text FROM files WHERE path = 'marker.py')"""


def _check(store: Store, cache: dict, opened: str, row: tuple) -> str:
    meta_id, count, marker = row
    if meta_id != opened:
        return f"opened {opened[:12]} but meta says {meta_id[:12]}"
    if opened not in cache:
        cache[opened] = load_manifest(store, opened)
    manifest = cache[opened]
    if count != len(manifest.files):
        return f"{opened[:12]}: {count} files rows, manifest lists {len(manifest.files)}"
    entry = manifest.file("marker.py")
    if entry is not None and (marker is None or hash_bytes(marker.encode()) != entry.blob):
        return f"{opened[:12]}: marker.py text is not the manifest's blob"
    return ""


def _raw_query(store: Store) -> tuple[str, tuple, int]:
    for retries in range(50):
        mid = store.read_ref("worktree")
        if not store.is_assembled(mid):
            continue
        base = store.assembly_base(mid)  # a work-tree overlay reads its base's database too
        try:
            con = (duckdb.connect(str(store.assembled_dir(mid) / fmt.DUCKDB_FILE), read_only=True)
                   if base is None else connect_overlay(store.assembled_dir(base or mid), store.assembled_dir(mid)))
        except duckdb.IOException:
            continue  # pruned between reading the ref and opening: read the ref again
        try:
            return mid, con.execute(QUERY).fetchone(), retries
        finally:
            con.close()
    raise RuntimeError("50 retries without an openable index")


def main() -> None:
    store_dir, repo, mode, stop = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    store = Store(store_dir)
    counts = {"queries": 0, "errors": 0, "mixed": 0, "retries": 0, "manifests_seen": 0}
    errors: list[str] = []
    seen: set[str] = set()
    cache: dict = {}
    follower = None
    if mode == "engine":
        from codeagent.query.index import IndexFollower

        follower = IndexFollower(repo=repo, store_dir=store_dir, ref="worktree")
    while not stop.exists():
        try:
            if follower is not None:
                with follower.view() as view:
                    mid, row = view.manifest_id, tuple(view.sql(QUERY)[0])
            else:
                mid, row, retries = _raw_query(store)
                counts["retries"] += retries
            counts["queries"] += 1
            seen.add(mid)
            why = _check(store, cache, mid, row)
            if why:
                counts["mixed"] += 1
                errors.append(f"{mode}: {why}")
        except Exception as exc:  # every failure is a finding: count it, keep reading
            counts["errors"] += 1
            errors.append(f"{mode}: {type(exc).__name__}: {exc}")
        time.sleep(0.025)  # leave CPU to the builder: the machine may have 2 cores
    counts["manifests_seen"] = len(seen)
    print(json.dumps({"counts": counts, "errors": errors[:10], "seen": sorted(seen)}))


if __name__ == "__main__":
    main()
