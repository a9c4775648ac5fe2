"""BM25 documents of a shard: a symbol's document is its own text, without its children's."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from codeagent.indexer.extract import extract
from codeagent.format.shard import decode_shard
from codeagent.indexer.shard import encode_shard, symbol_documents
from codeagent.tokenize import term_frequencies, tokenize
from codeagent.types import Chunk, Extraction, Span, Symbol

SOURCE = b'''class Parser:
    """Reads configuration."""

    limit = 10

    def parse_header(self, raw):
        return raw.split(b"headerword")

    @staticmethod
    def parse_body(raw):
        return bodyword(raw)


def helper():
    return Parser().parse_header(b"")
'''


def _docs() -> dict[str, str]:
    ex = extract(SOURCE, "python")
    return {s.qualified_name: d for s, d in zip(ex.symbols, symbol_documents(ex.symbols, SOURCE))}


def test_class_document_leaves_out_its_members_bodies() -> None:
    docs = _docs()
    assert "Reads configuration" in docs["Parser"]
    assert "headerword" not in docs["Parser"] and "bodyword" not in docs["Parser"]
    assert "headerword" in docs["Parser.parse_header"]
    assert "bodyword" in docs["Parser.parse_body"] and "staticmethod" in docs["Parser.parse_body"]
    assert "parse_header" in docs["helper"]


def test_each_body_term_is_posted_once_per_symbol_tree() -> None:
    """Summed over the symbol documents, a body word counts as often as it occurs."""
    ex = extract(SOURCE, "python")
    row = decode_shard(encode_shard(SOURCE, "python", "b", ex))
    symbol_tf = Counter()
    for p in row["postings"]:
        if p["doc_kind"] == "s":
            symbol_tf[p["term"]] += p["tf"]
    assert symbol_tf["headerword"] == SOURCE.count(b"headerword")
    assert symbol_tf["bodyword"] == SOURCE.count(b"bodyword")


def test_term_frequencies_match_tokenize() -> None:
    text = "parseHTTPResponse_v2 parse parse_http x 42 __init__ HTTPResponse"
    assert term_frequencies(text) == Counter(tokenize(text))


def test_assembly_from_worker_tables_equals_assembly_from_parquet(git_repo) -> None:
    """A cold build hands new shards to the assembly as Arrow tables; the rows must be those
    that reading the stored Parquet gives."""
    import duckdb

    from codeagent.format.assembly import TABLES_SQL
    from codeagent.indexer.assemble.pipeline import insert_entries
    from codeagent.indexer.build import BuildOptions, build
    from codeagent.indexer.parse import parse_bytes
    from codeagent.indexer.shard import table_from_ipc
    from codeagent.format.manifest import load_manifest
    from codeagent.store import Store

    git_repo.write_many({"pkg/a.py": SOURCE.decode(), "pkg/b.py": "def f():\n    return g()\n",
                         "copy.py": SOURCE.decode(), "notes.md": "# Title\n\ntext words\n"})
    git_repo.commit("files")
    result = build(BuildOptions(repo=git_repo.path))
    store = Store(git_repo.path / ".codeagent")
    entries = list(load_manifest(store, result.manifest_id).files)
    tables = {}
    for e in entries:
        res = parse_bytes((git_repo.path / e.path).read_bytes(), e.language, e.blob)
        tables[e.shard] = table_from_ipc(res.table)

    def rows(with_tables: bool) -> dict[str, list]:
        con = duckdb.connect()
        con.execute(TABLES_SQL)
        insert_entries(con, store, entries, tables if with_tables else None)
        out = {}
        for t in ("files", "chunks", "symbols", "refs", "postings", "docs"):
            out[t] = con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
        con.close()
        return out

    from_tables, from_parquet = rows(True), rows(False)
    assert from_parquet["symbols"] and from_parquet["refs"] and from_parquet["postings"]
    assert from_tables == from_parquet


def _reference_postings(ex, source: bytes) -> list[tuple[str, int, str, int]]:
    """The postings' definition: each document's text through `term_counts`, sorted."""
    from codeagent.tokenize import term_counts

    texts = [("s", i, d) for i, d in enumerate(symbol_documents(ex.symbols, source))]
    texts += [("c", i, f"{c.heading}\n{c.text}" if c.heading else c.text)
              for i, c in enumerate(ex.chunks)]
    return [(kind, i, term, tf) for kind, i, text in texts
            for term, tf in sorted(term_counts(text).items())]


def _postings_rows(ex, source: bytes) -> list[tuple[str, int, str, int]]:
    row = decode_shard(encode_shard(source, "x", "b", ex))
    return [(p["doc_kind"], p["doc"], p["term"], p["tf"]) for p in row["postings"]]


GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("language", sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()))
def test_postings_equal_tokenising_each_document(language: str) -> None:
    source = next(p for p in (GOLDEN / language).iterdir() if p.name.startswith("sample.")).read_bytes()
    language = language.split(".")[0]
    for variant in (source, source[: len(source) // 2], "é_x1y 2ab ".encode() + source):
        variant = variant.decode("utf-8", "ignore").encode()
        ex = extract(variant, language)
        assert _postings_rows(ex, variant) == _reference_postings(ex, variant)


_WORDY = st.text(alphabet=st.sampled_from("aZ_09 .\n(é€)x"), max_size=60)


@given(st.lists(_WORDY, min_size=1, max_size=6), st.data())
@settings(max_examples=60, deadline=None)
def test_postings_equal_tokenising_when_ranges_cut_words(parts: list[str], data) -> None:
    """Spans that cut words, or chunk texts that are not the source's bytes, still give each
    document's own tokens."""
    source = "".join(parts).encode()
    n = len(source)
    cut = sorted(data.draw(st.lists(st.integers(0, n), min_size=4, max_size=4)))
    outer = Span(1, 0, 1, 0, cut[0], cut[3])
    inner = Span(1, 0, 1, 0, cut[1], cut[2])
    symbols = [Symbol("class", "Outer1", "Outer1", outer, outer, signature="class Outer1(x9)"),
               Symbol("method", "in", "Outer1.in", inner, inner, parent=0, doc="Doc é")]
    chunks = [Chunk("code", outer, source[cut[0]:cut[3]].decode("utf-8", "replace")),
              Chunk("doc_section", inner, data.draw(_WORDY), heading="A > bB")]
    ex = Extraction(symbols=symbols, chunks=chunks)
    assert _postings_rows(ex, source) == _reference_postings(ex, source)


@given(st.binary(max_size=80) | _WORDY.map(str.encode))
@settings(max_examples=200, deadline=None)
def test_word_scan_is_the_tokenizer_regex(data: bytes) -> None:
    from codeagent.indexer.postings import _scan
    from codeagent.tokenize import _WORD

    starts, ends, words = _scan(data)
    expected = [m.span() for m in re.finditer(_WORD.pattern.encode(), data)]
    assert list(zip(starts.tolist(), ends.tolist())) == expected
    assert words.to_pylist() == [data[a:b] for a, b in expected]
