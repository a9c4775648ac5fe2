"""The few Arrow compute kernels a build uses, called without importing `pyarrow.compute`.

That module wraps each of its ~290 kernels in a Python function with a docstring scraped at
import time (pydoc included): ~40 ms, paid by every fresh process that builds and by each parse
worker. The kernels themselves live in `pyarrow._compute`. Methods such as `Array.take` and
`Array.dictionary_encode` import `pyarrow.compute` on first use, so build code calls these.
Likewise `pa.array(ndarray)` imports `numpy.ma` (~9 ms) to check for a masked array:
`from_numpy` wraps the array's buffer instead.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

try:
    from pyarrow._compute import CastOptions, RankOptions, call_function
except ImportError:  # a pyarrow that moved them: the public module has them all
    from pyarrow.compute import CastOptions, RankOptions, call_function


def dictionary_encode(values: pa.Array) -> pa.DictionaryArray:
    return call_function("dictionary_encode", [values])


def take(values: pa.Array, indices) -> pa.Array:
    """`values[indices]` (indices: an Arrow or numpy integer array)."""
    if isinstance(indices, np.ndarray):
        indices = from_numpy(indices)
    return call_function("take", [values, indices])


def dense_rank(values: pa.Array) -> pa.Array:
    """1-based ascending rank of each value, equal values sharing one (pc.rank, dense)."""
    return call_function("rank", [values], RankOptions(sort_keys="ascending", tiebreaker="dense"))


def not_equal(a: pa.Array, b: pa.Array) -> pa.Array:
    return call_function("not_equal", [a, b])


def fill_null(values: pa.Array, fill: object) -> pa.Array:
    return call_function("coalesce", [values, pa.scalar(fill, values.type)])


def list_values(lists: pa.ListArray) -> pa.Array:
    """`lists.flatten()`: the elements of every list, in order (without null lists, the
    child array between the first and the last offset; flatten() imports pyarrow.compute)."""
    if lists.null_count:
        return lists.flatten()
    offsets = lists.offsets
    first, last = offsets[0].as_py(), offsets[len(offsets) - 1].as_py()
    return lists.values.slice(first, last - first)


def cast_table(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table.cast(schema)`: the same column names in the same order, safely cast."""
    if table.column_names != schema.names:
        raise ValueError(f"cannot cast columns {table.column_names} to {schema.names}")
    return pa.Table.from_arrays([call_function("cast", [column], CastOptions.safe(field.type))
                                 for column, field in zip(table.columns, schema)], schema=schema)


def from_numpy(values: np.ndarray) -> pa.Array:
    """A 1-d integer or float array as an Arrow array without nulls (as `pa.array(values)`)."""
    if values.dtype.kind not in "iuf":
        raise TypeError(f"from_numpy takes integers or floats, not {values.dtype}")
    values = np.ascontiguousarray(values)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values),
                                 [None, pa.py_buffer(values)])


def one_list(list_type: pa.ListType, children: list[pa.Array]) -> pa.Array:
    """A one-value list<struct> array: the list of all rows of the struct's child arrays
    (built from buffers: ~4x cheaper than StructArray/ListArray.from_arrays)."""
    n = len(children[0])
    values = pa.Array.from_buffers(list_type.value_type, n, [None], children=children)
    return pa.Array.from_buffers(list_type, 1, [None, pa.py_buffer(np.array([0, n], np.int32))],
                                 children=[values])
