"""Shards: one file's extraction serialised as a one-row Parquet object (schema in format.py).

Pure: `encode_shard` turns bytes + Extraction into Parquet bytes deterministically; the same
input always yields the same bytes, hence the same object id.
"""

from __future__ import annotations

import io
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from ..format import SCHEMA_VERSION
from ..hashing import hash_bytes, short_id
from ..types import Extraction, Span, Symbol
from .postings import body_pieces, postings_array

_SPAN_FIELDS = [
    ("start_line", pa.int32()), ("start_col", pa.int32()), ("end_line", pa.int32()),
    ("end_col", pa.int32()), ("start_byte", pa.int64()), ("end_byte", pa.int64()),
]

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


def _span(s: Span) -> dict:
    return {"start_line": s.start_line, "start_col": s.start_col, "end_line": s.end_line,
            "end_col": s.end_col, "start_byte": s.start_byte, "end_byte": s.end_byte}


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


def shard_row(source: bytes, language: str, blob: str, extraction: Extraction) -> dict:
    text = source.decode("utf-8")
    ids = stable_ids(extraction.symbols, language)
    symbols = []
    for i, (s, sid) in enumerate(zip(extraction.symbols, ids)):
        symbols.append({
            "ordinal": i, "kind": s.kind, "name": s.name, "qualified_name": s.qualified_name,
            "stable_id": sid, "signature": s.signature, "doc": s.doc, "visibility": s.visibility,
            "modifiers": list(s.modifiers), **_span(s.span),
            "name_line": s.name_span.start_line, "name_col": s.name_span.start_col,
            "name_end_line": s.name_span.end_line, "name_end_col": s.name_span.end_col,
            "parent": s.parent, "body_hash": s.body_hash or body_hash(source, s.span, s.name),
        })
    chunks = [{"ordinal": i, "kind": c.kind, "heading": c.heading, **_span(c.span),
               "symbol": c.symbol, "text": c.text} for i, c in enumerate(extraction.chunks)]
    refs = [{"ordinal": i, "kind": r.kind, "target": r.target, "module": r.module,
             "alias": r.alias, "source": r.source, "start_line": r.span.start_line,
             "start_col": r.span.start_col, "end_line": r.span.end_line,
             "end_col": r.span.end_col} for i, r in enumerate(extraction.references)]
    return {
        "schema_version": SCHEMA_VERSION, "language": language, "blob": blob,
        "size": len(source), "line_count": text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        "text": text, "chunks": chunks, "symbols": symbols, "refs": refs,
    }


def shard_table(source: bytes, language: str, blob: str, extraction: Extraction) -> pa.Table:
    """The shard as a one-row Arrow table (SHARD_SCHEMA)."""
    row = shard_row(source, language, blob, extraction)
    columns = {name: pa.array([row[name]], SHARD_SCHEMA.field(name).type)
               for name in SHARD_SCHEMA.names if name != "postings"}
    columns["postings"] = _postings(extraction, source)
    return pa.Table.from_pydict(columns, schema=SHARD_SCHEMA)


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
    sink = io.BytesIO()
    # One small row group per file: dictionaries and zstd's higher levels cost CPU per
    # column chunk and gain nothing at this size.
    pq.write_table(table, sink, compression="zstd", compression_level=1, use_dictionary=False,
                   write_statistics=False, store_schema=False)
    return sink.getvalue()


def decode_shard(data: bytes) -> dict:
    return pq.read_table(pa.BufferReader(data)).to_pylist()[0]
