"""Resident structures of an overlay view: its base's memory-mapped arrays with the rows of the
paths the overlay masks dropped and those paths' rows, read through the merged views, merged
in. Building them from the merged views instead re-reads and re-sorts every row of the
repository on each overlay (~0.7 s of CPU for the symbol table on the standard library, as
much again for the edges); this costs a pass over the mapped columns plus work in the size
of the change.

The arrays are those a full assembly of the overlay's manifest writes, row for row:
  - each structure's rows are ordered by a key whose leading part (`Merge.order`: the path,
    or a term or a name, then the path) keeps each path's rows together, and a masked path's
    rows all come from one side: the kept base rows keep their order, and each run of new
    rows goes where a binary search over them puts it;
  - a key index (format/resident.KeyIndex: keys sorted, then row numbers) keeps its kept
    entries with their rows renumbered (which keeps their order) and takes the new rows'
    entries the same way.
A masked path's rows come from the structure's own SQL, run on a cursor whose search path
puts views restricted to the masked paths before the merged ones.

A view that follows another on the same base (IndexFollower hands on what the previous view
merged, `Merged`) starts from that view's parts instead of the base's, and merges in only the
paths whose rows differ between the two: those whose manifest entries differ (the per-path
tables' rows are those of the entry's shard) and, for a structure reading a graph table when
the graph moved between them (its step landed), those whose rows of it differ (compared in
DuckDB). An edit's view then costs the rows of the files changed since the last one, not of
every file changed since the base.
"""

from __future__ import annotations

import bisect
import secrets
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import AssemblyVanished, CodeagentError
from ..format import resident as arrays
from ..format.manifest import paths_changed
from ..format.overlay import BASE_DB, GRAPH_TABLES, MERGED_TABLES, restricted_view_sql
from ..format.folded import fold_array
from ..format.narrow import decoded_runs, run_decoded, signed_codes
from ..format.columns import same_hex
from ..format.resident import StringColumn, rows_column, take_column, whole
from .assembly_check import check_resident
from .index import IndexView, sql_literals

Key = Callable[[int], tuple]


@dataclass(frozen=True)
class Merge:
    """How one structure follows an overlay. `masks`: the tables whose masked paths change
    its rows; `restrict`: table -> path column, the tables its SQL reads restricted to those
    paths; `path`: its rows' path column; `order`: the columns its rows are sorted by first,
    ending with `path` (`exact_first`: after a leading `confidence = 'exact' DESC`)."""
    masks: tuple[str, ...]
    restrict: dict[str, str]
    path: str
    order: tuple[str, ...]
    exact_first: bool = False


MERGES = {
    # a symbol's symbol_names row (joined by symbol_id) carries the symbol's own path
    "symbols": Merge(("symbols", "symbol_names"), {"symbols": "path", "symbol_names": "path"},
                     "path", ("path",)),
    "refs": Merge(("refs",), {"refs": "path"}, "path", ("key", "path")),
    "edges": Merge(("edges",), {"edges": "src_path"}, "src_path", ("src_path",), exact_first=True),
    "texts": Merge(("files",), {"files": "path"}, "path", ("path",)),
    "postings": Merge(("term_postings", "docs"), {"term_postings": "path", "docs": "path"},
                      "path", ("term", "path")),
}
# Read by path only, through overlay_layers: their parts are never merged (the texts' blocks
# are compressed runs of files, format/texts.py).
LAYERED = ("texts",)


@dataclass(frozen=True)
class Merged:
    """A structure's parts as one overlay view merged them (`graph_id`: the manifest whose
    graph rows they hold, read from `graph_file`), for the view that follows it (module doc)."""
    base_id: str
    manifest_id: str
    graph_id: str
    graph_file: str
    parts: dict


def overlay_arrays(view: IndexView, structure: str, sql: str, *, lazy: bool = False) -> dict | None:
    """The structure's parts for overlay `view`, from the previous view's parts (module doc)
    or its base's mapped arrays; None when it has none to start from (no merge for the
    structure, or the base wrote no arrays). `lazy`: its key indexes as functions making
    them (merge_parts)."""
    if structure == "names":
        return overlay_names(view) if view.base_id is not None else None
    if structure in LAYERED:
        return None
    parts = since_previous(view, structure, sql, lazy=lazy)
    if parts is None:
        layers = overlay_layers(view, structure, sql)
        if layers is None:
            return None
        parts = merge_parts(*layers[:2], MERGES[structure], layers[2], lazy=lazy)
    graph_file = view.sql("SELECT path FROM duckdb_databases() WHERE database_name = ?",
                          [view.overlay_db(GRAPH_TABLES[0])])[0][0]
    view.merged[(structure, sql)] = Merged(view.base_id, view.manifest_id, view.graph_manifest_id,
                                           graph_file, parts)
    return parts


def since_previous(view: IndexView, structure: str, sql: str, *, lazy: bool = False) -> dict | None:
    """The structure's parts for `view` from those the view before it merged (`view.previous`),
    with the rows of the paths that differ between them merged in; None when there are none,
    or they are of another base or (for a structure reading a graph table) another graph."""
    import duckdb

    before, merge = view.previous.pop((structure, sql), None), MERGES.get(structure)
    if before is None or merge is None or before.base_id != view.base_id:
        return None
    graph = [t for t in merge.masks if t in GRAPH_TABLES] if before.graph_id != view.graph_manifest_id else []
    try:
        paths = frozenset(paths_changed(view.store, before.manifest_id, view.manifest_id)
                          | graph_changed(view, before.graph_file, graph))
    except (CodeagentError, OSError, ValueError, KeyError, TypeError, duckdb.Error):
        return None  # an unreadable manifest or graph: merged from the base, which says what is wrong
    if not paths:
        return before.parts if lazy else _made(before.parts)
    new = arrays.STRUCTURES[structure][0](changed_rows(view, structure, merge, paths, sql))
    return merge_parts(_made(before.parts), new, merge, paths, lazy=lazy)


def _made(parts: dict) -> dict:
    """`parts` with each part still to be made (merge_parts' `lazy`) made."""
    return {part: value() if callable(value) else value for part, value in parts.items()}


def overlay_layers(view: IndexView, structure: str, sql: str,
                   read: Callable | None = None) -> tuple[dict, dict, frozenset[str]] | None:
    """(the base's mapped parts, the parts of the masked paths' rows, those paths) of overlay
    `view`, for a structure read by path only (a look-up answers from the second when the
    path is masked, else from the first: nothing is merged); None as `overlay_arrays`.
    `read`: what makes the builder's rows of `sql`'s (structure_arrays)."""
    merge = MERGES.get(structure)
    if merge is None or view.base_id is None:
        return None
    try:
        check_resident(view, structure, view.base_id)
    except AssemblyVanished:
        return None
    base = arrays.map_arrays(view.path.parent, structure)
    if base is None:
        return None
    paths: frozenset[str] = frozenset().union(*(view.masked_paths(t) for t in merge.masks))
    rows = changed_rows(view, structure, merge, paths, sql)
    return base, arrays.STRUCTURES[structure][0](read(rows) if read is not None else rows), paths


def graph_changed(view: IndexView, graph_file: str, tables: list[str]) -> set[str]:
    """The paths whose rows of the graph `tables` differ between the graph rows of the
    overlay file `graph_file` (and their masks) and `view`'s, both over the view's base."""
    if not tables:
        return set()
    alias, cur = f"previous_graph_{secrets.token_hex(4)}", view.con.cursor()
    try:
        cur.execute(f"ATTACH {sql_literals([graph_file])} AS {alias} (READ_ONLY)")
        try:
            return set().union(*(_rows_differ(view, cur, alias, t) for t in tables))
        finally:
            cur.execute(f"DETACH {alias}")
    finally:
        cur.close()


def _rows_differ(view: IndexView, cur, alias: str, table: str) -> set[str]:
    column = MERGED_TABLES[table]
    old = {r[0] for r in cur.execute(f"SELECT path FROM {alias}.main.mask_{table}").fetchall()}
    new = view.masked_paths(table)
    if not old | new:
        return set()
    listed = sql_literals(sorted(old | new))
    a, b = (f"SELECT * FROM {BASE_DB}.main.{table} WHERE {column} IN ({listed}) AND {column} NOT IN "
            f"(SELECT path FROM {db}.main.mask_{table}) UNION ALL SELECT * FROM {db}.main.{table} "
            f"WHERE {column} IN ({listed})" for db in (alias, view.overlay_db(table)))
    return {r[0] for r in cur.execute(
        f"SELECT {column} FROM (SELECT * FROM ({a}) EXCEPT ALL SELECT * FROM ({b})) UNION "
        f"SELECT {column} FROM (SELECT * FROM ({b}) EXCEPT ALL SELECT * FROM ({a}))").fetchall()}


def changed_rows(view: IndexView, structure: str, merge: Merge, paths: frozenset[str], sql: str):
    """`sql`'s rows (an Arrow table) over the merged views restricted to `paths`. The views
    live in a schema of the call's own, dropped after: two threads merging one structure of
    one view at once (a request and the watcher's warming) would otherwise create the same
    schema in two transactions, a DuckDB write-write conflict."""
    schema = f"changed_{structure}_{secrets.token_hex(4)}"
    listed = sql_literals(sorted(paths)) if paths else "NULL"
    cur = view.con.cursor()
    try:
        cur.execute(f"CREATE SCHEMA {schema}")
        try:
            for table, column in merge.restrict.items():
                unmasked = sorted(paths - view.masked_paths(table))
                cur.execute(restricted_view_sql(schema, table, column, listed,
                                                sql_literals(unmasked) if unmasked else None,
                                                overlay=view.overlay_db(table)))
            cur.execute(f"SET search_path = '{schema},main'")
            return cur.sql(sql).to_arrow_table()
        finally:
            cur.execute("SET search_path = 'main'")
            cur.execute(f"DROP SCHEMA {schema} CASCADE")
    finally:
        cur.close()


def merge_parts(base: dict, new: dict, merge: Merge, paths: frozenset[str], *, lazy: bool = False) -> dict:
    """`base`'s parts without the rows of `paths`, with `new`'s (the same structure's parts
    holding only those paths' rows) merged in; `lazy`: the key indexes (every part but the
    rows) as functions that merge them when called, so a reader merges only those it uses."""
    rows = base["rows"]
    keep = ~path_rows(rows.column(merge.path), paths)
    out = {}
    out["rows"], old_to_new, new_at = merge_sorted(rows, keep, new["rows"], row_key(rows, merge),
                                                   row_key(new["rows"], merge))
    for part in base:
        if part != "rows":
            make = partial(_merge_index, (base[part], rows), (new[part], new["rows"]), part, old_to_new, new_at)
            out[part] = _Once(make) if lazy else make()
    return out


class _Once:
    """A part made on the first call and kept (the next view's merge starts from it)."""

    def __init__(self, make: Callable[[], object]) -> None:
        self._make, self._made, self._lock = make, None, threading.Lock()

    def __call__(self):
        with self._lock:
            if self._made is None:
                self._made, self._make = self._make(), None
            return self._made


def path_rows(column, paths: frozenset[str]) -> np.ndarray:
    """Which rows of a path column hold one of `paths` (a boolean array)."""
    import pyarrow as pa

    array = whole(column)
    if not paths:
        return np.zeros(len(array), dtype=bool)
    if pa.types.is_run_end_encoded(array.type):  # a run per path at most: read as codes
        array = run_decoded(array)
    if pa.types.is_dictionary(array.type):
        codes = [i for i, v in enumerate(array.dictionary.to_pylist()) if v in paths]
        return np.isin(signed_codes(array).to_numpy(zero_copy_only=False), codes)
    return np.fromiter((v in paths for v in StringColumn(array)), dtype=bool, count=len(array))


def _last(value):
    """A sort key of a nullable value: NULLs after every value (DuckDB's default order)."""
    return (1, "") if value is None else (0, value)


def row_key(rows, merge: Merge) -> Key:
    """Row number -> the leading part of its sort key (`merge.order`)."""
    columns = [StringColumn(rows.column(c)) for c in merge.order]
    if not merge.exact_first:
        return lambda i: tuple(_last(c[i]) for c in columns)
    confidence = StringColumn(rows.column("confidence"))

    def key(i: int) -> tuple:
        c = confidence[i]
        return (0 if c == "exact" else 1 if c is not None else 2, *(_last(col[i]) for col in columns))
    return key


class _Kept(Sequence):
    """The keys of the kept rows, in order (what the binary search reads)."""

    def __init__(self, kept: np.ndarray, key: Key) -> None:
        self.kept, self.key = kept, key

    def __len__(self) -> int:
        return len(self.kept)

    def __getitem__(self, i):
        return self.key(int(self.kept[i]))


def merge_sorted(base, keep: np.ndarray, new, base_key: Key, new_key: Key):
    """The rows of `base` where `keep` and all of `new` (both sorted, no key of one equal to
    a key of the other), as one sorted table; also the new row number of each base row (-1:
    dropped) and of each row of `new`."""
    import pyarrow as pa

    kept = np.flatnonzero(keep)
    n = new.num_rows
    at = np.empty(n, dtype=np.int64)  # how many kept rows come before each new row
    keys, lo, last = _Kept(kept, base_key), 0, None
    for j in range(n):
        k = new_key(j)
        if k != last:
            lo, last = bisect.bisect_left(keys, k, lo), k
        at[j] = lo
    new_at = at + np.arange(n)
    kept_at = np.arange(len(kept)) + np.searchsorted(at, np.arange(len(kept)), side="right")
    source = np.empty(len(kept) + n, dtype=np.int64)
    source[kept_at] = kept
    source[new_at] = base.num_rows + np.arange(n)
    both = pa.concat_tables(same_hex([decoded_runs(t).replace_schema_metadata(None) for t in (base, new)]),
                            promote_options="permissive")
    old_to_new = np.full(base.num_rows, -1, dtype=np.int64)
    old_to_new[kept] = kept_at
    return gather(both, source), old_to_new, new_at


_MAX_RUNS = 4096


def gather(table, source: np.ndarray):
    """`table`'s rows `source` as one table of single-chunk columns: copied as runs of
    consecutive rows (a merge keeps long runs of the base; ~5x cheaper than a take), or
    taken one by one when there are many runs."""
    import pyarrow as pa

    breaks = np.flatnonzero(np.diff(source) != 1) + 1
    if len(breaks) >= _MAX_RUNS:
        k = arrays._kernels()
        return k.call_function("take", [table, k.from_numpy(source)]).combine_chunks()
    starts = [0, *breaks.tolist()]
    ends = [*breaks.tolist(), len(source)]
    pieces = [table.slice(int(source[a]), b - a) for a, b in zip(starts, ends) if b > a]
    return pa.concat_tables(pieces or [table.slice(0, 0)]).combine_chunks()


def _keys(index, rows, part: str):
    """A key index's keys in order: its `key` column, or a permuted index's (row numbers
    only: format/resident.KeyIndex) taken from the rows' column `part`."""
    if "key" in index.column_names:
        return whole(index.column("key"))
    if part in arrays.FOLDED:  # keys folded from a column of the rows (format/folded.py)
        return fold_array(take_column(rows_column(rows, arrays.FOLDED[part]), whole(index.column("row"))))
    return take_column(rows_column(rows, part), whole(index.column("row")))


def _merge_index(base_part: tuple, new_part: tuple, part: str, old_to_new: np.ndarray, new_at: np.ndarray):
    """A KeyIndex table (key, row) of the merged rows from the base's and the new rows'
    (`*_part`: the index table and the rows it indexes); a permuted index's: row only."""
    import pyarrow as pa

    (base, base_table), (new, new_table) = base_part, new_part
    permuted = "key" not in base.column_names and "key" not in new.column_names  # else keys kept

    k = arrays._kernels()
    base_rows = whole(base.column("row")).to_numpy(zero_copy_only=False)
    moved = old_to_new[base_rows]
    keep = moved >= 0
    base = pa.table({"key": _keys(base, base_table, part), "row": k.from_numpy(moved.astype(np.int32))})
    new_rows = new_at[whole(new.column("row")).to_numpy(zero_copy_only=False)].astype(np.int32)
    new = pa.table({"key": _keys(new, new_table, part), "row": k.from_numpy(new_rows)})
    base, new = same_hex([base, new], ("key",))  # hex ids kept as bytes on one side only
    base_keys, base_moved = StringColumn(base.column("key")), moved
    new_keys = StringColumn(new.column("key"))
    merged, _, _ = merge_sorted(base, keep, new, lambda i: (base_keys[i], int(base_moved[i])),
                                lambda j: (new_keys[j], int(new_rows[j])))
    return merged.select(["row"]) if permuted else merged


# ---- names: derived from the distinct names, not from the paths' rows ------------------------
_BASE_NAMES_SQL = f"SELECT DISTINCT name FROM {BASE_DB}.main.symbols WHERE name IS NOT NULL"


def overlay_names(view: IndexView) -> dict | None:
    """The `names` structure (format/resident.name_arrays) of overlay `view`: its base's pairs
    without those no name of the overlay's manifest makes any more, and with those only its
    names make. A pair names a lower-cased name, so only the pairs of the lower-cased names
    that gained or lost a written form can change."""
    try:
        check_resident(view, "names", view.base_id)
    except AssemblyVanished:
        return None
    base = arrays.map_arrays(view.path.parent, "names")
    if base is None:
        return None
    old = {r[0] for r in view.sql(_BASE_NAMES_SQL)}
    now = {r[0] for r in view.sql(arrays.NAMES_SQL)}
    changed = {n.lower() for n in old ^ now}
    if not changed:
        return base
    before = {n for n in old if n.lower() in changed}
    after = {n for n in now if n.lower() in changed}
    return {"subtokens": _repaired(base["subtokens"], arrays.subtoken_table(before),
                                   arrays.subtoken_table(after)),
            "trigrams": _repaired(base["trigrams"], arrays.trigram_table({n.lower() for n in before}),
                                  arrays.trigram_table({n.lower() for n in after}))}


def _repaired(table, before, after):
    """A sorted (key, name) pair table with the pairs of `before` not in `after` removed and
    those of `after` not in `before` added (both pair tables)."""
    old = set(zip(before.column("key").to_pylist(), before.column("name").to_pylist()))
    new = set(zip(after.column("key").to_pylist(), after.column("name").to_pylist()))
    keys, names = StringColumn(table.column("key")), StringColumn(table.column("name"))

    def pair(i: int) -> tuple:
        return keys[i], names[i]
    pairs = _Kept(np.arange(table.num_rows), pair)
    keep = np.ones(table.num_rows, dtype=bool)
    for gone in old - new:
        i = bisect.bisect_left(pairs, gone)
        if i < len(pairs) and pairs[i] == gone:
            keep[i] = False
    added = sorted(new - old)
    added_table = arrays.pairs_table(added)  # the layout of the base's (dictionary-encoded)
    return merge_sorted(table, keep, added_table, pair, added.__getitem__)[0]
