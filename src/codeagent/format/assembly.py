"""The assembled DuckDB file: its tables (DDL), their versions, and the readers' check.

One file per manifest, `assembled/<manifest id>/index.duckdb`, written by indexer/assemble/
and read by query/. Tables (TABLES_SQL): meta, files, chunks, symbols, refs, term_postings
(per-path rows copied from shards; a chunk's text is NULL when it is a slice of its file's
text, which is kept by the shard and the resident texts, not here: version 8; term_postings is
kept sorted by term) plus docs (BM25 document lengths,
per path too); postings, term_df and corpus are views (BM25 corpus statistics, always those
of this manifest, so an incremental build never recomputes them). Then the symbol graph
(GRAPH_TABLES_SQL): edges, modules, symbol_names (fq_name per symbol_id), import_bindings.

  edges(src_id, src_path, src_line, dst_id, dst_path, kind, confidence, target)
    kind: calls | references | imports | inherits | implements | overrides | contains
    confidence: exact (resolved through scope/imports) | name (matched by name only)
    src_id NULL for file-level uses; dst_id NULL when only a file (dst_path) is known.

meta holds manifest_id, ref, commit, source, schema_version, extractor_version,
assembly_version, graph_version, embedder_id, counts and postings_tail_rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

# Layout of the per-manifest DuckDB file; not part of shard keys. A previous assembly of
# another version is never used as the base of an incremental one.
#   1: docs/term_df/corpus as tables recomputed per manifest.
#   2: docs per path; term_df and corpus views (incremental builds never recompute them).
#   3: term_postings(term, path, doc_kind, doc, tf, length) sorted by term replaces postings
#      (now a view): BM25 reads only its terms' row groups; incremental builds append a
#      sorted tail, re-sorted past 15% of the table (meta postings_tail_rows).
#   4: refs carry tkey/head/last (the target's separator-neutral key and its first and last
#      segments), computed once at insert instead of on every graph update.
#   5: chunks.text is NULL when the chunk is its file's bytes start_byte..end_byte (as in the
#      shards): the text is not stored twice.
#   6: files.role: what the file is for (codeagent.roles: source, test, mock, docs...), from
#      its path and first lines; search ranks by it and filters on it.
#   7: files.role: a Python module named `*_spec` is source, not a test.
#   8: no files.text (the texts' second copy, 6.55 MB of the stdlib's 72 MB): readers take a
#      file's text from the resident texts (format/texts.py), or from its shard (files.shard).
ASSEMBLY_VERSION = 8

TABLES_SQL = """
CREATE TABLE meta(key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE files(path VARCHAR, blob VARCHAR, size BIGINT, language VARCHAR, status VARCHAR,
    reason VARCHAR, shard VARCHAR, line_count INTEGER, role VARCHAR);
CREATE TABLE chunks(path VARCHAR, ordinal INTEGER, kind VARCHAR, heading VARCHAR,
    start_line INTEGER, start_col INTEGER, end_line INTEGER, end_col INTEGER,
    start_byte BIGINT, end_byte BIGINT, symbol INTEGER, text VARCHAR);
CREATE TABLE symbols(path VARCHAR, language VARCHAR, ordinal INTEGER, symbol_id VARCHAR,
    stable_id VARCHAR, kind VARCHAR, name VARCHAR, qualified_name VARCHAR, signature VARCHAR,
    doc VARCHAR, visibility VARCHAR, modifiers VARCHAR[], start_line INTEGER, start_col INTEGER,
    end_line INTEGER, end_col INTEGER, start_byte BIGINT, end_byte BIGINT, name_line INTEGER,
    name_col INTEGER, name_end_line INTEGER, name_end_col INTEGER, parent INTEGER,
    parent_id VARCHAR, body_hash VARCHAR);
CREATE TABLE refs(path VARCHAR, language VARCHAR, ordinal INTEGER, kind VARCHAR, target VARCHAR,
    module VARCHAR, alias VARCHAR, source INTEGER, source_id VARCHAR, start_line INTEGER,
    start_col INTEGER, end_line INTEGER, end_col INTEGER, tkey VARCHAR, head VARCHAR,
    last VARCHAR);
CREATE TABLE term_postings(term VARCHAR, path VARCHAR, doc_kind VARCHAR, doc INTEGER, tf INTEGER,
    length INTEGER);
CREATE TABLE docs(path VARCHAR, doc_kind VARCHAR, doc INTEGER, length INTEGER);
CREATE VIEW postings AS SELECT path, doc_kind, doc, term, tf FROM term_postings;
CREATE VIEW term_df AS SELECT term, count(*)::INTEGER AS df FROM term_postings GROUP BY term;
CREATE VIEW corpus AS SELECT count(*)::BIGINT AS n_docs, coalesce(avg(length), 0)::DOUBLE AS avgdl
    FROM docs;
"""

# The symbol graph's tables (indexer/assemble/graph.py maintains them); bump when a persisted
# table or column meaning changes: the next assembly recomputes them all. Stored in
# graph_version(version) and in meta.
#   1: symbol_names and import_bindings persisted; edges recomputed incrementally from the
#      assembly's delta tables.
#   2: include/require imports (C, C++, Ruby) link to repository files; no empty-module fallback.
#   3: symbol_names.encl_class (the enclosing class, one join less per reference); the unused
#      dir column dropped.
#   4: encl_class also counts Rust impl blocks.
#   5: of equally ranked exact targets, and of name-matched copies of one definition, only those
#      nearest the referencing file (edges differ where a repository holds a package twice).
GRAPH_VERSION = 5

GRAPH_TABLES_SQL = f"""
CREATE OR REPLACE TABLE graph_version AS SELECT {GRAPH_VERSION} AS version;
CREATE OR REPLACE TABLE symbol_names(symbol_id VARCHAR, path VARCHAR, module VARCHAR,
    fq_name VARCHAR, fq_key VARCHAR, name VARCHAR, kind VARCHAR, language VARCHAR, qkey VARCHAR,
    parent_id VARCHAR, parent_kind VARCHAR, start_line INTEGER, encl_class VARCHAR);
CREATE OR REPLACE TABLE modules(path VARCHAR, language VARCHAR, module VARCHAR,
    package VARCHAR, sep VARCHAR, declared BOOLEAN);
CREATE OR REPLACE TABLE import_bindings(path VARCHAR, ordinal INTEGER, local VARCHAR,
    fq_key VARCHAR, mkey VARCHAR, file VARCHAR);
CREATE OR REPLACE TABLE edges(src_id VARCHAR, src_path VARCHAR, src_line INTEGER, dst_id VARCHAR,
    dst_path VARCHAR, kind VARCHAR, confidence VARCHAR, target VARCHAR);
"""


def sql_literals(values: Iterable[str]) -> str:
    """`'a', 'b'`: values inlined as SQL string literals (so DuckDB can prune row groups on
    them, which a parameter list does not allow; and for paths in ATTACH or SET)."""
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def version_problem(meta: Mapping[str, str]) -> str | None:
    """Why a reader of this codeagent cannot read an assembly with this `meta`, or None."""
    for key, want in (("assembly_version", ASSEMBLY_VERSION), ("graph_version", GRAPH_VERSION)):
        have = meta.get(key)
        if have != str(want):
            return f"index {key.replace('_', ' ')} {have}, this codeagent reads {want}"
    return None
