"""A spooled Arrow file (format/arrow_spool.py) is, byte for byte, the file Arrow's writer gives
the same rows held in memory, however the rows were split into batches."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent import kernels
from codeagent.format.arrow_spool import Spool, SpoolMemory, write_spooled

TEXT = st.one_of(st.none(), st.sampled_from(["", "a", "ab", "é", "z\u4e2d"]), st.text(max_size=5))
ROW = st.tuples(TEXT, st.one_of(st.none(), st.integers(-2**31, 2**31 - 1)), st.one_of(st.none(), st.booleans()),
                st.one_of(st.none(), st.lists(TEXT, max_size=3)), st.one_of(st.none(), st.floats(allow_nan=False)),
                st.one_of(st.none(), st.sampled_from(["p.py", "q.py", "r/s.py"])))
TYPES = [("s", pa.string()), ("i", pa.int32()), ("b", pa.bool_()), ("l", pa.list_(pa.string())),
         ("f", pa.float64()), ("d", pa.string())]
SCHEMA = pa.schema([(n, pa.dictionary(pa.int32(), t) if n == "d" else t) for n, t in TYPES],
                   metadata={b"k": b"v"})


def _in_memory(batches: list[pa.RecordBatch], given: bool) -> bytes:
    """What the resident builders write: the batches concatenated (and, not `given`, taken
    anew in their order, as a builder that sorts them), `d` dictionary-encoded."""
    table = pa.Table.from_batches(batches, pa.schema(TYPES)) if batches else pa.schema(TYPES).empty_table()
    if not given:
        table = kernels.take(table, np.arange(table.num_rows))
    table = pa.table({n: kernels.dictionary_encode(table.column(n).combine_chunks()) if n == "d"
                      else table.column(n) for n in table.column_names}).replace_schema_metadata(SCHEMA.metadata)
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())
    return sink.getvalue()


def _exact(array: pa.Array, n: int) -> pa.Array:
    """`array`'s first `n` rows over buffers cut to their size (bytes past them are written
    as they are when an array is written whole)."""
    def cut(buffer, size):
        return None if buffer is None else buffer.slice(0, size)

    bits = (n + 7) // 8
    buffers = array.buffers()
    nulls = array.slice(0, n).null_count
    if pa.types.is_list(array.type) or pa.types.is_string(array.type):
        end = int(np.frombuffer(buffers[1], np.int32)[n])
        if pa.types.is_list(array.type):
            return pa.Array.from_buffers(array.type, n, [cut(buffers[0], bits), cut(buffers[1], 4 * n + 4)],
                                         nulls, children=[_exact(array.values, end)])
        return pa.Array.from_buffers(array.type, n, [cut(buffers[0], bits), cut(buffers[1], 4 * n + 4),
                                                     cut(buffers[2], end)], nulls)
    size = bits if pa.types.is_boolean(array.type) else n * array.type.bit_width // 8
    return pa.Array.from_buffers(array.type, n, [cut(buffers[0], bits), cut(buffers[1], size)], nulls)


@settings(max_examples=150, deadline=None)
@given(st.lists(ROW, max_size=70), st.lists(st.integers(0, 70), max_size=4), st.booleans(),
       st.sampled_from([0, 1, 200, 1 << 20]))
def test_spooled_file_is_the_in_memory_one(tmp_path_factory, rows, cuts, as_given, memory):
    """Spooled on disk (memory 0), in memory, or rolled over to disk part way (1, 200 bytes)."""
    tmp = tmp_path_factory.mktemp("spool")
    # 8 more valid rows after them, cut off: the bitmaps' bits past the rows are set, as DuckDB's can be
    padded = rows + [("x", 1, True, ["y"], 1.0, "p.py")] * 8
    whole = pa.RecordBatch.from_pylist([dict(zip(SCHEMA.names, r)) for r in padded], pa.schema(TYPES))
    whole = pa.RecordBatch.from_arrays([_exact(c, len(rows)) for c in whole.columns], schema=pa.schema(TYPES))
    # slices of one batch (offsets not 0, bitmaps not byte-aligned) as well as whole batches
    bounds = sorted({0, len(rows), *(c for c in cuts if c <= len(rows))})
    batches = [whole.slice(a, b - a) for a, b in zip(bounds, bounds[1:])]
    held = SpoolMemory(memory)
    spools = [Spool(tmp / f.name, f.type, as_given, held) for f in SCHEMA]
    for batch in batches:
        for spool, column in zip(spools, batch.columns):
            spool.append(column)
    write_spooled(tmp / "out.arrow", SCHEMA, spools)
    got = (tmp / "out.arrow").read_bytes()
    read = pa.ipc.open_file(pa.py_buffer(got)).read_all()
    assert read.to_pylist() == whole.to_pylist()
    assert got == _in_memory(batches, as_given)
    spooled = {p.name for p in tmp.rglob("*") if p.is_file()} - {"out.arrow"}
    # held in memory below the limit: no spool file written; past it, all of them on disk
    assert (not spooled) if memory and held.limit else bool(spooled) or not rows


def test_unsupported_types_are_refused(tmp_path):
    with pytest.raises(TypeError, match="no spool"):
        Spool(tmp_path / "x", pa.struct([("a", pa.int32())]))
