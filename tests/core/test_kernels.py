"""codeagent.kernels: the Arrow helpers a build uses must equal what pyarrow's own calls give."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from codeagent import kernels

_DTYPES = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32,
                           np.uint64, np.float32, np.float64])


@settings(max_examples=200, deadline=None)
@given(data=st.data(), dtype=_DTYPES, step=st.integers(1, 3))
def test_from_numpy_equals_pa_array_also_for_strided_views(data, dtype, step):
    values = data.draw(hnp.arrays(dtype, st.integers(0, 40)))[::step]
    got = kernels.from_numpy(values)
    assert got.type == pa.from_numpy_dtype(values.dtype)
    assert got.equals(pa.array(values)) or np.isnan(values).any()
    assert got.to_pylist() == pa.array(values).to_pylist() or np.isnan(values).any()


def test_from_numpy_refuses_what_arrow_lays_out_differently():
    with pytest.raises(TypeError):
        kernels.from_numpy(np.array([True, False]))  # Arrow booleans are bits
    with pytest.raises(TypeError):
        kernels.from_numpy(np.array(["a"]))


@given(st.lists(st.integers(0, 9), max_size=30))
def test_take_with_numpy_indices(indices):
    values = pa.array([f"v{i}" for i in range(10)])
    got = kernels.take(values, np.array(indices, dtype=np.int64))
    assert got.to_pylist() == [f"v{i}" for i in indices]


def test_cast_table_restores_a_shard_read_back_from_parquet():
    """Parquet gives fixed-size lists back as lists (shards store no Arrow schema): the cast
    must give the shard schema and values back, as Table.cast would."""
    import pyarrow.parquet as pq

    from codeagent.indexer.extract import extract
    from codeagent.format.shard import SHARD_SCHEMA, encode_table
    from codeagent.indexer.shard import shard_table

    source = b"class A:\n    '''Doc.'''\n    def m(self):\n        return f(1)\n"
    table = shard_table(source, "python", "0" * 64, extract(source, "python"))
    read = pq.read_table(pa.BufferReader(encode_table(table)))
    assert not read.schema.equals(SHARD_SCHEMA)
    got = kernels.cast_table(read, SHARD_SCHEMA)
    assert got.schema.equals(SHARD_SCHEMA) and got.equals(table) and got.equals(read.cast(SHARD_SCHEMA))
    with pytest.raises(ValueError):
        kernels.cast_table(read.select(read.column_names[::-1]), SHARD_SCHEMA)


@given(st.lists(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=4)), max_size=12),
       st.integers(0, 12), st.integers(0, 12))
def test_list_values_equals_flatten_on_slices(lists, start, length):
    array = pa.array(lists, pa.list_(pa.int64())).slice(start, length)
    assert kernels.list_values(array).equals(array.flatten())
