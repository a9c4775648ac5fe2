"""Assemble a manifest's shards into one DuckDB file, keyed by the manifest id.

The assembled directory is built under the store's tmp/ and renamed into
`assembled/<manifest id>/` only when complete, so a reader following a ref never finds it
missing or half-written. When the previous manifest of the ref is assembled, its database
is copied and only the changed paths are replaced.

Tables (ASSEMBLY_VERSION 3): meta, files, chunks, symbols, refs, term_postings (per-path
rows copied from shards; term_postings is kept sorted by term, see format.py) plus docs (BM25
document lengths, per path too); postings, term_df and corpus are views (BM25 corpus
statistics, always those of this manifest, so an incremental build never recomputes them); then derived per manifest by DERIVED_STEPS: edges, modules, symbol_names
(fq_name per symbol_id), import_bindings (the symbol graph; `graph.py` documents them).
During the steps two temp tables name what changed: delta_removed(path) and
delta_added(path); a step may use them to work incrementally (on a full assembly every path
is in delta_added and delta_removed is empty).

  edges(src_id, src_path, src_line, dst_id, dst_path, kind, confidence, target)
    kind: calls | references | imports | inherits | implements | overrides | contains
    confidence: exact (resolved through scope/imports) | name (matched by name only)
    src_id NULL for file-level uses; dst_id NULL when only a file (dst_path) is known.

The query side reads this layout and nothing else.
"""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

from .. import format as fmt
from ..manifest import FileEntry, Manifest
from ..errors import StoreCorrupt
from ..plugins import import_optional
from ..store import Store, complete_marker, write_assembly_sums
from .graph_sql import target_key

PER_PATH_TABLES = ("files", "chunks", "symbols", "refs", "term_postings", "docs")
# The appended (unsorted) tail of term_postings may grow to this fraction of the table before
# an incremental assembly re-sorts it.
POSTINGS_TAIL_FRACTION = 0.15
# An incremental assembly commits to DuckDB's WAL and skips the CHECKPOINT (which rewrites
# every row group it touched: the files table's text is one ZSTD row group, ~0.3 s on the
# stdlib) until the WAL, copied along from assembly to assembly, passes this size. Every
# open replays the WAL (~20 ms CPU per MB), so the limit trades that against the checkpoint;
# a body edit of one stdlib file adds ~0.3 MB.
WAL_MAX_BYTES = 4 << 20

SCHEMA_SQL = """
CREATE TABLE meta(key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE TABLE files(path VARCHAR, blob VARCHAR, size BIGINT, language VARCHAR, status VARCHAR,
    reason VARCHAR, shard VARCHAR, line_count INTEGER, text VARCHAR);
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

# symbol_id: row identity inside a manifest, stable while the symbol stays at its path.
_SYMBOL_ID_SQL = "substr(md5(m.path || chr(0) || s.stable_id), 1, 16)"

DerivedStep = Callable[["object", Manifest], None]
DERIVED_STEPS: list[DerivedStep] = []
ArtifactStep = Callable[[Store, Manifest, str, Path, "Path | None"], None]
# Extra artifacts written into the assembled directory (e.g. the ANN index):
# step(store, manifest, manifest_id, work_dir, previous_assembled_dir).
ARTIFACT_STEPS: list[ArtifactStep] = []


def derived_step(fn: DerivedStep) -> DerivedStep:
    DERIVED_STEPS.append(fn)
    return fn


def artifact_step(fn: ArtifactStep) -> ArtifactStep:
    ARTIFACT_STEPS.append(fn)
    return fn


# Modules that register more steps with @derived_step / @artifact_step when imported
# (the symbol graph, the ANN index). Missing ones are skipped.
STEP_MODULES = ("codeagent.indexer.graph", "codeagent.indexer.ann")


def _load_step_modules() -> None:
    import_optional(STEP_MODULES)


def _changed_paths(old: Manifest | None, new: Manifest) -> tuple[set[str], list[FileEntry]]:
    """(paths whose rows must go, entries whose rows must be inserted)."""
    if old is None:
        return set(), list(new.files)
    old_by_path = {f.path: f for f in old.files}
    new_by_path = {f.path: f for f in new.files}
    remove = {p for p, f in old_by_path.items() if new_by_path.get(p) != f}
    insert = [f for p, f in new_by_path.items() if old_by_path.get(p) != f]
    return remove, insert


def _raw_shards(con, store: Store, indexed: list[FileEntry], tables: Mapping[str, object]) -> None:
    """View `raw`: one row per shard (SHARD_SCHEMA + filename), from the caller's Arrow tables
    where it has them, else from the verified Parquet objects."""
    import pyarrow as pa

    fresh = sorted({f.shard for f in indexed if f.shard in tables})
    stored = {f.shard: f for f in indexed if f.shard not in tables}
    for f in stored.values():
        data = store.get(f.shard)  # re-hash before DuckDB's Parquet reader touches the bytes
        if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
            raise StoreCorrupt(f"shard {f.shard[:12]} ({f.path}) is not a Parquet file",
                               hint="run `codeagent verify`, delete the object and build again")
    parts = []
    if stored:
        files = sorted(str(store.object_path(s)) for s in stored)
        con.execute("CREATE TEMP TABLE raw_stored AS SELECT * FROM read_parquet(?, filename=true)", [files])
        parts.append("SELECT * FROM raw_stored")
    if fresh:
        con.register("raw_fresh", pa.concat_tables(
            [tables[s].append_column("filename", pa.array([str(store.object_path(s))])) for s in fresh]))
        parts.append("SELECT * FROM raw_fresh")
    con.execute("CREATE TEMP VIEW raw AS " + " UNION ALL ".join(parts))


def _insert_entries(con, store: Store, entries: list[FileEntry],
                    tables: Mapping[str, object] | None = None) -> None:
    import pyarrow as pa

    skipped = [f for f in entries if not f.indexed]
    if skipped:
        con.register("skipped_files", pa.table({
            "path": [f.path for f in skipped], "blob": [f.blob for f in skipped],
            "size": [f.size for f in skipped], "language": [f.language for f in skipped],
            "status": [f.status for f in skipped], "reason": [f.reason for f in skipped],
        }))
        con.execute("INSERT INTO files SELECT path, blob, size, language, status, reason, '', 0, NULL FROM skipped_files")
        con.unregister("skipped_files")
    indexed = [f for f in entries if f.indexed]
    if not indexed:
        return
    con.register("m_paths", pa.table({
        "path": [f.path for f in indexed],
        "file": [str(store.object_path(f.shard)) for f in indexed],
        "shard": [f.shard for f in indexed],
    }))
    con.execute("CREATE TEMP TABLE m AS SELECT * FROM m_paths")
    con.unregister("m_paths")
    _raw_shards(con, store, indexed, tables or {})
    con.execute("""INSERT INTO files SELECT m.path, s.blob, s.size, s.language, 'indexed', '',
        m.shard, s.line_count, s.text FROM raw s JOIN m ON s.filename = m.file""")
    con.execute("""INSERT INTO chunks SELECT m.path, c.ordinal, c.kind, c.heading, c.start_line,
        c.start_col, c.end_line, c.end_col, c.start_byte, c.end_byte, c.symbol, c.text
        FROM (SELECT filename, unnest(chunks) AS c FROM raw) JOIN m ON filename = m.file""")
    con.execute(f"""INSERT INTO symbols
        WITH u AS (SELECT filename, language, unnest(symbols) AS s FROM raw)
        SELECT m.path, u.language, s.ordinal, {_SYMBOL_ID_SQL}, s.stable_id, s.kind, s.name,
            s.qualified_name, s.signature, s.doc, s.visibility, s.modifiers, s.start_line,
            s.start_col, s.end_line, s.end_col, s.start_byte, s.end_byte, s.name_line, s.name_col,
            s.name_end_line, s.name_end_col, s.parent, NULL, s.body_hash
        FROM u JOIN m ON u.filename = m.file""")
    con.execute(f"""INSERT INTO refs SELECT *, split_part(tkey, '.', 1), split_part(tkey, '.', -1)
        FROM (SELECT m.path, u.language, r.ordinal, r.kind, r.target, r.module, r.alias, r.source,
            src.symbol_id, r.start_line, r.start_col, r.end_line, r.end_col, {target_key('r.target')} AS tkey
        FROM (SELECT filename, language, unnest(refs) AS r FROM raw) u JOIN m ON u.filename = m.file
        LEFT JOIN symbols src ON src.path = m.path AND src.ordinal = r.source AND r.source >= 0)""")
    con.execute("""CREATE TEMP TABLE new_postings AS SELECT m.path, p.doc_kind, p.doc, p.term, p.tf
        FROM (SELECT filename, unnest(postings) AS p FROM raw) JOIN m ON filename = m.file""")
    con.execute("""CREATE TEMP TABLE new_docs AS SELECT path, doc_kind, doc, sum(tf)::INTEGER AS length
        FROM new_postings GROUP BY ALL""")
    con.execute("INSERT INTO docs SELECT * FROM new_docs")
    # Sorted by term, so BM25 reads only the row groups of the query's terms (zone maps).
    con.execute("""INSERT INTO term_postings SELECT n.term, n.path, n.doc_kind, n.doc, n.tf, d.length
        FROM new_postings n JOIN new_docs d USING (path, doc_kind, doc) ORDER BY n.term""")
    con.execute("DROP TABLE new_postings")
    con.execute("DROP TABLE new_docs")
    con.execute("""UPDATE symbols SET parent_id = p.symbol_id FROM symbols p
        WHERE symbols.path = p.path AND symbols.parent = p.ordinal AND symbols.parent >= 0
        AND symbols.path IN (SELECT path FROM m)""")
    con.execute("DROP VIEW raw")
    con.execute("DROP TABLE IF EXISTS raw_stored")
    con.unregister("raw_fresh")
    con.execute("DROP TABLE m")


def _path_table(con, name: str, paths: list[str]) -> None:
    import pyarrow as pa

    con.register("_paths", pa.table({"path": pa.array(paths, pa.string())}))
    con.execute(f"CREATE TEMP TABLE {name} AS SELECT path FROM _paths")
    con.unregister("_paths")


def _same_assembly_version(con) -> bool:
    try:
        rows = con.execute("SELECT value FROM meta WHERE key = 'assembly_version'").fetchall()
    except Exception:
        return False
    return rows == [(str(fmt.ASSEMBLY_VERSION),)]


def _meta_value(con, key: str) -> str | None:
    rows = con.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchall()
    return rows[0][0] if rows else None


def _postings_tail(con, full: bool) -> int:
    """Rows appended to term_postings since it was last sorted; re-sorts past the threshold."""
    if full:
        return 0
    appended = int(_meta_value(con, "postings_tail_rows") or 0) + con.execute(
        "SELECT count(*) FROM term_postings WHERE path IN (SELECT path FROM delta_added)").fetchall()[0][0]
    total = con.execute("SELECT count(*) FROM term_postings").fetchall()[0][0]
    if appended <= POSTINGS_TAIL_FRACTION * total:
        return appended
    con.execute("CREATE TABLE term_postings_sorted AS SELECT * FROM term_postings ORDER BY term")
    con.execute("DROP TABLE term_postings")
    con.execute("ALTER TABLE term_postings_sorted RENAME TO term_postings")
    return 0


def _write_meta(con, manifest: Manifest, manifest_id: str, postings_tail: int) -> None:
    import json

    con.execute("DELETE FROM meta")
    rows = {
        "manifest_id": manifest_id, "ref": manifest.ref, "commit": manifest.commit or "",
        "source": manifest.source, "schema_version": str(manifest.schema_version),
        "extractor_version": manifest.extractor_version,
        "assembly_version": str(fmt.ASSEMBLY_VERSION),
        "embedder_id": manifest.embedder_id or "", "counts": json.dumps(manifest.counts),
        "postings_tail_rows": str(postings_tail),
    }
    con.executemany("INSERT INTO meta VALUES (?, ?)", list(rows.items()))


def _copy_verified(prev_dir: Path, work: Path) -> dict[str, tuple[int, int, str]]:
    """Copy the previous assembly's database (and WAL); returns name -> (size, mtime_ns,
    blake3) of each copy, its digest taken from the verified SUMS of the original."""
    import json

    sums = json.loads((prev_dir / fmt.ASSEMBLY_SUMS).read_bytes())
    copied = {}
    for name in (fmt.DUCKDB_FILE, fmt.DUCKDB_WAL):
        if (prev_dir / name).exists():
            shutil.copyfile(prev_dir / name, work / name)
            st = (work / name).stat()
            copied[name] = (st.st_size, st.st_mtime_ns, sums[name][1])
    return copied


def _connect(db_path: Path):
    """A writer connection that checkpoints only when `_settle` says so."""
    import duckdb

    con = duckdb.connect(str(db_path))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute(f"SET checkpoint_threshold = '{WAL_MAX_BYTES * 4}B'")
    con.execute(f"SET auto_checkpoint_skip_wal_threshold = {WAL_MAX_BYTES * 4}")
    return con


def _settle(con, wal: Path, *, full: bool) -> None:
    """Fold the WAL into the database file when it is a full assembly or the WAL has grown
    past WAL_MAX_BYTES; otherwise leave it (readers replay it read-only)."""
    if full or (wal.exists() and wal.stat().st_size > WAL_MAX_BYTES):
        con.execute("CHECKPOINT")


def assemble(store: Store, manifest: Manifest, manifest_id: str,
             previous: tuple[Manifest, str] | None = None, *,
             tables: Mapping[str, object] | None = None) -> Path:
    """Build `assembled/<manifest_id>/` (idempotent); returns its path. `tables`: shard id ->
    Arrow table of shards the caller has in memory (read instead of their Parquet)."""
    final = store.assembled_dir(manifest_id)
    if store.is_assembled(manifest_id) and not store.assembly_problems(manifest_id, deep=False):
        return final
    _load_step_modules()
    work = store.tmp_dir / f"assemble-{manifest_id[:16]}-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    try:
        db_path = work / fmt.DUCKDB_FILE
        base: Manifest | None = None
        prev_dir: Path | None = None
        copied: dict[str, tuple[int, int, str]] = {}
        if (previous is not None and store.is_assembled(previous[1])
                and not store.assembly_problems(previous[1], trust_mtime=True)):  # never copy a damaged base
            prev_dir = store.assembled_dir(previous[1])
            copied = _copy_verified(prev_dir, work)
            base = previous[0]
        con = _connect(db_path)
        try:
            if base is not None and not _same_assembly_version(con):
                con.close()
                for name in (fmt.DUCKDB_FILE, fmt.DUCKDB_WAL):
                    (work / name).unlink(missing_ok=True)
                con = _connect(db_path)
                base = prev_dir = None
            if base is None:
                con.execute(SCHEMA_SQL)
            else:
                con.execute("BEGIN")
            remove, insert = _changed_paths(base, manifest)
            _path_table(con, "delta_removed", sorted(remove))
            _path_table(con, "delta_added", [f.path for f in insert])
            if remove:
                for table in PER_PATH_TABLES:
                    con.execute(f"DELETE FROM {table} WHERE path IN (SELECT path FROM delta_removed)")
            _insert_entries(con, store, insert, tables or {})
            if base is None or remove or insert:
                for step in DERIVED_STEPS:
                    step(con, manifest)
            _write_meta(con, manifest, manifest_id, _postings_tail(con, base is None))
            if base is not None:
                con.execute("COMMIT")
            _settle(con, work / fmt.DUCKDB_WAL, full=base is None)
        finally:
            con.close()
        for artifact in ARTIFACT_STEPS:
            artifact(store, manifest, manifest_id, work, prev_dir)
        write_assembly_sums(work, copied)
        (work / fmt.COMPLETE_MARKER).write_text(complete_marker(manifest_id))
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():  # an assembly in an older layout: move it aside, then replace it
            stale = store.tmp_dir / f"stale-{manifest_id[:16]}-{secrets.token_hex(4)}"
            os.rename(final, stale)
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.rename(work, final)
        except OSError:
            if not store.is_assembled(manifest_id):
                raise
            shutil.rmtree(work, ignore_errors=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


def prune_assembled(store: Store, keep: set[str]) -> int:
    """Delete assembled directories of manifests not in `keep`.

    Each is first renamed into tmp/ (atomic), so a build killed mid-delete never leaves a
    half-deleted directory that still says COMPLETE; sweep_tmp finishes the job.
    """
    base = store.root / fmt.ASSEMBLED_DIR
    removed = 0
    for entry in base.iterdir() if base.exists() else ():
        if entry.name not in keep:
            doomed = store.tmp_dir / f"prune-{entry.name[:16]}-{secrets.token_hex(4)}"
            try:
                os.rename(entry, doomed)
            except OSError:
                continue
            shutil.rmtree(doomed, ignore_errors=True)
            removed += 1
    return removed
