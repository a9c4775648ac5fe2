"""Columns of the resident arrays read in place: `whole` (a column as one array without a
copy) and `StringColumn` (a string, dictionary or run-encoded column as a sequence of str)."""

from __future__ import annotations

import bisect
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


class StringColumn:
    """An Arrow string array read in place (offsets and bytes), as a sequence of str/None."""

    def __init__(self, array: pa.Array) -> None:
        import numpy as np
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
            self._values = array.dictionary.to_pylist() + [None]
            self._len = len(array)
            return
        self._codes = None
        wide = np.int64 if pa.types.is_large_string(array.type) else np.int32
        _, offsets, data = array.buffers()
        self._offsets = np.frombuffer(offsets, dtype=wide)[array.offset:array.offset + len(array) + 1]
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


def take_column(column, rows) -> pa.Array:
    """Rows `rows` of a column (an Arrow array or a JoinedColumn) as one array."""
    from .. import kernels  # imports pyarrow: only when a reader takes rows

    return column.take(rows) if isinstance(column, JoinedColumn) else kernels.take(whole(column), rows)


def rows_column(table: pa.Table, name: str):
    """The column `name` of a structure's rows: a JoinedColumn where the rows store it in parts
    (JOINED), else the Arrow column."""
    if name in JOINED and name not in table.column_names:
        return JoinedColumn(*(table.column(part) for part in JOINED[name]))
    return table.column(name)
