"""Assemble a manifest's shards into one DuckDB file, keyed by the manifest id: the order of
an assembly (base, rows, derived steps, artifacts, swap into place).

The assembled directory is built under the store's tmp/ and renamed into
`assembled/<manifest id>/` only when complete, so a reader following a ref never finds it
missing or half-written. When the assembly has a base (plan.py: the full assembly of the
previous manifest, or the one beneath it), the base's database is copied (base.py) and only
the changed paths are replaced (tables.py).

The tables, their DDL and versions are the format's (codeagent/format/assembly.py); the
derived steps (DERIVED_STEPS) add the symbol graph. During the steps two temp tables name
what changed: delta_removed(path) and delta_added(path); a step may use them to work
incrementally (on a full assembly every path is in delta_added and delta_removed is empty).
An incremental assembly also keeps the removed paths' old rows of files, symbols and refs
(delta_old_<table>, see tables.DELTA_OLD).

The query side reads this layout and nothing else.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa

from ... import format as fmt
from ...format.assembly import TABLES_SQL
from ...format.manifest import FileEntry, Manifest
from ...store import Store, complete_marker, faults, write_assembly_sums
from ..budget import MemoryBudget, return_large_frees
from .base import checkpoint, connect, copy_base, same_assembly_version
from .graph import symbol_graph
from .plan import Assembly
from .tables import (BATCH_SOURCE_BYTES, batches, changed_paths, entry_shards, insert_rows,
                     insert_skipped, mark_delta)
from .term_postings import insert_postings, postings_tail
from .texts import AssemblyTexts

if TYPE_CHECKING:
    from .postings_merge import PostingsRuns

# Derived tables computed in the database from its rows: step(con, manifest, store).
DERIVED_STEPS: tuple[Callable[[object, Manifest, Store], None], ...] = (symbol_graph,)


class Filled(NamedTuple):
    """What filling the database leaves the artifact steps: the base's assembled directory
    when the database was built on it, and the texts of the entries it inserted."""
    base_dir: Path | None
    texts: AssemblyTexts


def artifact_steps() -> tuple[Callable[[Assembly, Path, Filled], None], ...]:
    """Extra artifacts written into the assembled directory (the vectors and their ANN index,
    the arrays readers map): step(assembly, work_dir, filled)."""
    # An overlay (a one-file edit's build, which imports this module for its rows) writes
    # neither, and their modules (embedders, the resident writers) cost a fresh process imports.
    from .ann import build_vector_artifact  # imported at first use: see the comment above
    from .resident import write_resident_arrays

    return (lambda assembly, work, filled: build_vector_artifact(assembly, work, filled.base_dir),
            lambda assembly, work, filled: write_resident_arrays(assembly, work, filled.base_dir, filled.texts))


ARTIFACT_STEP_COUNT = 2  # len(artifact_steps()), known without importing them


def insert_entries(con, store: Store, entries: list[FileEntry],
                   tables: Mapping[str, object] | None = None, *,
                   beside: _Beside | None = None, spool: PostingsRuns | None = None,
                   texts: AssemblyTexts | None = None) -> int:
    """Insert the entries' rows; returns the term_postings rows inserted here. The postings
    (their numpy work and the term_postings insert: about half of this function's time, and
    no derived step reads them) are left to `beside` when given, which runs them on its own
    cursor while this goes on; `spool` takes the term_postings rows instead of the table;
    `texts` the entries' texts (the resident texts' input)."""
    insert_skipped(con, [f for f in entries if not f.indexed])
    indexed = [f for f in entries if f.indexed]
    if not indexed:
        return 0
    shards = entry_shards(con, store, indexed, tables or {})
    paths = pa.array([f.path for f in indexed], pa.string())
    if texts is not None:
        texts.add(paths, shards.column("text"))
    add = spool.add if spool is not None else None
    if beside is not None:
        beside(lambda cur: insert_postings(cur, shards, paths, add))
    insert_rows(con, shards, paths, indexed)
    return 0 if beside is not None else insert_postings(con, shards, paths, add)


def _write_meta(con, manifest: Manifest, manifest_id: str, postings_tail: int) -> None:
    con.execute("DELETE FROM meta")
    rows = {
        "manifest_id": manifest_id, "ref": manifest.ref, "commit": manifest.commit or "",
        "source": manifest.source, "schema_version": str(manifest.schema_version),
        "extractor_version": manifest.extractor_version,
        "assembly_version": str(fmt.ASSEMBLY_VERSION), "graph_version": str(fmt.GRAPH_VERSION),
        "embedder_id": manifest.embedder_id or "", "counts": json.dumps(manifest.counts),
        "postings_tail_rows": str(postings_tail),
    }
    con.executemany("INSERT INTO meta VALUES (?, ?)", list(rows.items()))


class _Beside:
    """One job run on its own cursor in a thread while the caller goes on with its statements:
    DuckDB and numpy release the GIL, and the caller's statements leave a core idle. Only for a
    full assembly (autocommit); an incremental one is one transaction on one connection."""
    def __init__(self, con) -> None:
        self.con = con
        self.job = None

    def __call__(self, fn: Callable[[object], None]) -> None:
        """Run `fn(cursor)` beside the caller, once the previous job is done."""
        # concurrent.futures (and the logging it imports) only for a full assembly: an
        # overlay's build, which imports this module, never runs a job beside.
        from concurrent.futures import ThreadPoolExecutor

        self.wait()
        cur = self.con.cursor()
        pool = ThreadPoolExecutor(1, thread_name_prefix="assemble")
        self.job = (pool, cur, pool.submit(fn, cur))

    def wait(self, *, failed: bool = False) -> None:
        """Wait for the job and raise its error (when the caller `failed`, interrupt the job
        and keep the caller's error instead)."""
        if self.job is None:
            return
        from concurrent.futures import wait  # imported by __call__ already (see there)

        pool, cur, future = self.job
        self.job = None
        try:
            if failed:
                while not future.done():  # an interrupt before its statement starts is lost
                    cur.interrupt()
                    wait([future], timeout=0.05)
            else:
                future.result()
        finally:
            pool.shutdown()
            cur.close()


def assemble(assembly: Assembly, *, replace: bool = False) -> Path:
    """Build `assembled/<manifest_id>/` (idempotent) on `assembly.base` (its database copied,
    or being copied as `base_copy`, and updated; from nothing without one); returns its path.
    `progress("assemble", done, total)` after each batch and step; `replace`: assemble it again
    even when intact (an overlay whose graph step needs the whole graph: graph_part.py)."""
    store, manifest_id, final = assembly.store, assembly.manifest_id, assembly.final
    if (not replace and store.is_assembled(manifest_id)
            and not store.assembly_problems(manifest_id, trust_mtime=True)):
        return final
    steps = _Steps(assembly.progress)
    start = None
    if assembly.base is not None:
        # A copy made for another manifest (the build's previous one was an overlay on this
        # base) is dropped: copy the base now rather than assemble every file again.
        base_id = assembly.base.id
        start = (assembly.base_copy.take(base_id) if assembly.base_copy else None) or copy_base(store, base_id)
    if start is None:
        work = store.tmp_dir / f"assemble-{manifest_id[:16]}-{secrets.token_hex(4)}"
        work.mkdir(parents=True)
    else:
        work = start.work
    try:
        filled = _fill_database(assembly.on(assembly.base if start else None), work, steps)
        for artifact in artifact_steps():
            artifact(assembly, work, filled)
            steps.advance()
        write_assembly_sums(work, start.copied if start is not None else {})
        (work / fmt.COMPLETE_MARKER).write_text(complete_marker(manifest_id))
        _swap_into_place(store, manifest_id, work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    steps.finish()
    return final


def _fill_database(assembly: Assembly, work: Path, steps: _Steps) -> Filled:
    """Write the manifest's rows and derived tables into work/index.duckdb, on the copied
    base's when there is one (`assembly.base`) of this ASSEMBLY_VERSION."""
    store, manifest, memory = assembly.store, assembly.manifest, assembly.memory
    base = assembly.base.manifest if assembly.base is not None else None
    base_dir = store.assembled_dir(assembly.base.id) if assembly.base is not None else None
    batch_bytes = assembly.batch_bytes
    if batch_bytes is None:
        batch_bytes = memory.assembly_batch_bytes if memory is not None else BATCH_SOURCE_BYTES
    spill = (memory.duckdb_limit, store.tmp_dir / f"spill-{work.name}") if memory is not None else None
    return_large_frees()
    con, merge = connect(work / fmt.DUCKDB_FILE, spill), None
    try:
        if base is not None and not same_assembly_version(con):
            con.close()
            for name in (fmt.DUCKDB_FILE, fmt.DUCKDB_WAL):
                (work / name).unlink(missing_ok=True)
            con = connect(work / fmt.DUCKDB_FILE, spill)
            base = base_dir = None
        con.execute(TABLES_SQL if base is None else "BEGIN")
        texts, beside = AssemblyTexts(full=base is None), (_Beside(con) if base is None else None)
        remove, insert = changed_paths(base, manifest)
        mark_delta(con, remove, insert)
        runs = batches(insert, batch_bytes)
        # A full assembly of several batches merges their sorted postings (postings_merge.py).
        merge = _postings_runs(store, work, memory) if base is None and len(runs) > 1 else None
        try:
            steps.total = len(runs) + len(DERIVED_STEPS) + ARTIFACT_STEP_COUNT + 1
            steps.advance(0)
            inserted = 0
            for run in runs:
                inserted += insert_entries(con, store, run, assembly.tables, beside=beside, spool=merge, texts=texts)
                _forget_tables(assembly.tables if base is None else {}, run)
                steps.advance()
            if memory is not None:
                con.execute(f"SET memory_limit = '{memory.derived_duckdb_limit}B'")
            if base is None or remove or insert:
                for step in DERIVED_STEPS:
                    step(con, manifest, store)
                    steps.advance()
        except BaseException:
            if beside is not None:
                beside.wait(failed=True)
            raise
        if beside is not None:
            beside.wait()
        if merge is not None:
            merge.insert_into(con)
        _write_meta(con, manifest, assembly.manifest_id, postings_tail(con, base is None, inserted))
        if base is not None:
            con.execute("COMMIT")
        checkpoint(con)
    finally:
        con.close()
        if merge is not None:
            merge.close()
        if spill is not None:
            shutil.rmtree(spill[1], ignore_errors=True)
    return Filled(base_dir, texts)


def _postings_runs(store: Store, work: Path, memory: MemoryBudget | None) -> PostingsRuns:
    """The spool a full assembly of several batches merges its sorted postings through."""
    # only such an assembly merges: an overlay's build loads neither it nor the resident writers
    from .postings_merge import PostingsRuns  # it imports (deferred, see the line above)
    from .resident import spool_memory

    budget = memory or MemoryBudget()
    return PostingsRuns(store.tmp_dir / f"postings-{work.name}", budget.postings_round_rows, spool_memory(budget))


def _forget_tables(tables: Mapping[str, object], run: list[FileEntry]) -> None:
    """Drop the parsed shards' tables a full assembly has inserted (it reads each shard
    once; another path with the same content reads it back from its object): held to the end,
    they were a third of a cold build's peak memory (docs/benchmarks/cold-build.md)."""
    if isinstance(tables, dict):
        for f in run:
            tables.pop(f.shard, None)


def _swap_into_place(store: Store, manifest_id: str, work: Path, final: Path) -> None:
    """Rename the complete work directory to `final` (a concurrent builder's identical
    assembly may win: then this one is dropped)."""
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
    else:
        store.track_written(final)


class _Steps:
    """An assembly's progress: its batches, derived steps, artifact steps and the final swap
    into place (those it skips are counted done at the end)."""
    def __init__(self, progress: Callable[[str, int, int], None] | None) -> None:
        self.progress = progress or (lambda stage, done, total: None)
        self.done = 0
        self.total = 1

    def advance(self, steps: int = 1) -> None:
        self.done = min(self.done + steps, self.total - 1)
        faults.step("assemble")
        self.progress("assemble", self.done, self.total)

    def finish(self) -> None:
        self.progress("assemble", self.total, self.total)


def prune_assembled(store: Store, keep: set[str]) -> int:
    """Delete assembled directories of manifests not in `keep`.

    An overlay's base is kept with it. Each is first renamed into tmp/ (atomic), so a build
    killed mid-delete never leaves a half-deleted directory that still says COMPLETE; sweep_tmp finishes the job.
    """
    base = store.root / fmt.ASSEMBLED_DIR
    keep = set(keep) | {store.assembly_base(mid) or mid for mid in keep}
    removed = 0
    for entry in base.iterdir() if base.exists() else ():
        if entry.name not in keep:
            doomed = store.tmp_dir / f"prune-{entry.name[:16]}-{secrets.token_hex(4)}"
            faults.step(f"prune {entry.name}")
            try:
                os.rename(entry, doomed)
            except OSError:
                continue
            shutil.rmtree(doomed, ignore_errors=True)
            removed += 1
    return removed
