"""Columns of the resident arrays read in place: `whole` (a column as one array without a
copy), `StringColumn` (a string, dictionary or run-encoded column as a sequence of str),
`JoinedColumn` (a string kept in two parts) and `HexColumn` (hex ids kept as their bytes)."""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterator
from typing import TYPE_CHECKING

from .narrow import signed_codes

if TYPE_CHECKING:
    import pyarrow as pa


def whole(column) -> pa.Array:
    """A column as one array, in place when it is one chunk (combine_chunks copies even then,
    which would read every page of a mapped file into private memory)."""
    import pyarrow as pa

    if isinstance(column, pa.ChunkedArray):
        return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return column


def value_offsets(array: pa.Array):
    """A string or binary array's value offsets into its data buffer (len + 1 of them, a numpy
    view of its offsets buffer)."""
    import numpy as np
    import pyarrow as pa

    wide = np.int64 if pa.types.is_large_string(array.type) or pa.types.is_large_binary(array.type) else np.int32
    return np.frombuffer(array.buffers()[1], dtype=wide)[array.offset:array.offset + len(array) + 1]


class StringColumn:
    """An Arrow string array read in place (offsets and bytes), as a sequence of str/None."""

    def __init__(self, array: pa.Array) -> None:
        import pyarrow as pa

        array = whole(array)
        self._runs = None
        if pa.types.is_run_end_encoded(array.type):  # sorted runs (format/narrow.run_encoded)
            self._runs = array.run_ends.to_numpy(zero_copy_only=False)
            self._first, self._len, self._codes = array.offset, len(array), None
            self._values = array.values.to_pylist()
            return
        if pa.types.is_dictionary(array.type):
            codes = signed_codes(array)
            self._codes = codes.to_numpy(zero_copy_only=False)
            # hex ids kept as bytes (HEX): a value decoded when read, not every one on load
            self._values = (_HexValues(array.dictionary) if is_hex(array.type)
                            else array.dictionary.to_pylist() + [None])
            self._len = len(array)
            return
        self._codes = None
        self._offsets = value_offsets(array)
        data = array.buffers()[2]
        self._data = memoryview(data) if data is not None else memoryview(b"")
        self._valid = None if array.null_count == 0 else array.is_valid().to_numpy(zero_copy_only=False)
        self._len = len(array)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i: int) -> str | None:
        if self._runs is not None:
            return self._values[int(self._runs.searchsorted(self._first + i, "right"))]
        if self._codes is not None:
            return self._values[self._codes[i]]
        if self._valid is not None and not self._valid[i]:
            return None
        return str(self._data[self._offsets[i]:self._offsets[i + 1]], "utf-8")

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(self._len))

    def span(self, key: str) -> tuple[int, int]:
        """The rows holding `key` in a sorted column: a binary search over its distinct values
        when it is run-encoded, else over its rows."""
        if self._runs is None:
            lo = bisect.bisect_left(self, key)
            return lo, bisect.bisect_right(self, key, lo)
        run = bisect.bisect_left(self._values, key)
        lo = min(max(int(self._runs[run - 1]) - self._first if run else 0, 0), self._len)
        if run == len(self._values) or self._values[run] != key:
            return lo, lo
        return lo, min(max(int(self._runs[run]) - self._first, 0), self._len)

    def raw(self, i: int) -> memoryview | bytes | None:
        """Row i's UTF-8 bytes, in place (no decoding: a caller that reads a few lines of a
        long text decodes only those)."""
        if self._codes is not None or self._runs is not None:
            value = self[i]
            return None if value is None else value.encode("utf-8")
        if self._valid is not None and not self._valid[i]:
            return None
        return self._data[self._offsets[i]:self._offsets[i + 1]]


class JoinedColumn:
    """A string column stored in two parts (RESIDENT_VERSION 5: the symbols' fq_name): row i is
    `prefix[i] + rest[i]` where the prefix is not NULL, else `other[i]` (the value whole).
    `prefix`: a dictionary column (a module's name and a dot, one per file); `rest` and
    `other`: string columns of the same rows. Read per row (as StringColumn) or taken."""

    def __init__(self, prefix: pa.Array, rest: pa.Array, other: pa.Array) -> None:
        self._arrays = (whole(prefix), whole(rest), whole(other))
        self._prefix, self._rest, self._other = (StringColumn(a) for a in self._arrays)

    def __len__(self) -> int:
        return len(self._prefix)

    def __getitem__(self, i: int) -> str | None:
        prefix = self._prefix[i]
        return self._other[i] if prefix is None else prefix + self._rest[i]

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self)))

    def take(self, rows) -> pa.Array:
        """Rows `rows` (a numpy or Arrow integer array) as one string array."""
        import pyarrow as pa  # with kernels: only when a reader takes rows (the CLI's quick commands do not)

        from .. import kernels

        prefix, rest, other = (kernels.take(a, rows) for a in self._arrays)
        if pa.types.is_dictionary(prefix.type):
            prefix = kernels.call_function("cast", [prefix], kernels.CastOptions.safe(pa.string()))
        joined = kernels.call_function("binary_join_element_wise", [prefix, rest, pa.scalar("")])
        return kernels.call_function("coalesce", [joined, other])


# A column kept in parts (JoinedColumn: prefix + rest, else other): the symbols' fq_name is its
# file's module, a dot and its qualified_name (a prefix per file).
JOINED = {"fq_name": ("fq_prefix", "qualified_name", "fq_other")}
# Symbol ids, lower-case hex strings, kept as their bytes where every value is one of this
# many bytes (NULL stays NULL): 8 or 10 bytes a row instead of 16 or 20 characters and a
# 4-byte offset (the symbols' columns, RESIDENT_VERSION 7), or a dictionary of them (the
# edges' src_id and dst_id, dictionary-encoded: RESIDENT_VERSION 8).
HEX = {"symbol_id": 8, "stable_id": 10, "parent_id": 8, "body_hash": 10, "src_id": 8, "dst_id": 8}
_HEX_DIGITS = b"0123456789abcdef"


class HexColumn:
    """A column of hex strings stored as their bytes (a fixed-size binary array: `hex_bytes`),
    read per row (as StringColumn) or taken as strings."""

    def __init__(self, array: pa.Array) -> None:
        self._array = array = whole(array)
        self._width = array.type.byte_width
        start = array.offset * self._width
        self._data = memoryview(array.buffers()[1] or b"")[start:start + len(array) * self._width]
        self._valid = None if array.null_count == 0 else array.is_valid().to_numpy(zero_copy_only=False)

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, i: int) -> str | None:
        if self._valid is not None and not self._valid[i]:
            return None
        return self._data[i * self._width:(i + 1) * self._width].hex()

    def __iter__(self) -> Iterator[str | None]:
        return (self[i] for i in range(len(self)))

    def take(self, rows) -> pa.Array:
        """Rows `rows` (a numpy or Arrow integer array) as one string array."""
        from .. import kernels  # imports pyarrow: only when a reader takes rows

        return hex_strings(kernels.take(self._array, rows))


class _HexValues(HexColumn):
    """A dictionary's values kept as hex bytes, by code (-1, a NULL's: None). A numpy code is
    made an int first: 8 times an int16 or uint16 code overflows."""

    def __getitem__(self, i: int) -> str | None:
        return None if i < 0 else super().__getitem__(int(i))


def hex_bytes(array: pa.Array, width: int) -> pa.Array | None:
    """A string array of lower-case hex ids of `width` bytes as a fixed-size binary array
    (zero bytes under a NULL), or None when a value is not one; a dictionary array of them
    with its dictionary so (its codes as they are)."""
    import numpy as np
    import pyarrow as pa

    array = whole(array)
    if pa.types.is_dictionary(array.type):
        packed = hex_bytes(array.dictionary, width)
        return None if packed is None else pa.DictionaryArray.from_arrays(array.indices, packed, safe=False)
    if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
        return None
    from .. import kernels  # no pyarrow.compute, no numpy.ma: a build imports neither

    n, digits = len(array), 2 * width
    valid = (np.ones(n, bool) if array.null_count == 0 else
             kernels.call_function("is_valid", [array]).to_numpy(zero_copy_only=False))
    offsets = value_offsets(array)
    starts = offsets[:-1][valid]
    if np.any(offsets[1:][valid] - starts != digits):
        return None
    data = np.frombuffer(array.buffers()[2] or b"", dtype=np.uint8)
    nibbles = _luts()[0][data[starts[:, None] + np.arange(digits)]].reshape(len(starts), digits)
    if np.any(nibbles > 15):
        return None
    out = np.zeros((n, width), dtype=np.uint8)
    out[valid] = nibbles[:, 0::2] * 16 + nibbles[:, 1::2]
    validity = None if array.null_count == 0 else pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    return pa.Array.from_buffers(pa.binary(width), n, [validity, pa.py_buffer(out.tobytes())],
                                 null_count=array.null_count)


def is_hex(type_: pa.DataType) -> bool:
    """Is `type_` that of hex ids kept as their bytes (`hex_bytes`: fixed-size binary, or a
    dictionary of it)?"""
    import pyarrow as pa

    if pa.types.is_dictionary(type_):
        type_ = type_.value_type
    return pa.types.is_fixed_size_binary(type_)


def hex_rows(array) -> pa.Array:
    """An array (or one-chunk column) of hex ids kept as bytes (`is_hex`) as one string a
    row, decoding only its rows (not a dictionary's other values); any other array as it is."""
    import pyarrow as pa

    array = whole(array)
    if not is_hex(array.type):
        return array
    if pa.types.is_dictionary(array.type):
        from .. import kernels  # imports pyarrow: only when a reader takes rows

        array = kernels.take(array.dictionary, array.indices)
    return hex_strings(array)


_FEW_ROWS = 128  # hex ids decoded one by one below it (hex_rows costs ~25 us however few)
_FEW_CODES = 4  # a dictionary's rows converted as they are up to it (a take costs ~4 us)


def pylist(array) -> list:
    """An array's values as Python objects, hex ids kept as bytes (`is_hex`) as their strings
    (a few rows decoded one by one, more through `hex_rows`); a dictionary array of more than
    a few rows converted from its values taken by its codes (Arrow's to_pylist decodes a
    dictionary at ~1 us a row, 30x the take's cost at 850 rows)."""
    import pyarrow as pa

    array = whole(array)
    if is_hex(array.type):
        if len(array) > _FEW_ROWS:
            return hex_rows(array).to_pylist()
        if pa.types.is_dictionary(array.type):
            values = _HexValues(array.dictionary)
            return [values[c] for c in signed_codes(array).to_numpy(zero_copy_only=False)]
        return list(HexColumn(array))
    if pa.types.is_dictionary(array.type) and len(array) > _FEW_CODES:
        from .. import kernels  # imports pyarrow: only when a reader takes rows

        return kernels.take(array.dictionary, array.indices).to_pylist()
    return array.to_pylist()


def hex_strings(array: pa.Array) -> pa.Array:
    """A fixed-size binary array as its lower-case hex strings (NULL stays NULL); a dictionary
    of them with its dictionary so (its codes as they are)."""
    import numpy as np
    import pyarrow as pa

    array = whole(array)
    if pa.types.is_dictionary(array.type):
        return pa.DictionaryArray.from_arrays(array.indices, hex_strings(array.dictionary), safe=False)
    n, width = len(array), array.type.byte_width
    start = array.offset * width
    raw = np.frombuffer(array.buffers()[1] or b"", dtype=np.uint8)[start:start + n * width]
    text = np.empty(n * width * 2, dtype=np.uint8)
    digits = _luts()[1]
    text[0::2], text[1::2] = digits[raw >> 4], digits[raw & 15]
    offsets = np.arange(n + 1, dtype=np.int32) * np.int32(2 * width)
    validity = None if array.null_count == 0 else array.is_valid().buffers()[1]
    return pa.Array.from_buffers(pa.string(), n, [validity, pa.py_buffer(offsets.tobytes()),
                                                  pa.py_buffer(text.tobytes())], null_count=array.null_count)


@functools.cache
def _luts():
    """(digit byte -> its value, 255 for a non-digit; value -> its digit byte), numpy arrays."""
    import numpy as np

    nibbles = np.full(256, 255, dtype=np.uint8)
    for value, digit in enumerate(_HEX_DIGITS):
        nibbles[digit] = value
    return nibbles, np.frombuffer(_HEX_DIGITS, dtype=np.uint8)


def hexed(table: pa.Table) -> pa.Table:
    """`table` with its HEX columns kept as bytes where every value is a hex id of the
    column's width (the others as they are)."""
    for name, width in HEX.items():
        if name in table.column_names:
            packed = hex_bytes(table.column(name), width)
            if packed is not None:
                table = table.set_column(table.schema.get_field_index(name), name, packed)
    return table


def same_hex(tables: list[pa.Table], names=HEX) -> list[pa.Table]:
    """`tables` (rows of one structure) with a column of `names` kept as bytes in one and as
    strings in another made strings in all (a merge of rows whose ids were not all hex ids)."""
    for name in names:
        kept = {is_hex(t.schema.field(name).type) for t in tables if name in t.column_names}
        if len(kept) > 1:
            tables = [t.set_column(t.schema.get_field_index(name), name, hex_strings(t.column(name)))
                      if is_hex(t.schema.field(name).type) else t for t in tables]
    return tables


def take_column(column, rows) -> pa.Array:
    """Rows `rows` of a column (an Arrow array, a JoinedColumn or a HexColumn) as one array."""
    from .. import kernels  # imports pyarrow: only when a reader takes rows

    return column.take(rows) if isinstance(column, READ_COLUMNS) else kernels.take(whole(column), rows)


READ_COLUMNS = (JoinedColumn, HexColumn)  # columns read through an object of ours, not Arrow


def rows_column(table: pa.Table, name: str):
    """The column `name` of a structure's rows: a JoinedColumn where the rows store it in parts
    (JOINED), a HexColumn where they keep it as bytes (HEX), else the Arrow column."""
    import pyarrow as pa

    if name in JOINED and name not in table.column_names:
        return JoinedColumn(*(table.column(part) for part in JOINED[name]))
    column = table.column(name)
    if name in HEX and pa.types.is_fixed_size_binary(column.type):
        return HexColumn(column)
    return column
