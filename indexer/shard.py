"""Shards: one file's extraction serialised as a one-row Parquet object (schema in format.py).

Pure: `encode_shard` turns bytes + Extraction into Parquet bytes deterministically; the same
input always yields the same bytes, hence the same object id.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..format import SCHEMA_VERSION
from ..hashing import hash_bytes, short_id
from ..types import Chunk, Extraction, Reference, Span, Symbol
from .postings import body_pieces, one_list, postings_array

_SPAN_FIELDS = [
    ("start_line", pa.int32()), ("start_col", pa.int32()), ("end_line", pa.int32()),
    ("end_col", pa.int32()), ("start_byte", pa.int64()), ("end_byte", pa.int64()),
]

# A chunk's text is NULL when it is exactly the file's text from start_byte to end_byte (code
# chunks, line windows): `chunk_text` (rows) and format.CHUNK_TEXT_SQL (the
# assembled chunks table) restore it.
CHUNK_TYPE = pa.struct([
    ("ordinal", pa.int32()), ("kind", pa.string()), ("heading", pa.string()),
    *_SPAN_FIELDS, ("symbol", pa.int32()), ("text", pa.string()),
])
SYMBOL_TYPE = pa.struct([
    ("ordinal", pa.int32()), ("kind", pa.string()), ("name", pa.string()),
    ("qualified_name", pa.string()), ("stable_id", pa.string()), ("signature", pa.string()),
    ("doc", pa.string()), ("visibility", pa.string()), ("modifiers", pa.list_(pa.string())),
    *_SPAN_FIELDS,
    ("name_line", pa.int32()), ("name_col", pa.int32()), ("name_end_line", pa.int32()),
    ("name_end_col", pa.int32()), ("parent", pa.int32()), ("body_hash", pa.string()),
])
REF_TYPE = pa.struct([
    ("ordinal", pa.int32()), ("kind", pa.string()), ("target", pa.string()),
    ("module", pa.string()), ("alias", pa.string()), ("source", pa.int32()),
    ("start_line", pa.int32()), ("start_col", pa.int32()), ("end_line", pa.int32()),
    ("end_col", pa.int32()),
])
# BM25 term statistics of each document in the file: doc_kind "s" = symbol, "c" = chunk.
POSTING_TYPE = pa.struct([
    ("doc_kind", pa.string()), ("doc", pa.int32()), ("term", pa.string()), ("tf", pa.int32()),
])

SHARD_SCHEMA = pa.schema([
    ("schema_version", pa.int32()), ("language", pa.string()), ("blob", pa.string()),
    ("size", pa.int64()), ("line_count", pa.int32()), ("text", pa.string()),
    ("chunks", pa.list_(CHUNK_TYPE)), ("symbols", pa.list_(SYMBOL_TYPE)),
    ("refs", pa.list_(REF_TYPE)), ("postings", pa.list_(POSTING_TYPE)),
])


def stable_ids(symbols: list[Symbol], language: str) -> list[str]:
    """Location-insensitive ids: language + qualified name + kind, plus the signature (then
    an occurrence number) only where needed to tell same-named symbols of one file apart."""
    base = [(s.qualified_name, s.kind) for s in symbols]
    counts = Counter(base)
    seen: Counter[tuple] = Counter()
    out = []
    for s, key in zip(symbols, base):
        parts = ["sym", language, s.kind, s.qualified_name]
        if counts[key] > 1:
            parts.append(s.signature)
            full = (key, s.signature)
            seen[full] += 1
            if seen[full] > 1:
                parts.append(str(seen[full]))
        out.append(short_id(*parts, length=20))
    return out


def body_hash(source: bytes, span: Span, name: str) -> str:
    """Hash of a definition's body with whitespace folded and its own name blanked, so a
    rename or re-indent leaves it unchanged."""
    body = source[span.start_byte:span.end_byte].decode("utf-8", "replace")
    if name:
        body = body.replace(name, "\x00")
    return hash_bytes(" ".join(body.split()).encode("utf-8"))[:20]


def symbol_documents(symbols: list[Symbol], source: bytes) -> list[str]:
    """Each symbol's BM25 document: name, qualified name, signature, doc and its own body with
    its child symbols' spans cut out (they are documents of their own), so a class's methods
    are neither tokenised again nor counted twice."""
    docs = []
    for sym, pieces in zip(symbols, body_pieces(symbols)):
        body = b"\n".join(source[a:b] for a, b in pieces).decode("utf-8", "replace")
        docs.append("\n".join((sym.name, sym.qualified_name, sym.signature, sym.doc, body)))
    return docs


def _postings(extraction: Extraction, source: bytes) -> pa.Array:
    """The file's postings as one list<struct> value (postings.py; they are the bulk)."""
    return postings_array(extraction, source, SHARD_SCHEMA.field("postings").type)


def _type_groups(fields: list[pa.Field]) -> list[tuple[list[str], type | None, pa.DataType]]:
    """The fields' names by type, with the numpy dtype of an integer type (for `_arrays`)."""
    groups: dict[pa.DataType, list[str]] = {}
    for f in fields:
        groups.setdefault(f.type, []).append(f.name)
    return [(names, type_.to_pandas_dtype() if pa.types.is_integer(type_) else None, type_)
            for type_, names in groups.items()]


def _arrays(groups: list[tuple[list[str], type | None, pa.DataType]], columns: dict[str, list],
            n: int) -> dict[str, pa.Array]:
    """Arrow arrays of n-value columns: the columns of each type are converted in one call
    and sliced (a conversion costs ~4 us of fixed cost, and a shard has ~50 columns)."""
    arrays = {}
    for names, dtype, type_ in groups:
        values = chain.from_iterable(columns[name] for name in names)
        if dtype is None:
            array = pa.array(list(values), type_)
        else:
            array = pa.array(np.fromiter(values, dtype, n * len(names)))
        arrays.update((name, array.slice(i * n, n)) for i, name in enumerate(names))
    return arrays


class _StructList:
    """How to build one list<struct> column of SHARD_SCHEMA from the struct's columns."""

    def __init__(self, field: str) -> None:
        self.list_type = SHARD_SCHEMA.field(field).type
        struct_type = self.list_type.value_type
        self.names = [f.name for f in struct_type]
        self.groups = _type_groups(list(struct_type))

    def build(self, columns: dict[str, list]) -> pa.Array:
        n = len(columns["ordinal"])
        arrays = _arrays(self.groups, columns, n)
        return one_list(self.list_type, [arrays[name] for name in self.names])


_STRUCT_LISTS = {field: _StructList(field) for field in ("chunks", "symbols", "refs")}
_SCALARS = list(SHARD_SCHEMA)[:6]
_SCALAR_GROUPS = _type_groups(_SCALARS)


def _list_of(field: str, columns: dict[str, list]) -> pa.Array:
    """One list<struct> value from the struct's columns (cheaper than a list of dicts)."""
    return _STRUCT_LISTS[field].build(columns)


def _span_columns(spans: list[Span], prefix: str = "", bytes_: bool = True) -> dict[str, list]:
    out = {f"{prefix}start_line": [s.start_line for s in spans],
           f"{prefix}start_col": [s.start_col for s in spans],
           f"{prefix}end_line": [s.end_line for s in spans],
           f"{prefix}end_col": [s.end_col for s in spans]}
    if bytes_:
        out["start_byte"] = [s.start_byte for s in spans]
        out["end_byte"] = [s.end_byte for s in spans]
    return out


def _symbols(source: bytes, language: str, symbols: list[Symbol]) -> pa.Array:
    names = _span_columns([s.name_span for s in symbols], "name_", bytes_=False)
    return _list_of("symbols", {
        "ordinal": list(range(len(symbols))), "kind": [s.kind for s in symbols],
        "name": [s.name for s in symbols], "qualified_name": [s.qualified_name for s in symbols],
        "stable_id": stable_ids(symbols, language), "signature": [s.signature for s in symbols],
        "doc": [s.doc for s in symbols], "visibility": [s.visibility for s in symbols],
        "modifiers": [list(s.modifiers) for s in symbols], **_span_columns([s.span for s in symbols]),
        "name_line": names["name_start_line"], "name_col": names["name_start_col"],
        "name_end_line": names["name_end_line"], "name_end_col": names["name_end_col"],
        "parent": [s.parent for s in symbols],
        "body_hash": [s.body_hash or body_hash(source, s.span, s.name) for s in symbols],
    })


def _chunks(source: bytes, chunks: list[Chunk]) -> pa.Array:
    spans = [c.span for c in chunks]
    return _list_of("chunks", {
        "ordinal": list(range(len(chunks))), "kind": [c.kind for c in chunks],
        "heading": [c.heading for c in chunks], **_span_columns(spans),
        "symbol": [c.symbol for c in chunks],
        "text": [None if c.text.encode("utf-8") == source[s.start_byte:s.end_byte] else c.text
                 for c, s in zip(chunks, spans)],
    })


def chunk_text(chunk: Mapping, source: bytes) -> str:
    """A decoded shard chunk's text (`source`: the file's bytes)."""
    text = chunk["text"]
    return source[chunk["start_byte"]:chunk["end_byte"]].decode("utf-8") if text is None else text


def _refs(refs: list[Reference]) -> pa.Array:
    return _list_of("refs", {
        "ordinal": list(range(len(refs))), "kind": [r.kind for r in refs],
        "target": [r.target for r in refs], "module": [r.module for r in refs],
        "alias": [r.alias for r in refs], "source": [r.source for r in refs],
        **_span_columns([r.span for r in refs], bytes_=False),
    })


def shard_table(source: bytes, language: str, blob: str, extraction: Extraction) -> pa.Table:
    """The shard as a one-row Arrow table (SHARD_SCHEMA), built column by column."""
    text = source.decode("utf-8")
    line_count = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    scalars = {"schema_version": SCHEMA_VERSION, "language": language, "blob": blob,
               "size": len(source), "line_count": line_count, "text": text}
    arrays = _arrays(_SCALAR_GROUPS, {name: [value] for name, value in scalars.items()}, 1)
    columns = [arrays[f.name] for f in _SCALARS]
    columns += [_chunks(source, extraction.chunks), _symbols(source, language, extraction.symbols),
                _refs(extraction.references), _postings(extraction, source)]
    return pa.Table.from_arrays(columns, schema=SHARD_SCHEMA)


def encode_shard(source: bytes, language: str, blob: str, extraction: Extraction) -> bytes:
    return encode_table(shard_table(source, language, blob, extraction))


def table_to_ipc(table: pa.Table) -> bytes:
    """Arrow IPC stream bytes: ~10x cheaper to pass between processes than a pickled table."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def table_from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def encode_table(table: pa.Table) -> bytes:
    """A shard table's Parquet bytes (deterministic)."""
    sink = pa.BufferOutputStream()  # a BytesIO goes through a Python call per write (~0.4 ms a shard)
    # One small row group per file: dictionaries cost CPU per column chunk and gain nothing
    # at this size. LZ4 writes in ~60% of zstd-1's CPU for ~1.45x the bytes (stdlib sample:
    # 0.59 s vs 1.06 s, 19.2 MB vs 13.2 MB): workers' CPU is the cold build's bottleneck.
    pq.write_table(table, sink, compression="lz4", use_dictionary=False,
                   write_statistics=False, store_schema=False)
    return sink.getvalue().to_pybytes()


def decode_shard(data: bytes) -> dict:
    return pq.read_table(pa.BufferReader(data)).to_pylist()[0]
