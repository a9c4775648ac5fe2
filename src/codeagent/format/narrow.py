"""The narrowest integer type a resident column's values fit (RESIDENT_VERSION 5).

Resident arrays are mapped, not compressed, so a column's bytes are its type's width times its
rows. A dictionary column's codes and an integer column's values are written in the smallest
of int8, int16 and int32 that holds them (codes also in uint16: a dictionary of 32k-64k names
or ids): a symbol kind (a few distinct values) takes a byte a row instead of four, a path
(thousands of files) or a line number two. Readers read the codes and values through Arrow and
numpy whatever their width (as they read the arrays a reader builds from SQL, which stay
int32); a reader filling a NULL code with -1 widens the codes first (`signed_codes`).

A sorted dictionary column whose values repeat down the rows (the names' pair keys, the
postings' terms: resident.RUNS) is written as runs instead: each distinct value once beside the
row its run ends at (Arrow's run-end encoding), 4 bytes a distinct value and no code a row.
StringColumn.span finds a key's rows by a binary search over the runs' values; an overlay
merge turns the runs back into codes (`decoded_runs`: Arrow neither takes nor merges runs). An integer column with NULLs keeps its type: the bytes
under a NULL are not the same in every builder, and a cast would carry them over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: format/resident.py is imported by the CLI's quick commands
    import pyarrow as pa


def _kernels():
    from .. import kernels  # imports pyarrow: only when arrays are written or read

    return kernels

KEPT = ("row",)  # key indexes' row numbers keep int32 (readers index and renumber them)
# Integer columns that may also be written as uint16 (RESIDENT_VERSION 6): the postings' file
# lengths (up to 62k tokens on the stdlib), which readers only turn into floats.
UNSIGNED = ("dl",)


def narrowest(low: int, high: int, unsigned: bool = False):
    """The smallest signed Arrow integer type holding `low`..`high` (`unsigned`: or uint16,
    for dictionary codes: 32k-64k distinct names or ids)."""
    import pyarrow as pa

    for bits, type_ in ((8, pa.int8()), (16, pa.int16())):
        if -(1 << (bits - 1)) <= low and high < 1 << (bits - 1):
            return type_
    return pa.uint16() if unsigned and 0 <= low and high < 1 << 16 else pa.int32()


def narrowed_type(array: pa.Array, unsigned: bool = False) -> pa.DataType:
    """The type `array` (one chunk) is written in: its own, or a narrower one it fits
    (`unsigned`: uint16 too, as `narrowest`)."""
    import pyarrow as pa

    if pa.types.is_dictionary(array.type) and array.type.index_type == pa.int32():
        return pa.dictionary(narrowest(0, max(len(array.dictionary) - 1, 0), unsigned=True),
                             array.type.value_type)
    if array.type == pa.int32() and array.null_count == 0 and len(array):
        bounds = _kernels().call_function("min_max", [array])
        return narrowest(bounds["min"].as_py(), bounds["max"].as_py(), unsigned)
    return array.type


def signed_codes(array: pa.DictionaryArray) -> pa.Array:
    """A dictionary array's codes with its NULLs as -1 (in place when it has none)."""
    import pyarrow as pa

    if array.null_count == 0:
        return array.indices
    codes = array.indices
    if codes.type == pa.uint16():
        codes = _kernels().call_function("cast", [codes], _kernels().CastOptions.safe(pa.int32()))
    return _kernels().fill_null(codes, -1)


def run_encoded(array: pa.DictionaryArray) -> pa.Array:
    """A sorted dictionary column (NULL-free) as runs: each run's end row beside its value
    (the distinct values once, in order): 4 bytes a distinct value instead of a code a row."""
    import numpy as np
    import pyarrow as pa

    codes = array.indices.to_numpy(zero_copy_only=False)
    ends = np.flatnonzero(codes[1:] != codes[:-1]) + 1
    starts = np.concatenate([np.zeros(min(len(codes), 1), np.int64), ends])
    values = _kernels().take(array.dictionary, codes[starts].astype(np.int64))
    run_ends = _kernels().from_numpy(np.append(ends, len(codes)).astype(np.int32) if len(codes)
                                  else np.zeros(0, np.int32))
    return pa.RunEndEncodedArray.from_arrays(run_ends, values)


def narrowed(names: list[str], arrays: list[pa.Array], runs: tuple[str, ...] = ()) -> list[pa.Array]:
    """`arrays` (the columns `names`, one chunk each) cast to their narrowed types; `runs`: the
    sorted dictionary columns written as runs (`run_encoded`)."""
    import pyarrow as pa

    out = []
    for name, array in zip(names, arrays):
        if name in runs and pa.types.is_dictionary(array.type) and array.null_count == 0:
            out.append(run_encoded(array))
            continue
        type_ = array.type if name in KEPT else narrowed_type(array, name in UNSIGNED)
        out.append(array if type_ == array.type else
                   _kernels().call_function("cast", [array], _kernels().CastOptions.safe(type_)))
    return out


def narrowed_table(table: pa.Table, runs: tuple[str, ...] = ()) -> pa.Table:
    """`table` (combined into single chunks) with its columns narrowed (`runs`: as
    `narrowed`'s), its metadata kept."""
    import pyarrow as pa

    table = table.combine_chunks()
    arrays = narrowed(table.column_names, [c.chunk(0) if c.num_chunks else c.combine_chunks()
                                           for c in table.columns], runs)
    fields = [pa.field(f.name, a.type, f.nullable, f.metadata) for f, a in zip(table.schema, arrays)]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=table.schema.metadata))


def run_decoded(array: pa.Array) -> pa.DictionaryArray:
    """A run-encoded column (`run_encoded`) as the dictionary column it was made from: its
    runs' values as the dictionary, a code a row (no string copied)."""
    import numpy as np
    import pyarrow as pa

    ends = array.run_ends.to_numpy(zero_copy_only=False).astype(np.int64)
    first, n = array.offset, len(array)
    ends = np.clip(ends - first, 0, n)
    lengths = np.diff(np.concatenate([[0], ends]))
    codes = np.repeat(np.arange(len(ends), dtype=np.int32), lengths)
    return pa.DictionaryArray.from_arrays(_kernels().from_numpy(codes), array.values)


def decoded_runs(table: pa.Table) -> pa.Table:
    """`table` with its run-encoded columns as dictionary columns (what the builders make:
    Arrow takes and merges those, not runs)."""
    import pyarrow as pa

    if not any(pa.types.is_run_end_encoded(f.type) for f in table.schema):
        return table
    columns = [run_decoded(c.combine_chunks()) if pa.types.is_run_end_encoded(c.type) else c
               for c in table.columns]
    return pa.table(columns, schema=pa.schema(
        [pa.field(f.name, c.type, f.nullable, f.metadata) for f, c in zip(table.schema, columns)],
        metadata=table.schema.metadata))
