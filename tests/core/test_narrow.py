"""Narrowed resident columns (format/narrow.py) hold the same values in the smallest type, sorted
key columns as runs, and a reader of their codes or runs reads the same rows."""

from __future__ import annotations

import bisect
import io

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent import kernels
from codeagent.format.narrow import (decoded_runs, narrowed, narrowed_table, narrowest, run_decoded,
                                     run_encoded, signed_codes)
from codeagent.format.columns import JoinedColumn, rows_column, take_column
from codeagent.format.resident import StringColumn

WIDTH = {pa.int8(): 8, pa.int16(): 16, pa.uint16(): 16, pa.int32(): 32}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2**31, 2**31 - 1), min_size=1, max_size=40))
def test_integers_keep_their_values_in_the_smallest_signed_type(values):
    [out] = narrowed(["n"], [pa.array(values, pa.int32())])
    assert out.to_pylist() == values
    low, high = min(values), max(values)
    fits = [b for b in (8, 16) if -(1 << (b - 1)) <= low and high < 1 << (b - 1)]
    assert WIDTH[out.type] == (fits[0] if fits else 32)


def test_integers_with_nulls_and_row_numbers_keep_int32():
    with_null, rows = pa.array([1, None, 3], pa.int32()), pa.array([0, 1, 2], pa.int32())
    assert [a.type for a in narrowed(["n", "row"], [with_null, rows])] == [pa.int32(), pa.int32()]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2, 128, 129, 32768, 32769, 65536, 65537]), st.booleans())
def test_dictionary_codes_take_the_narrowest_type_and_read_the_same(distinct, nulls):
    values = [f"v{i}" for i in range(distinct)] + ([None, "v0"] if nulls else [])
    array = kernels.dictionary_encode(pa.array(values, pa.string()))
    [out] = narrowed(["d"], [array])
    want = pa.int8() if distinct <= 128 else pa.int16() if distinct <= 32768 else (
        pa.uint16() if distinct <= 65536 else pa.int32())
    assert out.type.index_type == want
    assert out.to_pylist() == values
    column = StringColumn(out)
    assert [column[i] for i in range(len(values))] == values
    codes = signed_codes(out).to_pylist()
    assert [c == -1 for c in codes] == [v is None for v in values]


def test_a_narrowed_table_round_trips_through_an_ipc_file():
    table = pa.table({"kind": kernels.dictionary_encode(pa.array(["a", "b", "a"])),
                      "line": pa.array([1, 300, 70000], pa.int32()), "text": pa.array(["x", None, "z"])})
    table = table.replace_schema_metadata({b"k": b"v"})
    out = narrowed_table(table)
    assert [f.type for f in out.schema] == [pa.dictionary(pa.int8(), pa.string()), pa.int32(), pa.string()]
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, out.schema) as writer:
        writer.write_table(out)
    read = pa.ipc.open_file(pa.py_buffer(sink.getvalue())).read_all()
    assert read.schema.metadata == {b"k": b"v"} and read.to_pylist() == table.to_pylist()


def test_narrowest_bounds():
    assert narrowest(-128, 127) == pa.int8() and narrowest(0, 128) == pa.int16()
    assert narrowest(0, 40000) == pa.int32() and narrowest(0, 40000, unsigned=True) == pa.uint16()
    assert narrowest(-1, 40000, unsigned=True) == pa.int32()


SORTED_KEYS = st.lists(st.sampled_from(["", "a", "ab", "b", "é", "z\u4e2d"]), max_size=30).map(sorted)


@settings(max_examples=200, deadline=None)
@given(SORTED_KEYS, st.integers(0, 30), st.integers(0, 30), st.sampled_from(["", "a", "aa", "ab", "c", "é", "zz"]))
def test_runs_read_and_find_keys_as_the_sorted_column(keys, start, size, probe):
    """A run-encoded column (whole or sliced) reads row for row as the column, span finds a
    key's rows as a binary search over the rows does, and decoding gives the codes back."""
    runs = run_encoded(kernels.dictionary_encode(pa.array(keys, pa.string())))
    assert runs.to_pylist() == keys and len(runs.values) == len(set(keys))
    start = min(start, len(keys))
    part, want = runs.slice(start, size), keys[start:start + size]
    column = StringColumn(part)
    assert [column[i] for i in range(len(want))] == want
    lo = bisect.bisect_left(want, probe)
    assert column.span(probe) == (lo, bisect.bisect_right(want, probe))
    assert run_decoded(part).to_pylist() == want
    assert decoded_runs(pa.table({"k": part})).column("k").to_pylist() == want


def test_only_the_named_sorted_columns_are_run_encoded():
    keys = kernels.dictionary_encode(pa.array(["a", "a", "b"]))
    with_null = kernels.dictionary_encode(pa.array(["a", None, "b"]))
    out = narrowed(["key", "other", "nulls"], [keys, keys, with_null], runs=("key", "nulls"))
    assert pa.types.is_run_end_encoded(out[0].type) and out[0].to_pylist() == ["a", "a", "b"]
    assert [pa.types.is_dictionary(a.type) for a in out[1:]] == [True, True]


PARTS = st.lists(st.one_of(st.tuples(st.sampled_from(["m.", "pkg.mod.", ""]), st.text(max_size=4), st.none()),
                           st.tuples(st.none(), st.none(), st.one_of(st.none(), st.text(max_size=4)))),
                 max_size=20)


@settings(max_examples=100, deadline=None)
@given(PARTS)
def test_a_joined_column_reads_and_takes_its_prefix_and_rest_or_the_whole(rows):
    """fq_name kept in parts (resident.JOINED): prefix + rest where there is a prefix, else other."""
    want = [None if p is None and o is None else o if p is None else p + r for p, r, o in rows]
    prefix, rest, other = (pa.array([row[k] for row in rows], pa.string()) for k in range(3))
    table = pa.table({"fq_prefix": kernels.dictionary_encode(prefix), "qualified_name": rest, "fq_other": other})
    column = rows_column(table, "fq_name")
    assert isinstance(column, JoinedColumn) and [column[i] for i in range(len(rows))] == want
    order = list(reversed(range(len(rows))))
    assert take_column(column, pa.array(order, pa.int64())).to_pylist() == [want[i] for i in order]
    assert rows_column(table, "qualified_name").to_pylist() == rest.to_pylist()
