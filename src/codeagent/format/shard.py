"""The shard codec: one file's extraction as a one-row Parquet object, its schema, and how
readers decode it (SCHEMA_VERSION in this package's __init__ says what each layout changed).

The build side fills a SHARD_SCHEMA table (indexer/shard.py) and writes it with
`encode_table`; readers (`read_shard`, `decode_table`, `element_columns`, `chunk_text`) need
nothing else. Pure: the same table always yields the same bytes, hence the same object id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .. import kernels
from ..errors import StoreCorrupt

_SPAN_FIELDS = [
    ("start_line", pa.int32()), ("start_col", pa.int32()), ("end_line", pa.int32()),
    ("end_col", pa.int32()), ("start_byte", pa.int64()), ("end_byte", pa.int64()),
]

# The fields of a chunk, symbol and reference as readers see them (`element_columns`,
# `decode_table`), plus `ordinal`: the element's position in its list. A chunk's text is NULL
# when it is exactly the file's text from start_byte to end_byte (code chunks, line windows):
# `chunk_text` (rows) and query/sourcetext.chunk_slice (the assembled chunks table) restore it.
CHUNK_TYPE = pa.struct([
    ("kind", pa.string()), ("heading", pa.string()), *_SPAN_FIELDS, ("symbol", pa.int32()),
    ("text", pa.string()),
])
SYMBOL_TYPE = pa.struct([
    ("kind", pa.string()), ("name", pa.string()), ("qualified_name", pa.string()),
    ("stable_id", pa.string()), ("signature", pa.string()), ("doc", pa.string()),
    ("visibility", pa.string()), ("modifiers", pa.list_(pa.string())), *_SPAN_FIELDS,
    ("name_line", pa.int32()), ("name_col", pa.int32()), ("name_end_line", pa.int32()),
    ("name_end_col", pa.int32()), ("parent", pa.int32()), ("body_hash", pa.string()),
])
REF_TYPE = pa.struct([
    ("kind", pa.string()), ("target", pa.string()), ("module", pa.string()),
    ("alias", pa.string()), ("source", pa.int32()), ("start_line", pa.int32()),
    ("start_col", pa.int32()), ("end_line", pa.int32()), ("end_col", pa.int32()),
])
# BM25 term statistics of each document in the file: doc_kind "s" = symbol, "c" = chunk.
POSTING_TYPE = pa.struct([
    ("doc_kind", pa.string()), ("doc", pa.int32()), ("term", pa.string()), ("tf", pa.int32()),
])


class Packed:
    """How a list column stores the fields of its elements (`logical`, a struct type): its
    string fields, in order, as one `str` leaf of fixed_size_list<string> per element, its
    integer fields as one `int` leaf of fixed_size_list<int64>, other fields as they are.
    Writing a Parquet leaf column costs ~20 us of CPU whatever its size (a shard had ~50)."""

    def __init__(self, logical: pa.StructType) -> None:
        self.logical = logical
        self.strs = [f.name for f in logical if pa.types.is_string(f.type)]
        self.ints = [f.name for f in logical if pa.types.is_integer(f.type)]
        self.others = [f for f in logical if f.name not in self.strs + self.ints]
        self.type = pa.struct([("str", pa.list_(pa.string(), len(self.strs))),
                               ("int", pa.list_(pa.int64(), len(self.ints))), *self.others])
        self.list_type = pa.list_(self.type)

    def build(self, n: int, strs: Iterable[str | None], ints: Iterable[int],
              *others: pa.Array) -> pa.Array:
        """The one-value list of n elements: `strs` and `ints` their string and integer
        fields element after element (each in the order of `logical`), `others` the rest."""
        strs = pa.FixedSizeListArray.from_arrays(pa.array(list(strs), pa.string()), len(self.strs))
        ints = pa.FixedSizeListArray.from_arrays(
            kernels.from_numpy(np.fromiter(ints, np.int64, n * len(self.ints))), len(self.ints))
        return kernels.one_list(self.list_type, [strs, ints, *others])

    def columns(self, values: pa.StructArray) -> dict[str, pa.Array]:
        """The logical fields of a list's elements (`values`), one array each."""
        strs, ints, *others = values.flatten()
        out = {}
        flat = _items(strs)
        for i, name in enumerate(self.strs):
            out[name] = kernels.take(flat, np.arange(i, len(flat), len(self.strs)))
        matrix = _items(ints).to_numpy().reshape(-1, len(self.ints))
        for i, name in enumerate(self.ints):
            out[name] = kernels.from_numpy(matrix[:, i].astype(self.logical.field(name).type.to_pandas_dtype()))
        out.update((f.name, array) for f, array in zip(self.others, others))
        return {f.name: out[f.name] for f in self.logical}


def _items(lists: pa.FixedSizeListArray) -> pa.Array:
    """The values of `lists`, all lists one after the other (FixedSizeListArray.flatten()
    would import pyarrow.compute, see kernels.py; these lists are never null)."""
    size = lists.type.list_size
    return lists.values.slice(lists.offset * size, len(lists) * size)


PACKED = {"chunks": Packed(CHUNK_TYPE), "symbols": Packed(SYMBOL_TYPE), "refs": Packed(REF_TYPE)}

SHARD_SCHEMA = pa.schema([
    ("schema_version", pa.int32()), ("language", pa.string()), ("blob", pa.string()),
    ("size", pa.int64()), ("line_count", pa.int32()), ("text", pa.string()),
    *((name, packed.list_type) for name, packed in PACKED.items()),
    ("postings", pa.list_(POSTING_TYPE)),
])


def chunk_text(chunk: Mapping, source: bytes) -> str:
    """A decoded shard chunk's text (`source`: the file's bytes)."""
    text = chunk["text"]
    return source[chunk["start_byte"]:chunk["end_byte"]].decode("utf-8") if text is None else text


# How the shard's Parquet leaf columns are encoded (EXTRACTOR_VERSION 11). A file's postings
# repeat each term once per document it occurs in: a per-file dictionary stores it once. The
# integer leaves (counts, document numbers, lines, columns, bytes) are small or ascending:
# delta bit-packing stores them in a few bits each. The text and the symbols' and references'
# strings are zstd-compressed, every other leaf LZ4: zstd costs CPU on every byte it writes,
# and the workers' CPU is the cold build's bottleneck. On the stdlib's shards: 36.3 MB
# instead of 56.6 MB (dictionaries and deltas alone 43.2 MB, for the CPU of plain LZ4: 2.2 s
# for all shards; zstd on those strings +0.4 s): docs/benchmarks/store.md.
DICTIONARY_LEAVES = ["postings.list.element.term", "postings.list.element.doc_kind"]
DELTA_LEAVES = ["postings.list.element.doc", "postings.list.element.tf",
                *(f"{name}.list.element.int.list.element" for name in PACKED)]
ZSTD_LEAVES = ["text", "symbols.list.element.str.list.element", "refs.list.element.str.list.element",
               "postings.list.element.term"]
ZSTD_LEVEL = 5  # stdlib: 36.28 -> 33.04 MB of shards for ~0.6 s more CPU in the parse workers (zstd-1 and LZ4 term)


def leaf_paths(schema: pa.Schema) -> list[str]:
    """The Parquet leaf column paths of an Arrow schema (a fixed-size list is stored as a list)."""
    def walk(name: str, type_: pa.DataType):
        if pa.types.is_struct(type_):
            for field in type_:
                yield from walk(f"{name}.{field.name}", field.type)
        elif pa.types.is_list(type_) or pa.types.is_fixed_size_list(type_):
            yield from walk(f"{name}.list.element", type_.value_type)
        else:
            yield name
    return [leaf for field in schema for leaf in walk(field.name, field.type)]


_COMPRESSION = {leaf: "zstd" if leaf in ZSTD_LEAVES else "lz4" for leaf in leaf_paths(SHARD_SCHEMA)}


def encode_table(table: pa.Table) -> bytes:
    """A shard table's Parquet bytes (deterministic)."""
    sink = pa.BufferOutputStream()  # a BytesIO goes through a Python call per write (~0.4 ms a shard)
    # One small row group per file. LZ4 writes in ~60% of zstd-1's CPU for ~1.45x the bytes
    # (stdlib sample: 0.59 s vs 1.06 s, 19.2 MB vs 13.2 MB). (Measured again 2026-12-07 in
    # whole cold builds: zstd-3 on every leaf, 33 vs 57 MB, cost ~2 s more of ~39 s.)
    pq.write_table(table, sink, compression=_COMPRESSION, compression_level=dict.fromkeys(ZSTD_LEAVES, ZSTD_LEVEL),
                   use_dictionary=DICTIONARY_LEAVES,
                   column_encoding=dict.fromkeys(DELTA_LEAVES, "DELTA_BINARY_PACKED"),
                   write_statistics=False, store_schema=False)
    return sink.getvalue().to_pybytes()


def element_columns(column: str, values: pa.StructArray) -> dict[str, pa.Array]:
    """The fields of `values`, elements of the shard list column `column`, one array each
    (a chunk's, symbol's or reference's as in CHUNK_TYPE, SYMBOL_TYPE, REF_TYPE; its ordinal
    is its position in its list)."""
    packed = PACKED.get(column)
    if packed is not None:
        return packed.columns(values)
    return {f.name: array for f, array in zip(values.type, values.flatten())}


def decode_table(table: pa.Table) -> dict:
    """The first row of a shard table (any subset of its columns) as Python values; a list
    column's elements as dicts of their fields (chunks, symbols, refs: and `ordinal`)."""
    # Parquet stores a fixed-size list as a list: read back, it needs a cast
    table = kernels.cast_table(table, pa.schema([SHARD_SCHEMA.field(name) for name in table.column_names]))
    row = {}
    for name in table.column_names:
        column = table.column(name).slice(0, 1).combine_chunks()
        if not pa.types.is_list(column.type):
            row[name] = column[0].as_py()
            continue
        fields = {k: v.to_pylist() for k, v in element_columns(name, kernels.list_values(column)).items()}
        rows = [dict(zip(fields, values)) for values in zip(*fields.values())]
        if name in PACKED:
            rows = [{"ordinal": i, **r} for i, r in enumerate(rows)]
        row[name] = rows
    return row


def read_shard(data: bytes, columns: list[str] | None = None) -> pa.Table:
    """A shard's Parquet bytes as a table (of `columns`), as stored: decode_table casts it.
    (pq.read_table would import pyarrow.dataset and pyarrow.compute, ~60-100 ms.)"""
    return pq.ParquetFile(pa.BufferReader(data)).read(columns=columns)


def shard_text_pairs(rows: Iterable[tuple[str, str]], get: Callable[[str], bytes]) -> list[tuple[str, str]]:
    """(path, text) of (path, shard id) `rows`, in their order, each text read from its shard's
    bytes (`get(shard id)`: the store's, verified); a shard holding no text is left out. What
    reads a file's text when no resident texts hold it (the assembly keeps none: format
    ASSEMBLY_VERSION 8)."""
    out, read = [], {}
    for path, shard in rows:
        if shard not in read:
            try:
                read[shard] = read_shard(get(shard), ["text"]).column(0)[0].as_py()
            except (pa.ArrowInvalid, OSError, IndexError) as exc:
                raise StoreCorrupt(f"shard {shard[:12]} ({path}) has no readable text: {exc}",
                                   hint="run `codeagent verify`, delete the object and build again") from exc
        if read[shard] is not None:
            out.append((path, read[shard]))
    return out


def shard_texts(rows: Iterable[tuple[str, str]], get: Callable[[str], bytes]) -> pa.Table:
    """`shard_text_pairs` as an Arrow table of (path, text) rows."""
    pairs = shard_text_pairs(rows, get)
    return pa.table({"path": pa.array([p for p, _ in pairs], pa.string()),
                     "text": pa.array([t for _, t in pairs], pa.string())})


def decode_shard(data: bytes) -> dict:
    return decode_table(read_shard(data))
