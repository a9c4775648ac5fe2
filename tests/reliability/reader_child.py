"""A reader process for the concurrency suite: query the ref's index until told to stop.

Usage: reader_child.py STORE REPO MODE STOP_FILE
MODE raw: read the ref, open the assembled DuckDB read-only (retrying when a newer build
pruned it: that is what readers must do). MODE engine: the query engine's IndexFollower (as a
server reads). MODE open: the query engine's open_index, a fresh view per query (as a CLI
command reads).
Each answer says which manifest produced it; it is checked against that manifest's own
file list (count and version.py's bytes), so an answer mixing two manifests is caught. The
engine's readers also ask a symbol lookup, a full-text search and a regex grep in the same
view: each must come from that manifest and name the version its version.py holds.
Prints one JSON line of counts at the end.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import duckdb

from codeagent import format as fmt
from codeagent.hashing import hash_bytes
from codeagent.format.manifest import load_manifest
from codeagent.format.shard import shard_texts
from codeagent.query import IndexFollower, find_symbols, grep, open_index, search_text
from codeagent.query.overlay import connect_overlay
from codeagent.store import Store

QUERY = """SELECT (SELECT value FROM meta WHERE key = 'manifest_id'),
    (SELECT count(*) FROM files), (SELECT shard FROM files WHERE path = 'version.py')"""


def _with_text(store: Store, row: tuple) -> tuple:
    """QUERY's row with version.py's text (read from the shard its files row names: the
    assembly keeps no texts) in place of that shard's id."""
    texts = shard_texts([("version.py", row[2])], store.get) if row[2] else None
    return (*row[:2], texts.column("text")[0].as_py() if texts is not None and texts.num_rows else None)


def _check(store: Store, cache: dict, opened: str, row: tuple) -> str:
    meta_id, count, version = row
    if meta_id != opened:
        return f"opened {opened[:12]} but meta says {meta_id[:12]}"
    if opened not in cache:
        cache[opened] = load_manifest(store, opened)
    manifest = cache[opened]
    if count != len(manifest.files):
        return f"{opened[:12]}: {count} files rows, manifest lists {len(manifest.files)}"
    entry = manifest.file("version.py")
    if entry is not None and (version is None or hash_bytes(version.encode()) != entry.blob):
        return f"{opened[:12]}: version.py text is not the manifest's blob"
    return ""


def _check_engine(view, row: tuple) -> str:
    """The symbol, text and grep answers of one view: from its manifest, of its version."""
    sym = find_symbols(view, "version_", match="prefix", limit=5)
    text = search_text(view, "marker", limit=5)
    lines = grep(view, r"VERSION = \d+", context=0)
    ids = [sym.metadata.manifest_id, text.metadata.manifest_id, lines.metadata.manifest_id]
    if ids != [view.manifest_id] * 3:
        return f"{view.manifest_id[:12]}: answers from {[i[:12] for i in ids]}"
    n = re.match(r"VERSION = (\d+)", row[2] or "")
    if n is None:
        return f"{view.manifest_id[:12]}: no VERSION in version.py"
    got = (sorted({h.name for h in sym.results if h.result_type == "symbol"}),
           sorted({h.snippet for h in text.results}), sorted({m.line for m in lines.matches}))
    want = ([f"version_{n[1]}"], [f"marker {n[1]}"], [f"VERSION = {n[1]}"])
    return "" if got == want else f"{view.manifest_id[:12]}: version {n[1]} but answers {got}"


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
            return mid, _with_text(store, con.execute(QUERY).fetchone()), retries
        finally:
            con.close()
    raise RuntimeError("50 retries without an openable index")


def _query(mode: str, store: Store, repo: Path, follower: IndexFollower | None,
           cache: dict) -> tuple[str, str, int]:
    """(manifest id, what is wrong with its answer or "", retries) of one query."""
    if mode == "raw":
        mid, row, retries = _raw_query(store)
        return mid, _check(store, cache, mid, row), retries
    with (follower.view() if follower is not None else open_index(repo)) as view:
        row = _with_text(store, tuple(view.sql(QUERY)[0]))
        why = _check(store, cache, view.manifest_id, row) or _check_engine(view, row)
        return view.manifest_id, why, 0


def main() -> None:
    store_dir, repo, mode, stop = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], Path(sys.argv[4])
    store = Store(store_dir)
    counts = {"queries": 0, "errors": 0, "mixed": 0, "retries": 0, "manifests_seen": 0}
    errors: list[str] = []
    seen: set[str] = set()
    cache: dict = {}
    follower = IndexFollower(repo=repo, store_dir=store_dir, ref="worktree") if mode == "engine" else None
    while not stop.exists():
        try:
            mid, why, retries = _query(mode, store, repo, follower, cache)
            counts["queries"] += 1
            counts["retries"] += retries
            seen.add(mid)
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
