"""An assembly's database: the writer connection and when it checkpoints, and the start of an
incremental assembly (a verified copy of its base's database (plan.py), made while the
build parses)."""

from __future__ import annotations

import os
import secrets
import shutil
from pathlib import Path
from typing import NamedTuple

from ... import format as fmt
from ...format.assembly import sql_literals
from ...interrupts import held
from ...store import Store

# An assembly's writer checkpoints once its WAL would pass CHECKPOINT_BYTES, and the commit
# that passes it goes straight into the database file, past the WAL (SKIP_WAL_BYTES 0). The
# database is in a work directory no reader sees until the swap, so the WAL's durability buys
# nothing: logging every row uncompressed before a checkpoint wrote it again (the files'
# texts, symbols, refs) was ~100 MB of a cold build's 422 MB on the stdlib. Checkpointing at
# every commit (0) wrote as little there, but on a small repository (chi: 6 MB) 2.2x the
# bytes and a 20% larger file (a checkpoint per statement, each leaving partly filled
# blocks); 1 MiB writes least on both: docs/benchmarks/store.md.
CHECKPOINT_BYTES = 1 << 20
SKIP_WAL_BYTES = 0
# DuckDB's allocator (jemalloc, on Linux) keeps the pages its statements freed until later
# allocations decay them: through a cold build's steps that was ~100-150 MiB of RSS no
# statement held (the graph's temp tables still resident during the postings merge). Its
# background threads return them within a second (a process-wide setting; a no-op where
# DuckDB has no jemalloc): docs/benchmarks/cold-build.md.
ALLOCATOR_CONFIG = {"allocator_background_threads": True}
# DuckDB's blocks for an assembly's new database file (DuckDB's default: 256 KiB). A column
# segment and the end of each row group's column leave a block partly filled; at 64 KiB the
# stdlib's database is 72 MB instead of 81 MB (32 KiB: 72.1, 128 KiB: 74.5, 16 KiB: 110 MB:
# docs/benchmarks/store.md). Readers take the size from the file's header; an older file
# (and an incremental assembly's copy of it) keeps its own.
BLOCK_BYTES = 1 << 16


def same_assembly_version(con) -> bool:
    try:
        rows = con.execute("SELECT value FROM meta WHERE key = 'assembly_version'").fetchall()
    except Exception:
        return False
    return rows == [(str(fmt.ASSEMBLY_VERSION),)]


def _copy_verified(base_dir: Path, work: Path) -> dict[str, tuple[int, int, str]]:
    """Copy the base assembly's database (and WAL); returns name -> (size, mtime_ns,
    blake3) of each copy, its digest taken from the verified SUMS of the original."""
    import json

    sums = json.loads((base_dir / fmt.ASSEMBLY_SUMS).read_bytes())
    copied = {}
    for name in (fmt.DUCKDB_FILE, fmt.DUCKDB_WAL):
        if (base_dir / name).exists():
            shutil.copyfile(base_dir / name, work / name)
            st = (work / name).stat()
            copied[name] = (st.st_size, st.st_mtime_ns, sums[name][1])
    return copied


class Base(NamedTuple):
    """An incremental assembly's start: its work directory and the database files copied
    there (as `_copy_verified` returns them)."""

    work: Path
    copied: dict[str, tuple[int, int, str]]


def copy_base(store: Store, base_id: str) -> Base | None:
    """A new work directory holding a verified copy of `base_id`'s database, or None when
    that assembly is missing or damaged (never copy a damaged base)."""
    if not store.is_assembled(base_id) or store.assembly_problems(base_id, trust_mtime=True):
        return None
    work = store.tmp_dir / f"assemble-{base_id[:16]}-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    try:
        return Base(work, _copy_verified(store.assembled_dir(base_id), work))
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


class BaseCopy:
    """The I/O that starts an incremental assembly, run in threads while the build parses:
    the base's database copied, then flushed to disk (so the ref swap's sync finds it
    written). (Opening the connection here too does not pay: DuckDB holds the GIL through
    most of its WAL replay, which then slows the parse's imports as much as it gains.
    Pruning old assemblies here does not either: it takes a build's worth of grace from
    readers, and a reader whose directory vanishes between opening the database and its WAL
    silently sees the last checkpoint.) Start it after any fork of parse workers.

    Measured on the stdlib, one changed file, fresh process, alternated with the serial
    version on a loaded machine (then with the prune here too): 0.815 -> 0.712 s (median of 5)."""

    def __init__(self, store: Store, base_id: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.base_id = base_id
        pool = ThreadPoolExecutor(2, thread_name_prefix="base-copy")
        self._copy = pool.submit(copy_base, store, base_id)
        self._flush = pool.submit(self._fsync, self._copy)
        pool.shutdown(wait=False)

    @staticmethod
    def _fsync(copy) -> None:
        """fsync the copied files; they are opened first, so the assembly may rename their
        directory meanwhile (if it already has, the swap's flush of the assembly does). Closing
        these descriptors drops the writer's fcntl lock on the copy: harmless, nothing else
        opens a work directory. A failed copy is the assembly's error, raised when it takes it."""
        base = copy.result() if copy.exception() is None else None
        fds = []
        try:
            for name in base.copied if base else ():
                fds.append(os.open(base.work / name, os.O_RDONLY))
        except FileNotFoundError:
            pass
        try:
            for fd in fds:
                os.fsync(fd)
        finally:
            for fd in fds:
                os.close(fd)

    def settle(self) -> None:
        """Wait until the threads are idle (the copy stays for `take`), raising errors."""
        if self._copy is not None:
            self._copy.result()
        self._flush.result()

    def take(self, base_id: str) -> Base | None:
        """The base, when it is `base_id`'s (the caller then owns the directory)."""
        base, self._copy = self._copy.result() if self._copy else None, None
        if base is not None and base_id != self.base_id:
            shutil.rmtree(base.work, ignore_errors=True)
            return None
        return base

    def __enter__(self) -> BaseCopy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Wait for the threads (raising their errors: call it before the ref swap); discard
        a base nobody took. Idempotent."""
        self._flush.exception()  # before a discard: its files are still open
        if self._copy is not None and self._copy.exception() is None:
            self.take("")
        self._flush.result()


def connect(db_path: Path, spill: tuple[int, Path] | None = None):
    """A writer connection whose large commits go straight to the file (CHECKPOINT_BYTES); with `spill`
    (memory_limit bytes, temp directory), DuckDB keeps under the limit by spilling there."""
    with held():  # a Ctrl-C raised inside DuckDB's module initialisation aborts the process
        import duckdb

    con = duckdb.connect(str(db_path), config={**ALLOCATOR_CONFIG, "default_block_size": str(BLOCK_BYTES)})
    if spill is not None:
        con.execute(f"SET memory_limit = '{spill[0]}B'")
        con.execute(f"SET temp_directory = {sql_literals([str(spill[1])])}")
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute(f"SET checkpoint_threshold = '{CHECKPOINT_BYTES}B'")
    try:  # DuckDB >= 1.5 writes a commit past this straight to the file (a checkpoint)
        con.execute(f"SET auto_checkpoint_skip_wal_threshold = {SKIP_WAL_BYTES}")
    except duckdb.CatalogException:
        pass  # older versions always commit to the WAL
    return con


def checkpoint(con) -> None:
    """Fold the assembly's WAL into its database file. Every assembly ends with one, the
    incremental ones too: a reader replays a WAL into memory DuckDB cannot spill, so the
    resident step's read-only connection ran out of the budget's limit on a consolidation of
    10x the stdlib (a 1.8 MB WAL), and every server paid the replay on each open."""
    con.execute("CHECKPOINT")
