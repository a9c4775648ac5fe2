"""Assemble a work-tree manifest as an overlay (format/overlay.py) on the assembled database of
an earlier manifest, writing only the rows of the paths that differ from it, or decline (the
caller then consolidates: a full database, copied from the base and updated in place).

An overlay is relative to its base, and written as a chain (format/overlay.py, Layers): the
next edit writes only the paths changed since the previous overlay as a new top, the previous
overlay's files linked beneath it, so what a one-file edit writes no longer follows the
overlay. The chain is tiered like an LSM tree (layers_kept): a new top takes in (rewrites) the
layers above the first that masks more paths than it has so far, so a path is rewritten about
log2(overlay paths) times before the overlay is consolidated, and a chain that would pass
MAX_LAYERS files is written flattened (every path that differs from the base, as before
version 3). It is declined, so the next assembly is a consolidated base, when the paths that
differ from the base pass OVERLAY_MAX_FILES or the previous overlay's files passed
OVERLAY_MAX_BYTES: what every query merges follows the overlay's rows, so the overlay is kept
small; the count bounds the work before any is done (a branch switch of thousands of files is
consolidated at once), the bytes what the chain holds (a few large files). A build that
consolidates later (the watcher's: it consolidates when the work tree is idle, off the edit's
path) keeps the overlay up to DEFERRED_MAX_BYTES and says when it passed OVERLAY_MAX_BYTES
(consolidation_due).

The graph is exact: the base's graph tables are brought up to date, copy-on-write
(overlay_graph.py), by the same incremental step a consolidated assembly runs (graph.py, on
views that merge the base's rows with the overlay's), and every path whose graph rows differ
from the base's is written with its new rows (edges: by src_path), so references in other
files whose resolution the edit changed are carried too. An overlay published before its
graph step (two-phase) whose change since the graph it carries moved lines only (no
definition, import or reference changed) is published with that graph, its lines remapped
(overlay_lines.py), and one that changed references only (calls added, removed or renamed;
no definition, import or base class) with its files' references resolved again in place
(overlay_refs.py): complete, no graph step left.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import NamedTuple

from ... import format as fmt
from ...format.assembly import sql_literals
from ...format.manifest import Manifest, load_manifest
from ...format.overlay import (BASE_DB, GRAPH_FILE, GRAPH_PART, GRAPH_TABLES, LAYERS, MAX_LAYERS, MERGED_TABLES,
                               OVERLAY_DB, OVERLAY_FILE, OVERLAY_MARKER, OVERLAY_VERSION, PER_PATH_TABLES,
                               attach_chain_sql, layer_db, layer_file, marker_layers, overlay_problem,
                               overlay_tables_sql)
from ...store import Store, complete_marker, faults, write_assembly_sums
from ..budget import MemoryBudget
from .overlay_graph import PREVIOUS_DB, overlay_graph
from .overlay_lines import carried_graph_fits
from .overlay_refs import refs_resolved
from .pipeline import _swap_into_place, _write_meta, assemble, insert_entries
from .plan import Assembled, Assembly
from .tables import changed_paths, path_table

OVERLAY_MAX_FILES = 256
# Chosen when each build rewrote the overlay (on average half this, as it grew) and each
# consolidation writes the base (C bytes) again after about this / g edits of distinct files
# (g: what one file adds, ~80 KB on the stdlib): bytes per edit ~ T/2 + C*g/T, least at
# T = sqrt(2*C*g), ~4.3 MB for the stdlib's 117 MB database. With chains (version 3) a build
# writes ~g*(1 + log2(T/g)/2), so the consolidation's C*g/T is the larger part and a larger
# T would lower the bytes further (what every query merges bounds it).
OVERLAY_MAX_BYTES = 4 << 20
# The bound of a build that consolidates later: past it, an edit consolidates at once still
# (a watcher that never sees the work tree idle does not grow the overlay without end).
DEFERRED_FACTOR = 4
# DuckDB's smallest block: each table of an overlay takes at least one (the default 256 KiB
# would make a one-file overlay ~4 MB of mostly empty blocks).
OVERLAY_BLOCK_SIZE = 16 << 10
# An overlay whose change (since the previous overlay it starts from) is this many paths or
# fewer is filled by one DuckDB thread: its statements read few rows and the base's tables are
# a few row groups, so a second thread splits little work and costs CPU to coordinate
# (one-file edits on the stdlib at load 9 on 2 cores: 1.47 s of CPU and 2.53 s wall with one
# thread, 1.58 / 2.89 s with two).
ONE_THREAD_PATHS = 16


def full_assembly(store: Store, manifest_id: str) -> str:
    """The manifest whose full database `manifest_id`'s assembly reads: its own, or its base's
    ("" for an unreadable overlay marker)."""
    base = store.assembly_base(manifest_id)
    return manifest_id if base is None else base


def consolidation_base(store: Store, previous_id: str) -> Assembled | None:
    """The full assembly beneath the overlay `previous_id` (its base), when intact and
    readable."""
    base_id = full_assembly(store, previous_id)
    if (not base_id or not store.is_assembled(base_id) or store.assembly_base(base_id) is not None
            or store.assembly_problems(base_id, trust_mtime=True)):
        return None
    try:
        return Assembled(load_manifest(store, base_id), base_id)
    except Exception:
        return None


def overlay_max_bytes(deferred: bool = False) -> int:
    """OVERLAY_MAX_BYTES (a test's store.faults may set another), times DEFERRED_FACTOR
    for a build that consolidates later."""
    limit = faults.overlay_max_bytes(OVERLAY_MAX_BYTES)
    return limit * DEFERRED_FACTOR if deferred else limit


def overlay_fits(store: Store, previous_id: str, limit: int | None = None) -> bool:
    """False when `previous_id` is an overlay past `limit` (overlay_max_bytes()) or one of
    another version: the next assembly consolidates."""
    directory = store.assembled_dir(previous_id)
    try:
        marker = json.loads((directory / OVERLAY_MARKER).read_bytes())
        size = sum((directory / name).stat().st_size for name in [*marker_layers(marker), OVERLAY_FILE])
        return not overlay_problem(marker) and size <= (overlay_max_bytes() if limit is None else limit)
    except FileNotFoundError:
        return not (directory / OVERLAY_FILE).exists()
    except (OSError, ValueError, AttributeError):
        return False


def consolidation_due(store: Store, manifest_id: str) -> bool:
    """True when `manifest_id` is assembled as an overlay that the next build would not
    extend (past OVERLAY_MAX_BYTES): one that consolidates later should now."""
    return store.assembly_base(manifest_id) is not None and not overlay_fits(store, manifest_id)


def assemble_change(assembly: Assembly, *, overlay: bool, deferred: bool = False,
                    two_phase: bool = False) -> Path:
    """Assemble after `assembly.previous` (its base is worked out here): as an overlay on the
    full assembly beneath `previous` when `overlay` and the change fits one (`deferred`: the
    bound of a build that consolidates later; `two_phase`: an overlay is published before its
    graph, see graph_part.py), else consolidated (pipeline.assemble on that full assembly's
    database)."""
    store, previous = assembly.store, assembly.previous
    if previous is None or full_assembly(store, previous.id) == previous.id:
        assembly = assembly.on(previous)
    else:
        assembly = assembly.on(consolidation_base(store, previous.id))
    if (assembly.base is not None and previous is not None and overlay
            and overlay_fits(store, previous.id, overlay_max_bytes(deferred))):
        done = assemble_overlay(assembly, two_phase=two_phase)
        if done is not None:
            return done
    return assemble(assembly)


def assemble_overlay(assembly: Assembly, *, two_phase: bool = False) -> Path | None:
    """Build `assembled/<manifest_id>/` as an overlay on `assembly.base`; None when the change
    is too large for one (the caller consolidates). `assembly.previous`: the manifest whose
    overlay on the same base the graph step starts from. `two_phase`: the overlay carries
    `previous`'s graph rows and is published without running the graph step (the marker's
    "graph"; graph_part.finish_graph adds the overlay's own)."""
    store, manifest, manifest_id, base = assembly.store, assembly.manifest, assembly.manifest_id, assembly.base
    if base is None:
        return None  # nothing to lay it on
    if manifest_id == base.id or store.is_assembled(manifest_id):
        return None  # an edit undone, or assembled already: the consolidated path keeps or mends it
    if not store.is_assembled(base.id) or store.assembly_problems(base.id, trust_mtime=True):
        return None
    remove, insert = changed_paths(base.manifest, manifest)
    masked = sorted(remove | {f.path for f in insert})
    if len(masked) > OVERLAY_MAX_FILES:
        return None
    final = assembly.final
    work = store.tmp_dir / f"overlay-{manifest_id[:16]}-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    layered = _layered_on(store, assembly.previous, base.id, manifest)
    pending = _pending_graph(store, assembly.previous, base.id, layered) if two_phase else None
    try:
        filled = _fill_overlay(assembly, work, (remove, insert, masked), layered, pending)
        if filled is None:
            shutil.rmtree(work, ignore_errors=True)
            return None
        kept, graph_done = filled
        known = _link_layers(work, kept)
        marker = {"version": OVERLAY_VERSION, "base": base.id, LAYERS: [layer_file(i) for i in range(len(kept))]}
        (work / OVERLAY_MARKER).write_text(json.dumps(marker if graph_done else {**marker, "graph": pending[0]}))
        faults.step("assemble")
        write_assembly_sums(work, known)
        (work / fmt.COMPLETE_MARKER).write_text(complete_marker(manifest_id))
        _swap_into_place(store, manifest_id, work, final)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return final


class Previous(NamedTuple):
    """The intact overlay on the same base a new overlay is built after: its top file, the
    change from its manifest (remove, insert), whether its graph rows are its own, its
    directory and marker (its chain: format/overlay.py)."""
    top: Path
    remove: set[str]
    insert: list
    own_graph: bool
    directory: Path
    marker: dict

    def chain(self) -> list[Path]:
        """Its chain's files, bottom first (the top last)."""
        return [*(self.directory / name for name in marker_layers(self.marker)), self.top]


def _layered_on(store: Store, previous: Assembled | None, base_id: str,
                manifest: Manifest) -> Previous | None:
    """`previous` as a Previous when it is an intact overlay on `base_id`, else None."""
    if previous is None or previous.id == base_id or store.assembly_base(previous.id) != base_id:
        return None
    if not store.is_assembled(previous.id) or store.assembly_problems(previous.id, trust_mtime=True):
        return None
    directory = store.assembled_dir(previous.id)
    try:
        marker = json.loads((directory / OVERLAY_MARKER).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or overlay_problem(marker):
        return None
    return Previous(directory / OVERLAY_FILE, *changed_paths(previous.manifest, manifest),
                    own_graph(store, previous.id)[0] == previous.id, directory, marker)


def attach_previous(con, previous: Previous) -> list[str]:
    """Attach `previous`'s chain read-only: PREVIOUS_DB reads it as one overlay
    (format/overlay.attach_chain_sql); the databases of its files, bottom first."""
    for statement in attach_chain_sql(previous.directory, previous.marker, f"{PREVIOUS_DB}_top", PREVIOUS_DB,
                                      prefix=f"{PREVIOUS_DB}_"):
        con.execute(statement)
    names = marker_layers(previous.marker)
    return [*(f"{PREVIOUS_DB}_{layer_db(i)}" for i in range(len(names))), f"{PREVIOUS_DB}_top"] if names \
        else [PREVIOUS_DB]


def layers_kept(sizes: list[int], step: int) -> int:
    """How many files of the previous chain (their paths masked, `sizes`, bottom first) a new
    layer of `step` changed paths keeps beneath it; the rest it takes in (merges). Tiered
    like an LSM tree's: the new layer takes in the top while the top masks no more paths
    than the layer has so far, so the layers' sizes fall geometrically upwards, a path is
    rewritten about log2(paths) times until consolidation and the chain stays short; a
    chain that would pass MAX_LAYERS is flattened whole (0 kept)."""
    kept, acc = len(sizes), max(step, 1)
    while kept and sizes[kept - 1] <= acc:
        kept -= 1
        acc += sizes[kept]
    return kept if kept + 1 <= MAX_LAYERS else 0


def _link_layers(work: Path, kept: list[Path]) -> dict[str, tuple[int, int, str]]:
    """Hard-link the `kept` layer files (all in the previous overlay's directory) into `work`
    as its layers (copied where the file system has no hard links); the SUMS entries they had,
    by their new names (not hashed again)."""
    try:
        sums = json.loads((kept[0].parent / fmt.ASSEMBLY_SUMS).read_bytes()) if kept else {}
    except (OSError, ValueError):
        sums = {}
    known = {}
    for i, source in enumerate(kept):
        target = work / layer_file(i)
        try:
            os.link(source, target)
        except OSError:
            shutil.copy2(source, target)
        try:
            size, digest, mtime = sums[source.name]
            known[target.name] = (size, mtime, digest)
        except (KeyError, TypeError, ValueError):
            pass
    return known


def own_graph(store: Store, manifest_id: str) -> tuple[str, Path]:
    """(the manifest whose graph rows the overlay assembly of `manifest_id` holds, the file
    holding them): its own, in its graph part or its overlay file, or, published before its
    graph, the previous build's (format/overlay.py)."""
    directory = store.assembled_dir(manifest_id)
    return (store.graph_source(manifest_id),
            directory / GRAPH_PART / GRAPH_FILE if store.graph_landed(manifest_id) else directory / OVERLAY_FILE)


def _pending_graph(store: Store, previous: Assembled | None, base_id: str,
                   layered: Previous | None) -> tuple[str, Path | None] | None:
    """(the manifest whose graph a two-phase overlay carries until its own lands, the file of
    that graph's rows: None for the base's); None when `previous` is neither the base nor an
    intact overlay on it (the overlay then runs its graph step before it is published)."""
    if previous is None:
        return None
    if previous.id == base_id:
        return base_id, None
    return None if layered is None else own_graph(store, previous.id)


def _fill_overlay(assembly: Assembly, work: Path, change: tuple[set[str], list, list[str]],
                  layered: Previous | None, pending: tuple[str, Path | None] | None = None
                  ) -> tuple[list[Path], bool] | None:
    """Write work/OVERLAY_FILE for the `change` from the base (removed paths, inserted entries,
    the paths masked), the top of a chain (format/overlay.py) whose layers beneath
    are the previous overlay's first files (`layered`, layers_kept): the per-path rows of the
    paths changed since it and of the paths its files taken in mask (those copied from it),
    or, flattened (nothing kept), of every path that differs from the base; then the graph's
    differing rows, or with `pending` (_pending_graph) the rows of that graph as they are.
    (The files kept beneath, bottom first; whether the overlay's graph is its own manifest's:
    with `pending`, when that graph was brought up to date, overlay_lines/overlay_refs.py);
    None when the graph had to be recomputed whole (then the overlay is not worth it). The
    overlay is filled in memory and written to its file once, without a WAL: written table by
    table, DuckDB logged every row and wrote the blocks again at the checkpoint (~8x the file's
    bytes)."""
    store, manifest, base_id = assembly.store, assembly.manifest, assembly.base.id
    remove, insert, masked = change
    con, spill = connect_overlay_writer(store, base_id, assembly.memory, work.name)
    try:
        con.execute(f"ATTACH ':memory:' AS {OVERLAY_DB}")
        con.execute(f"USE {OVERLAY_DB}")
        con.execute(overlay_tables_sql())
        fresh, step, kept, below = insert, masked, [], []
        if layered is not None:
            chain = attach_previous(con, layered)
            step = {*layered.remove, *(f.path for f in layered.insert)}
            masks = [{r[0] for r in con.execute(f"SELECT path FROM {db}.main.mask_files").fetchall()} for db in chain]
            n = layers_kept([len(m) for m in masks], len(step))
            if n:
                kept, below = layered.chain()[:n], chain[:n]
                masked = sorted(set().union(*masks[n:]) | step)
                fresh = layered.insert
            fresh = _copy_unchanged(con, masked, fresh, step, set().union(*masks))
        if len(step) <= ONE_THREAD_PATHS:
            con.execute("SET threads = 1")
        for batch in (fresh[i:i + 512] for i in range(0, len(fresh), 512)):
            insert_entries(con, store, batch, assembly.tables)
        faults.step("assemble")  # the steps an interrupt or a kill is tested at, as a full assembly's
        path_table(con, "overlay_paths", masked)
        for table in PER_PATH_TABLES:
            con.execute(f"INSERT INTO mask_{table} SELECT path FROM overlay_paths")
        con.execute("DROP TABLE overlay_paths")
        con.execute("USE memory")
        graph_done = pending is None
        if pending is not None:
            _copy_graph(con, pending[1], layered)
            graph_done = _carried_fits(con, pending[0], (remove, insert), assembly, layered)
        elif not overlay_graph(con, manifest, remove, insert, _graph_layered(layered), per_path=(*below, OVERLAY_DB), store=store):
            return None
        faults.step("assemble")
        con.execute(f"USE {OVERLAY_DB}")
        _write_meta(con, manifest, assembly.manifest_id, 0)
        con.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("overlay_version", str(OVERLAY_VERSION)), ("base_manifest_id", base_id)])
        con.execute("USE memory")
        _write_once(con, work / OVERLAY_FILE)
        return kept, graph_done
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)


def _carried_fits(con, carried: str, change: tuple[set[str], list], assembly: Assembly,
                  layered: Previous | None) -> bool:
    """Whether the graph rows copied from `carried` were brought up to date for the new
    manifest without a graph step (overlay_lines.py, overlay_refs.py): when `carried` is the
    base (`change`: the change from it) or the previous overlay whose graph rows are its own
    (the change since it)."""
    if carried == assembly.base.id:
        since, old = change, None
    elif layered is not None and layered.own_graph and carried == assembly.previous.id:
        since, old = (layered.remove, layered.insert), PREVIOUS_DB
    else:
        return False
    cache: dict = {}  # the rows both compare
    return carried_graph_fits(con, since, old, cache) or refs_resolved(con, since, old, cache)


def connect_overlay_writer(store: Store, base_id: str, memory: MemoryBudget | None, name: str):
    """(an in-memory DuckDB connection with the base `base_id` attached read-only as BASE_DB,
    under the build's memory budget; its spill directory, for the caller to remove)."""
    import duckdb

    con = duckdb.connect()
    spill = store.tmp_dir / f"spill-{name}"
    try:
        if memory is not None:
            con.execute(f"SET memory_limit = '{memory.total}B'")
            con.execute(f"SET temp_directory = {sql_literals([str(spill)])}")
        con.execute(f"ATTACH {sql_literals([str(store.assembled_dir(base_id) / fmt.DUCKDB_FILE)])} AS {BASE_DB} (READ_ONLY)")
    except BaseException:
        con.close()
        raise
    return con, spill


def _graph_layered(layered: Previous | None) -> tuple[set[str], list] | None:
    """The change the graph step follows from the previous overlay's graph rows (None: from
    the base's): only when those rows are that overlay's own."""
    return None if layered is None or not layered.own_graph else (layered.remove, layered.insert)


def _copy_graph(con, source: Path | None, layered: Previous | None) -> None:
    """Copy into the overlay the graph rows and masks of the overlay file `source` (None: the
    base's graph, nothing to copy)."""
    if source is None:
        return
    alias = PREVIOUS_DB if layered is not None and source == layered.top else "graph_source"
    if alias != PREVIOUS_DB:
        con.execute(f"ATTACH {sql_literals([str(source)])} AS {alias} (READ_ONLY)")
    for table in GRAPH_TABLES:
        for name in (table, f"mask_{table}"):
            con.execute(f"INSERT INTO {OVERLAY_DB}.main.{name} SELECT * FROM {alias}.main.{name}")


def _copy_unchanged(con, masked: list[str], insert: list, since: set[str], before: set[str]) -> list:
    """Copy, from the previous overlay (PREVIOUS_DB, which masks the paths `before`), the
    per-path rows of the masked paths it masked too and whose entries did not change since
    (`since`: the paths that did); the entries of `insert` still to be inserted."""
    kept = (before & set(masked)) - since
    if not kept:
        return insert
    path_table(con, "kept_paths", sorted(kept))
    for table in PER_PATH_TABLES:
        con.execute(f"""INSERT INTO {table} SELECT * FROM {PREVIOUS_DB}.main.{table}
            WHERE {MERGED_TABLES[table]} IN (SELECT path FROM kept_paths)""")
    con.execute("DROP TABLE kept_paths")
    return [f for f in insert if f.path not in kept]


def _write_once(con, path: Path) -> None:
    """Copy the in-memory overlay database into a new file at `path`, checkpointed at once."""
    con.execute("SET checkpoint_threshold = '0b'")  # the commit checkpoints instead of logging
    con.execute(f"ATTACH {sql_literals([str(path)])} AS overlay_file (BLOCK_SIZE {OVERLAY_BLOCK_SIZE})")
    con.execute(f"COPY FROM DATABASE {OVERLAY_DB} TO overlay_file")
    con.execute("DETACH overlay_file")
