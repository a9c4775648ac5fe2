"""Shard layout (format.SCHEMA_VERSION 3): chunks, symbols and refs are stored packed (one
string leaf and one integer leaf per list, shard.Packed); decoding gives back every field of
the extraction, and the assembled tables read them the same way."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from codeagent.indexer.assemble.tables import flatten
from codeagent.indexer.extract import extract
from codeagent.format.shard import (DELTA_LEAVES, DICTIONARY_LEAVES, PACKED, SHARD_SCHEMA, ZSTD_LEAVES, chunk_text,
                                    decode_shard, encode_table, leaf_paths)
from codeagent.indexer.shard import body_hash, encode_shard, shard_table, stable_ids
from codeagent.types import Extraction, Reference, Span, Symbol

GOLDEN = Path(__file__).parent / "golden"
SAMPLES = [(p.parent.name.split(".")[0], p.read_bytes()) for p in sorted(GOLDEN.glob("*/sample.*"))]


def _expected(source: bytes, language: str, ex: Extraction) -> dict[str, list[dict]]:
    """The decoded rows a shard of `ex` must give, built from the extraction's objects."""
    ids = stable_ids(ex.symbols, language)
    symbols = [{
        "ordinal": i, "kind": s.kind, "name": s.name, "qualified_name": s.qualified_name,
        "stable_id": ids[i], "signature": s.signature, "doc": s.doc, "visibility": s.visibility,
        "modifiers": list(s.modifiers), **s.span._asdict(),
        "name_line": s.name_span.start_line, "name_col": s.name_span.start_col,
        "name_end_line": s.name_span.end_line, "name_end_col": s.name_span.end_col,
        "parent": s.parent, "body_hash": s.body_hash or body_hash(source, s.span, s.name),
    } for i, s in enumerate(ex.symbols)]
    chunks = [{"ordinal": i, "kind": c.kind, "heading": c.heading, **c.span._asdict(),
               "symbol": c.symbol, "text": c.text} for i, c in enumerate(ex.chunks)]
    refs = [{"ordinal": i, "kind": r.kind, "target": r.target, "module": r.module,
             "alias": r.alias, "source": r.source, "start_line": r.span.start_line,
             "start_col": r.span.start_col, "end_line": r.span.end_line,
             "end_col": r.span.end_col} for i, r in enumerate(ex.references)]
    return {"symbols": symbols, "chunks": chunks, "refs": refs}


@pytest.mark.parametrize("language, source", SAMPLES, ids=[s[0] for s in SAMPLES])
def test_a_decoded_shard_has_every_field_of_the_extraction(language: str, source: bytes) -> None:
    ex = extract(source, language)
    data = encode_shard(source, language, "b", ex)
    assert encode_shard(source, language, "b", ex) == data
    row = decode_shard(data)
    for c in row["chunks"]:
        c["text"] = chunk_text(c, source)
    assert {k: row[k] for k in ("symbols", "chunks", "refs")} == _expected(source, language, ex)


def test_the_shard_has_few_parquet_leaf_columns() -> None:
    source = b"def f():\n    return 1\n"
    data = encode_shard(source, "python", "b", extract(source, "python"))
    assert pq.ParquetFile(pa.BufferReader(data)).metadata.num_columns == 17


def test_flattened_elements_carry_their_ordinal_and_fields() -> None:
    """`flatten` over several shards (one empty) gives each element its position in its own
    list, from the in-memory tables as from their Parquet bytes."""
    sources = [b"class A:\n    def f(self):\n        g()\n", b"", b"import os\nx = os.sep\n"]
    tables = [shard_table(s, "python", "b", extract(s, "python")) for s in sources]
    from_parquet = [pq.read_table(pa.BufferReader(encode_shard(s, "python", "b", extract(s, "python"))))
                    for s in sources]
    schema = tables[0].schema
    for shards in (pa.concat_tables(tables), pa.concat_tables(from_parquet).cast(schema)):
        for column in PACKED:
            flat = flatten(shards, column).to_pydict()
            expected = [dict(r, e=e) for e, (s, t) in enumerate(zip(sources, tables))
                        for r in _expected(s, "python", extract(s, "python"))[column]]
            if column == "chunks":
                text = [chunk_text(dict(zip(flat, v)), sources[e])
                        for e, v in zip(flat["e"], zip(*flat.values()))]
                flat["text"] = text
            got = [dict(zip(flat, values)) for values in zip(*flat.values())]
            assert got == expected, column


def test_a_symbol_with_modifiers_and_a_reference_with_a_module_round_trip() -> None:
    source = b"x = 1\n"
    span = Span(1, 0, 1, 5, 0, 5)
    ex = Extraction(symbols=[Symbol("constant", "x", "m.x", span, Span(1, 0, 1, 1, 0, 1),
                                    modifiers=("static", "final"), body_hash="h")],
                    references=[Reference("import", "os.path", span, 0, module="os", alias="p")])
    row = decode_shard(encode_shard(source, "python", "b", ex))
    assert row["symbols"][0]["modifiers"] == ["static", "final"]
    assert row["symbols"][0]["body_hash"] == "h" and row["symbols"][0]["qualified_name"] == "m.x"
    assert row["refs"] == _expected(source, "python", ex)["refs"]


def _leaf_encodings(data: bytes) -> dict[str, set[str]]:
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    return {meta.column(i).path_in_schema: set(meta.column(i).encodings) for i in range(meta.num_columns)}


def test_each_leaf_has_its_encoding_and_codec() -> None:
    """EXTRACTOR_VERSION 11: every leaf the encoder names exists, and is written that way (no
    leaf left uncompressed)."""
    source = b"class A:\n    def f(self):\n        g(1)\n        return f\n"
    data = encode_shard(source, "python", "b", extract(source, "python"))
    encodings = _leaf_encodings(data)
    for leaf in DICTIONARY_LEAVES:
        assert "RLE_DICTIONARY" in encodings[leaf], leaf
    for leaf in DELTA_LEAVES:
        assert "DELTA_BINARY_PACKED" in encodings[leaf], leaf
    assert encodings["text"] == {"PLAIN", "RLE"}
    meta = pq.ParquetFile(pa.BufferReader(data)).metadata.row_group(0)
    codecs = {meta.column(i).path_in_schema: meta.column(i).compression for i in range(meta.num_columns)}
    assert codecs == {leaf: "ZSTD" if leaf in ZSTD_LEAVES else "LZ4" for leaf in leaf_paths(SHARD_SCHEMA)}
    assert set(ZSTD_LEAVES) < set(codecs)


_WORDS = st.sampled_from(["alpha", "beta", "gamma", "délta", "x", "_y", "Zeta9", "def", "class"])


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.lists(_WORDS, max_size=6)), max_size=12))
def test_the_encodings_change_bytes_never_rows(lines: list[tuple[int, list[str]]]) -> None:
    """A shard read back (by pyarrow, and by DuckDB as the assembly reads them) holds the rows
    it holds plainly encoded: postings, lines and columns of any shape."""
    import duckdb

    source = "".join("    " * depth + " ".join(words) + "\n" for depth, words in lines).encode()
    table = shard_table(source, "python", "b", extract(source, "python"))
    plain = pa.BufferOutputStream()
    pq.write_table(table, plain, use_dictionary=False, compression="none")
    plain_bytes = plain.getvalue().to_pybytes()
    data = encode_table(table)
    assert decode_shard(data) == decode_shard(plain_bytes)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "a.parquet").write_bytes(data)
        Path(tmp, "b.parquet").write_bytes(plain_bytes)
        con = duckdb.connect()
        a, b = (con.sql(f"SELECT * FROM read_parquet('{tmp}/{n}.parquet')").to_arrow_table() for n in "ab")
        con.close()
    assert a.equals(b)


_INT32 = st.integers(-(2 ** 31), 2 ** 31 - 1)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(_INT32, _INT32, _INT32, _INT32, _INT32), max_size=40))
def test_delta_packed_integers_of_any_value_round_trip(values: list[tuple[int, ...]]) -> None:
    """The delta bit-packed leaves hold any integer a field may take (negative, extreme,
    unordered), not only the small ascending ones they are chosen for."""
    source = b"x = 1\n"
    refs = [Reference("call", f"t{i}", Span(a, b, c, d, 0, 0), s) for i, (s, a, b, c, d) in enumerate(values)]
    row = decode_shard(encode_shard(source, "python", "b", Extraction(references=refs)))
    assert [(r["source"], r["start_line"], r["start_col"], r["end_line"], r["end_col"]) for r in row["refs"]] == values
