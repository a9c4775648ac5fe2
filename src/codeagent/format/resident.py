"""Resident arrays: the columnar files beside index.duckdb that long-lived readers map.

A server answers symbol, reference and graph look-ups from memory instead of scanning DuckDB
tables per request. Loading those rows as Python objects cost ~550 MiB and seconds per server
on the standard library; instead the assembly writes them once, as uncompressed Arrow IPC
files (`resident.<structure>.<part>.arrow`, listed in SUMS like every assembled file), and
readers memory-map them: loading costs nothing, the pages are shared by every server on the
machine through the page cache, and RSS counts only the pages a query touches. A look-up by
key is a binary search over a sorted key column (`KeyIndex`): no dictionary is built.

Readers check RESIDENT_VERSION (in each file's schema metadata) and build the same arrays in
memory from SQL when the files are absent (an assembly written before them) or of another
version. The builders below are the one definition of every array, for both; the assembly
writes the same bytes from sorted batches (resident_write.py), in memory its budget sets.

RESIDENT_VERSION history:
  1: symbols (the symbol table's rows and key indexes), names (by sub-token and trigram), refs (grouped by the target's last
     segment), edges (in graph order, indexed by src_id and dst_id), texts (files' text by
     path), postings (each file's summed term counts, by term).
  2: string columns whose values repeat are dictionary-encoded (int32 codes beside each
     distinct value once): edges' src_id, dst_id and target and the src_id/dst_id index keys,
     refs' key and target, postings' term, the names' keys and names. 0.6x the resident bytes
     those columns took on the standard library (~50 MB less); readers read them as before
     (StringColumn and to_pylist decode a dictionary).
  3: key indexes whose keys are a column of the rows (PERMUTED: most symbol indexes, the
     edges' src_id and dst_id) hold only the row numbers ordered by that column, then row (a
     permutation, 4 bytes a row); `KeyIndex` reads their keys from the rows. Symbols'
     raw_fq_key is NULL where it repeats fq_name (`raw_is_fq`: every row of the standard
     library), their visibility dictionary-encoded; postings' dl an INTEGER, not a DOUBLE.
  4: the folded-name indexes (FOLDED: qualified_key, and fq_key split out of it) hold only
     row numbers; readers fold the rows' column (format/folded.py), where it folds exactly.
  5: dictionary codes and integer columns (NULL-free) in the narrowest of int8, int16 and
     int32 that holds them (format/narrow.py): a kind or a confidence takes a byte a row, a
     path or a line number two (dictionary codes also in uint16). Key indexes' row numbers
     stay int32. Sorted columns as runs (each value once beside its run's last row: RUNS):
     the keys of the names' pairs and of the refs, the postings' terms (read by
     StringColumn.span), the edges' src_path (sorted within each confidence). The symbols'
     fq_name in parts (JOINED): its file's module prefix (dictionary-encoded) before the
     row's qualified_name, or the whole name where it is not that (`fq_other`).
  6: the texts compressed in blocks (format/texts.py): `rows` holds each path's block and
     place, `blocks` the zstd blocks (31.6 -> 6.4 MB on the standard library). The symbols'
     name_key index FOLDED from their name; the postings' dl in uint16 where it fits
     (narrow.UNSIGNED).
  7: the symbols' hex ids (symbol_id, stable_id, parent_id, body_hash: columns.HEX) as their
     bytes (fixed-size binary, 8 or 10 a row) where every value is a lower-case hex id of
     that width; readers read them as strings (columns.HexColumn). 7.4 -> 3.2 MB on the
     standard library.
  8: the edges' src_id and dst_id dictionaries (columns.HEX) as their bytes (fixed-size
     binary, 8 a value) where every value is a lower-case hex id; their codes are as before.
     Readers read them as strings (StringColumn; `pylist` for taken rows). 2.70 -> 1.08 MB
     of dictionary on the standard library.
"""

from __future__ import annotations

import bisect
import mmap
import weakref
from collections.abc import Callable
from pathlib import Path

from typing import TYPE_CHECKING

from ..tokenize import split_identifier
from .folded import FoldedKeys, PermutedKeys, folds_exactly
from .columns import (HEX, JOINED, READ_COLUMNS, HexColumn, JoinedColumn, StringColumn, hex_bytes, pylist,  # noqa: F401  (readers import them)
                      hex_rows, hexed, rows_column, take_column, whole)
from .narrow import narrowed_table
from .texts import forget_decompressed, text_parts
from .name_pairs import trigram_key, trigram_table, trigrams  # noqa: F401  (query/ imports them from here)

if TYPE_CHECKING:  # imported where used: the CLI's quick commands load no pyarrow.compute
    import pyarrow as pa

RESIDENT_VERSION = 8
_VERSION_KEY = b"codeagent.resident_version"
_SOURCE_KEY = b"codeagent.source"  # digest of the rows a reusable structure was built from
# Costly to build, and their rows (the distinct names) rarely change with an edit: an
# incremental assembly copies the previous one's files when they were built from the same.
REUSABLE = ("names",)
TEST_PATH_RE2 = r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$|_test\.[^/]+$"
_FOLD = ("replace(replace(replace(replace(replace(lower({}), '::', '.'), '->', '.'), '#', '.'), "
         "'/', '.'), chr(92), '.')")
_SYMBOLS_SQL = """
SELECT s.symbol_id, s.stable_id, s.path, s.language, s.kind, s.name, s.qualified_name,
       {fq} AS fq_name, coalesce(s.signature, '') AS signature, s.start_line, s.end_line,
       s.parent_id IS NULL AS top_level, regexp_matches(s.path, '{test}') AS in_tests,
       lower(s.name) AS name_key, """ + _FOLD.format("s.qualified_name") + """ AS qualified_key,
       """ + _FOLD.format("{fq}") + """ AS fq_key_folded,
       coalesce(s.doc, '') AS doc, coalesce(s.visibility, '') AS visibility,
       coalesce(s.modifiers, []) AS modifiers, s.start_col, s.end_col, s.name_line, s.parent_id,
       coalesce(s.body_hash, '') AS body_hash, s.ordinal,
       CASE WHEN {fq_cut} || s.qualified_name = {fq} THEN {fq_cut} END AS fq_prefix,
       CASE WHEN {fq_cut} || s.qualified_name = {fq} THEN NULL ELSE {fq} END AS fq_other,
       CASE WHEN {has_fq} AND {raw_key} = {fq} THEN NULL ELSE {raw_key} END AS raw_fq_key,
       {has_fq} AS has_fq, coalesce({has_fq} AND {raw_key} = {fq}, FALSE) AS raw_is_fq
FROM symbols s {join}
ORDER BY s.path, s.start_line, s.ordinal
"""
# index keys and fq_name (JOINED from its parts), not kept as columns
SYMBOL_KEYS = ("name_key", "qualified_key", "fq_key_folded", "fq_name")
SYMBOL_DICTIONARY = ("path", "language", "kind", "visibility", "fq_prefix")  # few distinct values: dictionary-encoded

SYMBOL_INDEXES = ("symbol_id", "stable_id", "parent_id", "qualified_name", "name", "path",
                  "fq_name", "raw_fq_key", "name_key", "qualified_key", "fq_key")
# Folded indexes (index -> the rows' column folded): row numbers only when folds_exactly.
FOLDED = {"qualified_key": "qualified_name", "fq_key": "fq_name"}
# The indexes whose keys are the rows' own column of the same name: stored as row numbers only.
SYMBOL_PERMUTED = SYMBOL_INDEXES[:8]

REF_COLUMNS = ("path", "language", "kind", "target", "start_line", "end_line")
REF_DICTIONARY = ("key", "path", "language", "kind", "target")
REFS_SQL = """
SELECT regexp_extract(target, '[^.]*$') AS key, path, language, kind, target, start_line, end_line
FROM refs ORDER BY key, path, start_line, ordinal
"""

EDGE_COLUMNS = ("src_id", "dst_id", "kind", "confidence", "src_path", "src_line", "target", "dst_path")
EDGE_DICTIONARY = ("src_id", "dst_id", "kind", "confidence", "src_path", "target", "dst_path")
EDGE_INDEXES = ("src_id", "dst_id")  # permuted: their keys are the rows' columns
PERMUTED = {"symbols": SYMBOL_PERMUTED, "edges": EDGE_INDEXES}  # structure -> its permuted key indexes
# The order of graph queries' rows: exact edges first, then by place. The trailing columns
# break every tie, so the SQL path and the resident edges agree row for row.
EDGE_ORDER = ("e.confidence = 'exact' DESC, e.src_path, e.src_line, e.dst_path, e.src_id, "
              "e.dst_id, e.kind, e.target")
EDGES_SQL = f"""
SELECT src_id, dst_id, kind, confidence, src_path, src_line, coalesce(target, '') AS target, dst_path
FROM edges e ORDER BY {EDGE_ORDER}
"""


# Each file's summed term counts (the file ranking's body field) beside the file's length.
POSTINGS_SQL = """
WITH p AS (SELECT term, path, sum(tf)::INTEGER AS tf FROM term_postings WHERE doc_kind = 'c' GROUP BY ALL),
l AS (SELECT path, sum(length)::INTEGER AS dl FROM docs WHERE doc_kind = 'c' GROUP BY path)
SELECT p.term, p.path, p.tf, l.dl FROM p LEFT JOIN l USING (path)
"""
POSTINGS_COLUMNS = ("term", "path", "tf", "dl")
# Sorted dictionary columns written as runs (format/narrow.run_encoded): (structure, part) -> columns.
RUNS = {("postings", "rows"): ("term",), ("names", "subtokens"): ("key",), ("names", "trigrams"): ("key",),
        ("refs", "rows"): ("key",), ("edges", "rows"): ("src_path",)}
POSTINGS_ORDER = ("term", "path")
POSTINGS_DICTIONARY = ("term", "path")
NAMES_SQL = "SELECT DISTINCT name FROM symbols WHERE name IS NOT NULL ORDER BY name"
# The indexed files and their shards, which hold their texts (the assembly keeps none:
# ASSEMBLY_VERSION 8): format.shard.shard_texts reads them as (path, text) rows.
TEXT_SHARDS_SQL = "SELECT path, shard FROM files WHERE status = 'indexed'"
TEXTS_ORDER = ("path",)


def symbols_sql(named: bool = True, keyed: bool = True) -> str:
    """The symbol table's rows; `named`/`keyed`: the assembly has symbol_names.fq_name/fq_key."""
    fq = "coalesce(n.fq_name, s.qualified_name)" if named else "s.qualified_name"
    return _SYMBOLS_SQL.format(
        fq=fq, fq_cut=f"left({fq}, length({fq}) - length(s.qualified_name))",
        join="LEFT JOIN symbol_names n USING (symbol_id)" if named else "",
        raw_key="n.fq_key" if keyed else "NULL::VARCHAR",
        has_fq="n.fq_name IS NOT NULL" if named else "FALSE", test=TEST_PATH_RE2)


# ---- key indexes ------------------------------------------------------------------------------
class KeyIndex:
    """Rows by key: the keys sorted (bytewise, which is code-point order) beside their row
    numbers, ascending within a key; a look-up is a binary search. A permuted index (the
    table holds only `row`) reads its keys from `keys`, the rows' column it indexes: key i is
    keys[row[i]]."""

    def __init__(self, table: pa.Table, keys=None, folded: bool = False) -> None:
        """`folded`: a FOLDED index, whose keys (when not stored) fold `keys`' values."""
        self.rows = whole(table.column("row")).to_numpy(zero_copy_only=False)
        if "key" in table.column_names:
            self._key_array, self._column = whole(table.column("key")), None
            self.keys = StringColumn(self._key_array)
        else:
            if keys is None:
                raise ValueError("a permuted key index needs the column it indexes")
            self._key_array = None
            self._column = keys if isinstance(keys, READ_COLUMNS) else whole(keys)
            values = keys if isinstance(keys, READ_COLUMNS) else StringColumn(self._column)
            self.keys = (FoldedKeys(values, self.rows, self._column) if folded
                         else PermutedKeys(values, self.rows))

    @property
    def key_array(self) -> pa.Array:
        """The keys in order, as one array (a permuted index's taken from its column)."""
        if self._key_array is None:
            self._key_array = (self.keys.key_array() if isinstance(self.keys, FoldedKeys)
                               else hex_rows(take_column(self._column, _kernels().from_numpy(self.rows))))
        return self._key_array

    def span(self, key: str) -> tuple[int, int]:
        if isinstance(self.keys, FoldedKeys):  # its own search (folding a key costs)
            return self.keys.span(key)
        lo = bisect.bisect_left(self.keys, key)
        # a second binary search, not a walk: a file's path key spans all its symbols (hundreds)
        return lo, bisect.bisect_right(self.keys, key, lo)

    def rows_of(self, key: str) -> list[int]:
        lo, hi = self.span(key)
        return self.rows[lo:hi].tolist()

    def first(self, key: str) -> int | None:
        if isinstance(self.keys, FoldedKeys):
            lo, hi = self.keys.span(key)
            return int(self.rows[lo]) if hi > lo else None
        lo = bisect.bisect_left(self.keys, key)
        return int(self.rows[lo]) if lo < len(self.keys) and self.keys[lo] == key else None

    @classmethod
    def build(cls, keys, rows=None, dictionary: bool = False, permuted: bool = False) -> pa.Table:
        """The index table of `keys` (row i's key; None: not indexed); `rows`: the row number
        of each key when not 0..n-1; `dictionary`: the keys dictionary-encoded (for keys
        that repeat: each distinct key stored once); `permuted`: the row numbers only (the
        keys are the rows' own column, read from there)."""
        table = _sorted(index_pairs(keys, rows), *INDEX_ORDER)
        if permuted:
            return table.select(["row"])
        return _encoded(table, INDEX_ORDER, ("key",)) if dictionary else table


INDEX_ORDER = ("key", "row")


def index_pairs(keys, rows=None, first: int = 0) -> pa.Table:
    """A key index's (key, row) pairs of `keys`, unsorted, without the None keys; `rows`: the
    row number of each key when not first..first+n-1."""
    import numpy as np
    import pyarrow as pa

    keys = whole(keys) if isinstance(keys, (pa.Array, pa.ChunkedArray)) else pa.array(keys, pa.string())
    if keys.type != pa.string():
        keys = _call("cast", keys, options=_cast_options(pa.string()))
    rows = (np.arange(first, first + len(keys), dtype=np.int32) if rows is None
            else np.asarray(rows, dtype=np.int32) + np.int32(first))
    valid = _call("is_valid", keys)
    keys, rows = _call("filter", keys, valid), rows[valid.to_numpy(zero_copy_only=False)]
    return pa.table({"key": keys, "row": _kernels().from_numpy(rows)})


# ---- the structures' arrays -------------------------------------------------------------------
# Built with the compute kernels called directly (codeagent.kernels): a build never imports
# pyarrow.compute (~40 ms a process).
def _kernels():
    from .. import kernels  # imports pyarrow: only when arrays are built

    return kernels


def _call(name: str, *args, options=None):
    return _kernels().call_function(name, list(args), options)


def _cast_options(to):
    return _kernels().CastOptions.safe(to)


def _sorted(table: pa.Table, *keys: str) -> pa.Table:
    """`table`'s rows stably sorted by `keys` ascending (bytewise for strings: the order of
    Python's str, whatever the SQL engine's collation)."""
    try:
        from pyarrow._compute import SortOptions
    except ImportError:
        from pyarrow.compute import SortOptions
    order = _call("sort_indices", table, options=SortOptions([(k, "ascending") for k in keys]))
    return _call("take", table, order)


def _encoded(table: pa.Table, names: tuple[str, ...], dictionary: tuple[str, ...]) -> pa.Table:
    import pyarrow as pa

    return pa.table({n: (_kernels().dictionary_encode(whole(table.column(n))) if n in dictionary
                         else whole(table.column(n))) for n in names})


def symbol_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """The symbol table's parts from the rows of `symbols_sql`: `rows` (every column but the
    index keys) and one KeyIndex table per SYMBOL_INDEXES entry."""
    out = {"rows": hexed(_encoded(table, symbol_columns(table.column_names), SYMBOL_DICTIONARY))}
    col = {n: whole(table.column(n)) for n in table.column_names}
    for name, (keys, rows) in symbol_index_keys(col).items():
        out[name] = KeyIndex.build(keys, rows, permuted=name in SYMBOL_PERMUTED or (
            name in FOLDED and folds_exactly(keys, col[FOLDED[name]])))
    return out


def symbol_columns(names) -> tuple[str, ...]:
    """The columns of the symbol rows kept in `rows`, of `symbols_sql`'s `names`."""
    return tuple(n for n in names if n not in SYMBOL_KEYS)


def symbol_index_keys(col: dict[str, pa.Array]) -> dict[str, tuple[pa.Array | pa.ChunkedArray, object]]:
    """Each SYMBOL_INDEXES entry's keys (None: the row is not indexed) and their row numbers
    (None: the rows in order), of `symbols_sql`'s columns `col`."""
    import pyarrow as pa

    out = {name: (col[name], None) for name in ("symbol_id", "stable_id", "parent_id", "qualified_name",
                                                "name", "path", "name_key")}
    none = pa.scalar(None, pa.string())
    has_fq, fq_name, raw = col["has_fq"], col["fq_name"], col["raw_fq_key"]
    out["fq_name"] = (_call("if_else", has_fq, fq_name, none), None)
    # raw_fq_key: the fq_keys that the fq_name index does not already cover
    k = _kernels()
    same = k.fill_null(_call("and", has_fq, _call("equal", raw, fq_name)), False)
    out["raw_fq_key"] = (_call("if_else", same, none, raw), None)
    # qualified_key: the folded qualified name of every row; fq_key: its folded fq name when other
    qualified, folded = col["qualified_key"], col["fq_key_folded"]
    out["qualified_key"] = (qualified, None)
    out["fq_key"] = (_call("if_else", k.fill_null(k.not_equal(folded, qualified), False), folded, none), None)
    return {name: out[name] for name in SYMBOL_INDEXES}


def name_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """Names by sub-token and by trigram, from NAMES_SQL's distinct names as written (a
    structure of its own: only subtoken and fuzzy searches read it)."""
    written = set(table.column("name").to_pylist())
    return {"subtokens": subtoken_table(written),
            "trigrams": trigram_table({n.lower() for n in written if n is not None})}




def subtoken_table(names: set[str]) -> pa.Table:
    """(key: a sub-token, name: a lower-cased name it is part of), sorted, for the names as
    written (`split_identifier` reads their case)."""
    return pairs_table({(t, n.lower()) for n in names if n is not None for t in split_identifier(n)})


def pairs_table(pairs) -> pa.Table:
    """Distinct (key, name) string pairs as a table sorted by key, then name (both
    dictionary-encoded), the layout of the `names` structure's parts."""
    import pyarrow as pa

    keys, names = zip(*pairs) if pairs else ((), ())
    table = _sorted(pa.table({"key": pa.array(keys, pa.string()), "name": pa.array(names, pa.string())}),
                    "key", "name")
    return _encoded(table, ("key", "name"), ("key", "name"))  # a name has ~20 trigrams: stored once


def ref_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """The reference table: REFS_SQL's rows with a key, sorted by it (stably: rows keep the
    SQL order within a key)."""
    table = _call("filter", table, _call("is_valid", whole(table.column("key"))))
    return {"rows": _encoded(_sorted(table, "key"), ("key", *REF_COLUMNS), REF_DICTIONARY)}


def edge_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """The edge table: EDGES_SQL's rows and their src_id and dst_id KeyIndexes."""
    out = {"rows": hexed(_encoded(table, EDGE_COLUMNS, EDGE_DICTIONARY))}
    for name, (keys, rows) in edge_index_keys({n: table.column(n) for n in EDGE_INDEXES}).items():
        out[name] = KeyIndex.build(keys, rows, permuted=True)
    return out


def edge_index_keys(col: dict) -> dict[str, tuple[object, None]]:
    """Each EDGE_INDEXES entry's keys (as symbol_index_keys) of EDGES_SQL's columns `col`."""
    return {name: (col[name], None) for name in EDGE_INDEXES}


def postings_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """POSTINGS_SQL's rows sorted by term, then path (paths dictionary-encoded)."""
    table = _sorted(table, *POSTINGS_ORDER)
    return {"rows": _encoded(table, POSTINGS_COLUMNS, POSTINGS_DICTIONARY)}


def text_arrays(table: pa.Table) -> dict[str, pa.Table]:
    """Every indexed file's text by path ((path, text) rows: shard.shard_texts of
    TEXT_SHARDS_SQL's, sorted by path here), compressed in blocks (format/texts.py)."""
    return text_parts(sorted_texts(table))


def sorted_texts(table: pa.Table) -> pa.Table:
    """(path, text) rows in TEXTS_ORDER."""
    return _sorted(table, *TEXTS_ORDER)


STRUCTURES: dict[str, tuple[Callable[[pa.Table], dict[str, pa.Table]], tuple[str, ...]]] = {
    "symbols": (symbol_arrays, ("rows", *SYMBOL_INDEXES)),
    "names": (name_arrays, ("subtokens", "trigrams")),
    "refs": (ref_arrays, ("rows",)),
    "edges": (edge_arrays, ("rows", "src_id", "dst_id")),
    "texts": (text_arrays, ("rows", "blocks")),
    "postings": (postings_arrays, ("rows",)),
}


# ---- files ------------------------------------------------------------------------------------
def file_name(structure: str, part: str) -> str:
    return f"resident.{structure}.{part}.arrow"


def is_resident_file(name: str, structure: str | None = None) -> bool:
    """Is `name` one of the resident files (of `structure`, when given)?"""
    return name.startswith(f"resident.{structure}." if structure else "resident.") and name.endswith(".arrow")


def write_arrays(directory: Path, structure: str, arrays: dict[str, pa.Table],
                 source: str | None = None) -> None:
    """Write a structure's parts into an assembly being built (its directory is renamed into
    place whole, so no file needs its own atomic rename); `source`: the digest of the rows
    they were built from (REUSABLE structures)."""
    import pyarrow as pa

    for part, table in arrays.items():
        table = narrowed_table(table.replace_schema_metadata(file_metadata(source)), RUNS.get((structure, part), ()))
        with pa.OSFile(str(directory / file_name(structure, part)), "wb") as sink:
            with pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)


def file_metadata(source: str | None = None) -> dict[bytes, bytes]:
    """The schema metadata of a resident file (`source`: as write_arrays')."""
    meta = {_VERSION_KEY: str(RESIDENT_VERSION).encode()}
    if source is not None:
        meta[_SOURCE_KEY] = source.encode()
    return meta


def has_metadata(path: Path, meta: dict[bytes, bytes]) -> bool:
    """Is `path` a resident file whose schema metadata holds `meta`?"""
    import pyarrow as pa

    try:
        found = pa.ipc.open_file(pa.memory_map(str(path), "r")).schema.metadata or {}
    except (OSError, pa.ArrowInvalid):
        return False
    return all(found.get(k) == v for k, v in meta.items())


def map_arrays(directory: Path, structure: str) -> dict[str, pa.Table] | None:
    """A structure's parts memory-mapped from `directory`; None when a part is missing or of
    another RESIDENT_VERSION (the reader builds them from SQL instead)."""
    import pyarrow as pa

    out = {}
    for part in STRUCTURES[structure][1]:
        path = directory / file_name(structure, part)
        try:
            with open(path, "rb") as fh:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            reader = pa.ipc.open_file(pa.BufferReader(pa.py_buffer(mapped)))
        except (OSError, ValueError, pa.ArrowInvalid):
            return None
        if (reader.schema.metadata or {}).get(_VERSION_KEY) != str(RESIDENT_VERSION).encode():
            return None
        out[part] = reader.read_all()
        _mapped.add(mapped)
    return out


_mapped: weakref.WeakSet[mmap.mmap] = weakref.WeakSet()  # every live mapping of map_arrays


def drop_mapped_pages() -> None:
    """Unmap from this process the pages of every resident array it has touched. They stay
    in the page cache (shared, reclaimable), and the next read of one maps it again (a minor
    fault, no I/O): a long-lived reader calls this when it is idle, so that its resident set
    at rest is not every page any request ever read (~100 MiB on the standard library after a
    hundred mixed queries). Safe while another thread reads them. The texts it decompressed
    go too (format/texts.py)."""
    forget_decompressed()
    for mapped in list(_mapped):
        try:
            mapped.madvise(mmap.MADV_DONTNEED)
        except (AttributeError, OSError, ValueError):  # no madvise here, or closed
            pass
