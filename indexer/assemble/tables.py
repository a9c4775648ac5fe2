"""A manifest's entries as rows of the assembly's per-path tables (files, chunks, symbols,
refs), read from their shards; which paths an incremental assembly replaces."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from ... import kernels
from ...errors import StoreCorrupt
from ...format.assembly import sql_literals
from ...format.manifest import FileEntry, Manifest
from ...format.shard import PACKED, SHARD_SCHEMA, element_columns
from ...roles import HEAD_CHARS, file_role
from ...store import Store
from .graph_sql import target_key

PER_PATH_TABLES = ("files", "chunks", "symbols", "refs", "term_postings", "docs")

# An incremental assembly keeps the removed paths' old rows of these tables (columns) in temp
# tables delta_old_<table> for the derived steps to compare with the new ones.
DELTA_OLD = {"files": "*", "symbols": "*", "refs": "*"}

# Entries are inserted in batches of about this many source bytes: a batch's shards, flattened
# rows and postings are in memory at once (~20x its source bytes at the peak, measured on the
# stdlib), so a huge tree is assembled in bounded memory. A full assembly of more than one
# batch merges the batches' term-sorted postings into term_postings at the end (postings_merge.py).
BATCH_SOURCE_BYTES = 128 << 20


def _symbol_id(path: str, stable_id: str) -> str:
    """SQL for symbol_id: row identity inside a manifest, stable while the symbol stays at its path."""
    return f"substr(md5({path} || chr(0) || {stable_id}), 1, 16)"


def batches(entries: list[FileEntry], limit: int = BATCH_SOURCE_BYTES) -> list[list[FileEntry]]:
    """`entries` in order, cut into runs of at most `limit` bytes of indexed source (a larger
    entry is a run of its own; skipped files have no rows to hold and count nothing); none for
    no entries."""
    out: list[list[FileEntry]] = []
    size = limit
    for f in entries:
        weight = f.size if f.indexed else 0
        if size + weight > limit or not out:
            out.append([])
            size = 0
        out[-1].append(f)
        size += weight
    return out


def changed_paths(old: Manifest | None, new: Manifest) -> tuple[set[str], list[FileEntry]]:
    """(paths whose rows must go, entries whose rows must be inserted)."""
    if old is None:
        return set(), list(new.files)
    old_by_path = {f.path: f for f in old.files}
    new_by_path = {f.path: f for f in new.files}
    remove = {p for p, f in old_by_path.items() if new_by_path.get(p) != f}
    insert = [f for p, f in new_by_path.items() if old_by_path.get(p) != f]
    return remove, insert


def entry_shards(con, store: Store, indexed: list[FileEntry], tables: Mapping[str, object]):
    """One row per entry of `indexed`, in its order (SHARD_SCHEMA): the shard from the caller's
    Arrow tables where it has them, else from the verified Parquet objects."""
    stored = sorted({f.shard for f in indexed if f.shard not in tables})
    for shard in stored:
        data = store.get(shard)  # re-hash before DuckDB's Parquet reader touches the bytes
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
            path = next(f.path for f in indexed if f.shard == shard)
            raise StoreCorrupt(f"shard {shard[:12]} ({path}) is not a Parquet file",
                               hint="run `codeagent verify`, delete the object and build again")
    rows = {}
    if stored:
        files = {str(store.object_path(s)): s for s in stored}
        listed = sql_literals(files)
        read = con.sql(f"SELECT * FROM read_parquet([{listed}], filename=true)").to_arrow_table()
        shard_of = [files[f] for f in read.column("filename").to_pylist()]
        read = kernels.cast_table(read.drop_columns(["filename"]), SHARD_SCHEMA)
        rows = {s: read.slice(i, 1) for i, s in enumerate(shard_of)}
    shards = pa.concat_tables([tables[f.shard] if f.shard in tables else rows[f.shard]
                               for f in indexed])
    return shards if shards.schema.equals(SHARD_SCHEMA) else kernels.cast_table(shards, SHARD_SCHEMA)


def flatten(shards, column: str, **per_entry):
    """The elements of the list column `column`, one row each: their fields (shard.element_columns;
    chunks, symbols, refs: and `ordinal`), `e` (the entry's row) and `per_entry` arrays (one
    value per entry) repeated, dictionary-encoded. One chunk per column: DuckDB scans many
    small Arrow chunks far slower than one."""
    lists = shards.column(column).combine_chunks()
    offsets = lists.offsets.to_numpy()
    counts = np.diff(offsets)
    e = np.repeat(np.arange(len(counts), dtype=np.int32), counts)
    columns = element_columns(column, kernels.list_values(lists))
    if column in PACKED:
        first = np.repeat(offsets[:-1] - offsets[0], counts)
        columns["ordinal"] = kernels.from_numpy((np.arange(len(e), dtype=np.int32) - first).astype(np.int32))
    columns["e"] = kernels.from_numpy(e)
    for name, values in per_entry.items():
        columns[name] = pa.DictionaryArray.from_arrays(columns["e"], values)
    return pa.table(columns)


def path_table(con, name: str, paths: list[str]) -> None:
    con.register("_paths", pa.table({"path": pa.array(paths, pa.string())}))
    con.execute(f"CREATE TEMP TABLE {name} AS SELECT path FROM _paths")
    con.unregister("_paths")


def mark_delta(con, remove: set[str], insert: list[FileEntry]) -> None:
    """Name what changed (delta_removed, delta_added), keep the removed paths' old rows
    (delta_old_<table>) and delete their rows from the per-path tables."""
    path_table(con, "delta_removed", sorted(remove))
    path_table(con, "delta_added", [f.path for f in insert])
    if not remove:
        return
    for table, columns in DELTA_OLD.items():
        con.execute(f"""CREATE TEMP TABLE delta_old_{table} AS SELECT {columns}
            FROM {table} WHERE path IN (SELECT path FROM delta_removed)""")
    for table in PER_PATH_TABLES:
        con.execute(f"DELETE FROM {table} WHERE path IN (SELECT path FROM delta_removed)")


def insert_skipped(con, skipped: list[FileEntry]) -> None:
    """The files rows of entries that were not parsed (their reason recorded)."""
    if not skipped:
        return
    con.register("skipped_files", pa.table({
        "path": [f.path for f in skipped], "blob": [f.blob for f in skipped],
        "size": [f.size for f in skipped], "language": [f.language for f in skipped],
        "status": [f.status for f in skipped], "reason": [f.reason for f in skipped],
        "role": [file_role(f.path) for f in skipped],
    }))
    con.execute("INSERT INTO files SELECT path, blob, size, language, status, reason, '', 0, role "
                "FROM skipped_files")
    con.unregister("skipped_files")


def insert_rows(con, shards, paths, indexed: list[FileEntry]) -> None:
    """The files, chunks, symbols and refs rows of the `indexed` entries, whose shards (one
    row each, SHARD_SCHEMA) and paths (an Arrow string array) are given in their order. The
    files' texts are read for their roles only (the resident texts keep them: texts.py)."""
    language = shards.column("language").combine_chunks()
    con.register("e_files", pa.table({
        "path": paths, "shard": pa.array([f.shard for f in indexed], pa.string()),
        **{c: shards.column(c).combine_chunks()
           for c in ("blob", "size", "language", "line_count", "text")}}))
    heads = con.execute(f"SELECT left(text, {HEAD_CHARS}) FROM e_files").fetchall()
    con.register("e_roles", pa.table({"role": [file_role(f.path, h or "") for f, (h,) in zip(indexed, heads)]}))
    con.execute("""INSERT INTO files SELECT path, blob, size, language, 'indexed', '', shard,
        line_count, role FROM e_files POSITIONAL JOIN e_roles""")
    con.unregister("e_roles")
    con.register("e_chunks", flatten(shards, "chunks", path=paths))
    con.execute("""INSERT INTO chunks SELECT path, ordinal, kind, heading, start_line, start_col,
        end_line, end_col, start_byte, end_byte, symbol, text FROM e_chunks""")
    con.register("e_symbols", flatten(shards, "symbols", path=paths, language=language))
    con.execute(f"""CREATE TEMP TABLE e_ids AS SELECT e, ordinal, {_symbol_id('path', 'stable_id')}
        AS symbol_id FROM e_symbols""")
    con.execute("""INSERT INTO symbols SELECT s.path, s.language, s.ordinal, i.symbol_id,
            s.stable_id, s.kind, s.name, s.qualified_name, s.signature, s.doc, s.visibility,
            s.modifiers, s.start_line, s.start_col, s.end_line, s.end_col, s.start_byte,
            s.end_byte, s.name_line, s.name_col, s.name_end_line, s.name_end_col, s.parent,
            p.symbol_id, s.body_hash
        FROM e_symbols s JOIN e_ids i ON i.e = s.e AND i.ordinal = s.ordinal
        LEFT JOIN e_ids p ON p.e = s.e AND p.ordinal = s.parent AND s.parent >= 0""")
    con.register("e_refs", flatten(shards, "refs", path=paths, language=language))
    con.execute(f"""INSERT INTO refs SELECT *, split_part(tkey, '.', 1), split_part(tkey, '.', -1)
        FROM (SELECT r.path, r.language, r.ordinal, r.kind, r.target, r.module, r.alias, r.source,
            src.symbol_id, r.start_line, r.start_col, r.end_line, r.end_col, {target_key('r.target')} AS tkey
        FROM e_refs r LEFT JOIN e_ids src ON src.e = r.e AND src.ordinal = r.source AND r.source >= 0)""")
    con.execute("DROP TABLE e_ids")
    for name in ("e_files", "e_chunks", "e_symbols", "e_refs"):
        con.unregister(name)
