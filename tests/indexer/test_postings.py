"""BM25 documents of a shard: a symbol's document is its own text, without its children's."""

from __future__ import annotations

from collections import Counter

from codeagent.indexer.extract import extract
from codeagent.indexer.shard import decode_shard, encode_shard, symbol_documents
from codeagent.tokenize import term_frequencies, tokenize

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

    from codeagent.indexer.assemble import SCHEMA_SQL, _insert_entries
    from codeagent.indexer.build import BuildOptions, build
    from codeagent.indexer.parse import parse_bytes
    from codeagent.indexer.shard import table_from_ipc
    from codeagent.manifest import load_manifest
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
        con.execute(SCHEMA_SQL)
        _insert_entries(con, store, entries, tables if with_tables else None)
        out = {}
        for t in ("files", "chunks", "symbols", "refs", "postings", "docs"):
            out[t] = con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall()
        con.close()
        return out

    from_tables, from_parquet = rows(True), rows(False)
    assert from_parquet["symbols"] and from_parquet["refs"] and from_parquet["postings"]
    assert from_tables == from_parquet
