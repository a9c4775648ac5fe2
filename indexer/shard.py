"""The shard encoder: one file's bytes and extraction as a SHARD_SCHEMA table (the codec and
its schema are the format's: codeagent/format/shard.py).

Pure: the same input always yields the same table, hence the same shard bytes and object id.
"""

from __future__ import annotations

from collections import Counter
from itertools import chain

import numpy as np
import pyarrow as pa

from .. import kernels
from ..format import SCHEMA_VERSION
from ..format.shard import PACKED, SHARD_SCHEMA, SYMBOL_TYPE, encode_table
from ..hashing import hash_bytes, short_id
from ..types import Chunk, Extraction, Reference, Span, Symbol
from .postings import body_pieces, postings_array


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
    and sliced (a conversion costs ~4 us of fixed cost)."""
    arrays = {}
    for names, dtype, type_ in groups:
        values = chain.from_iterable(columns[name] for name in names)
        if dtype is None:
            array = pa.array(list(values), type_)
        else:
            array = kernels.from_numpy(np.fromiter(values, dtype, n * len(names)))
        arrays.update((name, array.slice(i * n, n)) for i, name in enumerate(names))
    return arrays


_SCALARS = list(SHARD_SCHEMA)[:6]
_SCALAR_GROUPS = _type_groups(_SCALARS)
_MODIFIERS = SYMBOL_TYPE.field("modifiers").type


def _symbols(source: bytes, language: str, symbols: list[Symbol]) -> pa.Array:
    ids = stable_ids(symbols, language)
    hashes = [s.body_hash or body_hash(source, s.span, s.name) for s in symbols]
    return PACKED["symbols"].build(
        len(symbols),
        chain.from_iterable((s.kind, s.name, s.qualified_name, i, s.signature, s.doc,
                             s.visibility, h) for s, i, h in zip(symbols, ids, hashes)),
        chain.from_iterable(s.span + s.name_span[:4] + (s.parent,) for s in symbols),
        pa.array([s.modifiers for s in symbols], _MODIFIERS))


def _chunks(source: bytes, chunks: list[Chunk]) -> pa.Array:
    return PACKED["chunks"].build(
        len(chunks),
        chain.from_iterable(
            (c.kind, c.heading,
             None if c.text.encode("utf-8") == source[c.span.start_byte:c.span.end_byte] else c.text)
            for c in chunks),
        chain.from_iterable(c.span + (c.symbol,) for c in chunks))


def _refs(refs: list[Reference]) -> pa.Array:
    return PACKED["refs"].build(
        len(refs), chain.from_iterable((r.kind, r.target, r.module, r.alias) for r in refs),
        chain.from_iterable((r.source, *r.span[:4]) for r in refs))


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
