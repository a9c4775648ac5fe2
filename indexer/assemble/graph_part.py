"""The second phase of an overlay published before its graph (format/overlay.py, GRAPH_PART).

An overlay is published first with the changed paths' rows (everything symbol,
text and grep answers read) and the previous build's graph rows as they were (overlay.py,
`two_phase`): the one-file edit is searchable after the per-path rows are written, ~0.2 s of
CPU on the standard library, where the graph step takes ~1 s more. `finish_graph` then runs
that graph step over the published overlay and renames GRAPH_PART into its directory whole:
its graph tables (rows and masks) are the overlay's own, exactly those a one-phase overlay of
the same manifest holds. (An overlay whose change since the graph it carries moved lines
only, or changed references only, is published with that graph brought up to date,
overlay_lines.py and overlay_refs.py: no second phase.)
The overlay file is not written again (its per-path rows, a chain's layers flattened, are
read into memory: the step reads them many times).

The graph step follows the change since the manifest whose graph the overlay carries (the
marker's "graph"): from that graph's rows, held by the overlay file, when its manifest is
still readable, else from the base's. Its comparison of the removed paths' old inputs
(a shortcut for edits that change no definition or reference) is left out when starting
from the carried rows: the overlay file holds the new manifest's per-path rows, not those of
the manifest the graph describes. A build interrupted or killed before the rename leaves the
overlay servable, its graph answers marked `indexing` (query/overlay.py), and the next build
of the ref runs this step.
"""

from __future__ import annotations

import json
import secrets
import shutil

from ... import format as fmt
from ...format.assembly import sql_literals
from ...format.manifest import Manifest, load_manifest
from ...format.overlay import (GRAPH_FILE, GRAPH_PART, GRAPH_TABLES, OVERLAY_DB, OVERLAY_FILE, OVERLAY_MARKER,
                               PER_PATH_TABLES, overlay_tables_sql)
from ...store import Store, complete_marker, faults, write_assembly_sums
from ..budget import MemoryBudget
from .overlay import (ONE_THREAD_PATHS, OVERLAY_BLOCK_SIZE, Previous, attach_previous, connect_overlay_writer,
                      consolidation_base)
from .overlay_graph import PREVIOUS_DB, overlay_graph
from .pipeline import assemble
from .plan import Assembly
from .tables import changed_paths


def graph_phase(store: Store, manifest: Manifest, manifest_id: str, *, memory: MemoryBudget | None = None,
                tables=None, progress=None) -> None:
    """The second phase of the pending overlay `manifest_id` (finish_graph); a graph step
    that would recompute the whole graph consolidates the manifest instead (a full assembly
    replaces the overlay). The caller writes the ref again: the commit point."""
    if not finish_graph(store, manifest, manifest_id, memory):
        assemble(Assembly(store, manifest, manifest_id, base=consolidation_base(store, manifest_id),
                          tables=tables or {}, progress=progress, memory=memory), replace=True)


def finish_graph(store: Store, manifest: Manifest, manifest_id: str,
                 memory: MemoryBudget | None = None) -> bool:
    """Run the graph step of the pending overlay `manifest_id` and put its GRAPH_PART in place;
    False when the step would recompute the whole graph (the caller consolidates instead)."""
    directory = store.assembled_dir(manifest_id)
    marker = json.loads((directory / OVERLAY_MARKER).read_bytes())
    base_id, carried = marker["base"], marker["graph"]
    work = store.tmp_dir / f"graph-{manifest_id[:16]}-{secrets.token_hex(4)}"
    work.mkdir(parents=True)
    con, spill = connect_overlay_writer(store, base_id, memory, work.name)
    try:
        attach_previous(con, Previous(directory / OVERLAY_FILE, set(), [], False, directory, marker))
        con.execute(f"ATTACH ':memory:' AS {OVERLAY_DB}")
        con.execute(f"USE {OVERLAY_DB}")
        con.execute(overlay_tables_sql())
        for table in PER_PATH_TABLES:  # the step reads them many times: once through a chain's views
            for name in (table, f"mask_{table}"):
                con.execute(f"INSERT INTO {name} SELECT * FROM {PREVIOUS_DB}.main.{name}")
        con.execute("USE memory")
        remove, insert = changed_paths(load_manifest(store, base_id), manifest)
        since = _change_since(store, carried, base_id, manifest)
        if len(_paths(*(since or (remove, insert)))) <= ONE_THREAD_PATHS:
            con.execute("SET threads = 1")
        if not overlay_graph(con, manifest, remove, insert, since, old_rows=since is None, store=store):
            return False
        faults.step("assemble")
        _write_part(con, work / GRAPH_FILE)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
    _land(store, manifest_id, work)
    return True


def _change_since(store: Store, carried: str, base_id: str, manifest: Manifest) -> tuple[set[str], list] | None:
    """The change from the manifest whose graph rows the overlay carries to `manifest`; None:
    start from the base's graph (it is the base's, or that manifest is no longer readable)."""
    if carried == base_id:
        return None
    try:
        return changed_paths(load_manifest(store, carried), manifest)
    except Exception:  # collected, or unreadable: the base's graph and the whole change since it
        return None


def _paths(remove: set[str], insert: list) -> set[str]:
    return remove | {f.path for f in insert}


def _write_part(con, path) -> None:
    """The overlay's graph tables (rows and masks) into a new DuckDB file at `path`, in one
    transaction whose commit checkpoints it (one commit a table rewrote its header and
    metadata each time: 0.73 MB written for a 61 KB file on a one-file edit of the stdlib)."""
    con.execute("SET checkpoint_threshold = '0b'")
    con.execute(f"ATTACH {sql_literals([str(path)])} AS graph_file (BLOCK_SIZE {OVERLAY_BLOCK_SIZE})")
    con.execute("BEGIN")
    for table in GRAPH_TABLES:
        for name in (table, f"mask_{table}"):
            con.execute(f"CREATE TABLE graph_file.main.{name} AS SELECT * FROM {OVERLAY_DB}.main.{name}")
    con.execute("COMMIT")
    con.execute("DETACH graph_file")


def _land(store: Store, manifest_id: str, work) -> None:
    """Seal `work` (SUMS, COMPLETE) and rename it into the overlay's directory as GRAPH_PART
    (a concurrent builder's identical part may win: then this one is dropped)."""
    try:
        write_assembly_sums(work)
        (work / fmt.COMPLETE_MARKER).write_text(complete_marker(manifest_id))
        faults.step("assemble")
        final = store.assembled_dir(manifest_id) / GRAPH_PART
        try:
            work.rename(final)
        except OSError:
            if not store.graph_landed(manifest_id):
                raise
            shutil.rmtree(work, ignore_errors=True)
        else:
            store.track_written(final)  # flushed by the caller's swap of the ref
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
