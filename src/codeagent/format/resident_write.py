"""Writing the resident arrays (format/resident.py) in memory set by DuckDB's limit, not by the
repository.

A structure's rows come from DuckDB already in their order (DuckDB sorts under its
memory_limit, spilling to disk) and are read in batches: each batch's columns are appended to
spool files (arrow_spool.py: in memory up to `write_resident`'s `memory`, so a file below it is
written once), and its key indexes' (key, row) pairs to temp tables that DuckDB
sorts the same way. Every file is then written as one record batch from its spool. The texts
are not in the database (ASSEMBLY_VERSION 8): the caller gives their blocks, built as the
assembly inserted the shards (indexer/assemble/texts.py). Holding
whole structures in Arrow made this step the build's peak: ~4.5 GiB on ten copies of the
standard library. The files are byte for byte those of the in-memory builders
(`STRUCTURES`), which readers still use to build the arrays from SQL.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path

import pyarrow as pa

from .. import kernels
from ..hashing import hash_bytes
from . import resident as r
from .arrow_spool import Spool, SpoolMemory, write_spooled
from .folded import folds_exactly
from .narrow import narrowed
from .texts import TextBlocks

BATCH_ROWS = 122_880  # DuckDB's row group, the chunks of its to_arrow_table (see arrow_spool._tail)


@dataclass(frozen=True)
class _Stream:
    """How a structure is written from its sorted rows: `columns` kept in `rows` (given the
    SQL's column names), those dictionary-encoded, the rows kept (`keep`: the column that
    must be valid), and the key indexes' (keys, row numbers) of a batch's columns."""
    sql: str
    columns: Callable[[list[str]], tuple[str, ...]]
    dictionary: tuple[str, ...] = ()
    indexes: Callable[[dict], dict] | None = None
    keep: str | None = None
    rows: int = BATCH_ROWS
    taken: bool = False  # the builder sorts the rows again (Arrow's `take`: arrow_spool.Spool's `given`)


def _sql_batches(cur, stream: _Stream) -> tuple[pa.Schema, Iterable[pa.RecordBatch]]:
    reader = cur.sql(stream.sql).to_arrow_reader(stream.rows)
    return reader.schema, reader


def _order(sql: str, keys: tuple[str, ...]) -> str:
    return f"{sql.rstrip()} ORDER BY {', '.join(keys)}"


STREAMS: dict[str, _Stream] = {
    "symbols": _Stream(r.symbols_sql(), r.symbol_columns, r.SYMBOL_DICTIONARY, r.symbol_index_keys),
    "refs": _Stream(r.REFS_SQL, lambda names: ("key", *r.REF_COLUMNS), r.REF_DICTIONARY, keep="key", taken=True),
    "edges": _Stream(r.EDGES_SQL, lambda names: r.EDGE_COLUMNS, r.EDGE_DICTIONARY, r.edge_index_keys),
    "postings": _Stream(_order(r.POSTINGS_SQL, r.POSTINGS_ORDER), lambda names: r.POSTINGS_COLUMNS, r.POSTINGS_DICTIONARY,
                        taken=True),
}
_INDEX_SCHEMA = pa.schema([("key", pa.string()), ("row", pa.int32())])
_PERMUTED_SCHEMA = pa.schema([("row", pa.int32())])  # the keys are the rows' column (KeyIndex)


def write_resident(con, directory: Path, spool: Path, texts: TextBlocks, previous: Path | None = None,
                   rows: int | None = None, memory: int = 0) -> None:
    """Every structure's arrays, from the assembly's DuckDB connection `con` (its memory_limit
    bounds this step) and the texts' blocks `texts` (every indexed file's, fed in path order);
    `spool`: a directory for the spool files, removed after;
    `previous`: the verified assembly this one was built on (its REUSABLE structures may be
    copied); `rows`: the rows read at once, when not each structure's own; `memory`: the bytes
    of spool a file may hold in memory (SpoolMemory: below it the file is written once)."""
    try:
        for structure in r.STRUCTURES:
            if structure == "texts":
                r.write_arrays(directory, "texts", texts.parts())
            elif structure in STREAMS:
                stream = STREAMS[structure] if rows is None else replace(STREAMS[structure], rows=rows)
                _write_stream(con, directory, structure, stream, spool / structure, memory)
            else:
                _write_names(con, directory, previous)
            pa.default_memory_pool().release_unused()
    finally:
        shutil.rmtree(spool, ignore_errors=True)


def _write_names(con, directory: Path, previous: Path | None) -> None:
    """The one structure not streamed, built in memory: the names (their size is the distinct
    names', and they are copied from `previous` when built from the same)."""
    table = con.sql(r.NAMES_SQL).to_arrow_table()
    source = hash_bytes("\x00".join(table.column(0).to_pylist()).encode())
    if previous is None or not _copied(previous, directory, "names", source):
        r.write_arrays(directory, "names", r.name_arrays(table), source)


def _write_stream(con, directory: Path, structure: str, stream: _Stream, spool: Path, memory: int) -> None:
    cur, keys = con.cursor(), con.cursor()
    try:
        # hex ids in plain string columns (the symbols', checked in their table) are packed
        # batch by batch; a dictionary's are packed at the end (`_written`)
        names = stream.columns(cur.sql(stream.sql).columns)  # bound, not run
        plain = [n for n in names if n in r.HEX and n not in stream.dictionary]
        packed = _hex_columns(cur, structure, plain) if plain else {}
        sql_schema, reader = _sql_batches(cur, stream)
        schema = _rows_schema(sql_schema, stream, packed)
        held = SpoolMemory(memory)
        spools = [Spool(spool / "rows" / f.name, f.type, not stream.taken, held) for f in schema]
        indexes = [p for p in r.STRUCTURES[structure][1] if p != "rows"]
        for name in indexes:
            keys.execute(f'CREATE TEMP TABLE "k_{name}" (key VARCHAR, row INTEGER)')
        first, exact = 0, {name: True for name in indexes if name in r.FOLDED}
        for batch in reader:
            if stream.keep is not None:
                valid = kernels.call_function("is_valid", [batch.column(stream.keep)])
                batch = kernels.call_function("filter", [batch, valid])
            col = dict(zip(batch.schema.names, batch.columns))
            for s, name in zip(spools, schema.names):
                s.append(r.hex_bytes(col[name], packed[name]) if name in packed else col[name])
            for name, (k, rows) in (stream.indexes(col) if stream.indexes else {}).items():
                if exact.get(name):  # keys a reader can fold from the rows (format/folded.py)?
                    exact[name] = folds_exactly(k, col[r.FOLDED[name]])
                pairs = r.index_pairs(k, rows, first)
                keys.from_arrow(pairs).insert_into(f"k_{name}")
            first += batch.num_rows
        del reader
        write_spooled(directory / r.file_name(structure, "rows"), schema, spools,
                      partial(_written, runs=r.RUNS.get((structure, "rows"), ())))
        del spools, held
        for name in indexes:
            permuted = name in r.PERMUTED.get(structure, ()) or exact.get(name, False)
            schema = _PERMUTED_SCHEMA if permuted else _INDEX_SCHEMA
            _write_index(keys, directory / r.file_name(structure, name), f"k_{name}", spool / name,
                         schema, memory)
    finally:
        cur.close()
        keys.close()


def _hex_columns(cur, table: str, names: list[str]) -> dict[str, int]:
    """The HEX columns `names` (strings, not dictionary-encoded) whose every value in `table`
    is a hex id of the column's width (kept as bytes: resident.hexed), by their width. The
    rows of symbols_sql hold these columns of `symbols` as they are (body_hash: '' for NULL)."""
    checks = [f"bool_and({_hex_value(n)} IS NULL OR regexp_full_match({_hex_value(n)}, '[0-9a-f]{{{2 * r.HEX[n]}}}'))"
              for n in names]
    found = cur.sql(f"SELECT {', '.join(checks)} FROM {table}").fetchall()[0]
    return {name: r.HEX[name] for name, ok in zip(names, found) if ok is not False}


def _hex_value(name: str) -> str:
    return f"coalesce({name}, '')" if name == "body_hash" else name


def _written(names: list[str], arrays: list[pa.Array], runs: tuple[str, ...]) -> list[pa.Array]:
    """The rows' columns as the file holds them: a dictionary-encoded HEX column with its
    dictionary as bytes where every value is a hex id of its width (as resident.hexed: the
    whole dictionary is known only now), then narrowed."""
    out = []
    for name, array in zip(names, arrays):
        packed = r.hex_bytes(array, r.HEX[name]) if name in r.HEX and pa.types.is_dictionary(array.type) else None
        out.append(array if packed is None else packed)
    return narrowed(names, out, runs)


def _rows_schema(sql_schema: pa.Schema, stream: _Stream, packed: dict[str, int]) -> pa.Schema:
    """The `rows` file's schema, as the structure's builder makes it from the SQL's (`packed`:
    the hex columns kept as bytes, by width)."""
    fields = []
    for name in stream.columns(sql_schema.names):
        field = sql_schema.field(name)
        if name in packed:
            field = pa.field(name, pa.binary(packed[name]))
        elif name in stream.dictionary:
            field = pa.field(name, pa.dictionary(pa.int32(), field.type))
        else:
            field = pa.field(name, field.type)
        fields.append(field)
    return pa.schema(fields, metadata=r.file_metadata())


def _write_index(keys, path: Path, table: str, spool: Path, schema: pa.Schema, memory: int) -> None:
    """A key index file from its pairs' temp table, sorted by DuckDB (bytewise, as Python's
    str: DuckDB compares strings by their bytes)."""
    order = ", ".join(r.INDEX_ORDER)
    reader = keys.sql(f'SELECT {", ".join(schema.names)} FROM "{table}" ORDER BY {order}').to_arrow_reader(BATCH_ROWS)
    schema = schema.with_metadata(r.file_metadata())
    held = SpoolMemory(memory)
    spools = [Spool(spool / f.name, f.type, memory=held) for f in schema]
    for batch in reader:
        for s, column in zip(spools, batch.columns):
            s.append(column)
    reader.close()
    keys.execute(f'DROP TABLE "{table}"')
    write_spooled(path, schema, spools)


def _copied(previous: Path, directory: Path, structure: str, source: str) -> bool:
    """Copy `structure`'s files from `previous` when they were built from `source` in this
    RESIDENT_VERSION; False (nothing copied) otherwise."""
    names = [r.file_name(structure, part) for part in r.STRUCTURES[structure][1]]
    if not all(r.has_metadata(previous / name, r.file_metadata(source)) for name in names):
        return False
    for name in names:
        shutil.copyfile(previous / name, directory / name)
    return True
