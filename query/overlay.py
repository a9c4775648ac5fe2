"""Reading an overlay assembly (format/overlay.py): its base's database and its own attached
read-only to an in-memory connection whose views merge them, so every query reads them as
one index by the same table names."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from .. import format as fmt
from ..errors import IndexIncompatible
from ..format.assembly import sql_literals
from ..format.overlay import (BASE_DB, GRAPH_DB, GRAPH_FILE, GRAPH_PART, OVERLAY_DB, OVERLAY_MARKER, TOP_DB,
                              attach_chain_sql, graph_of, marker_layers, merged_views_sql, overlay_problem)


def overlay_base_id(directory: Path) -> str | None:
    """The base manifest id an assembled directory's overlay sits on; None for a full assembly.
    Raises IndexIncompatible for an overlay this codeagent cannot read."""
    marker = overlay_marker(directory)
    return None if marker is None else str(marker["base"])


def overlay_graph_of(directory: Path, manifest_id: str, landed: bool) -> str:
    """The manifest whose graph the assembly in `directory` answers from (format/overlay.py):
    its own, or, for an overlay published before its graph whose part has not `landed`, the
    previous build's."""
    marker = overlay_marker(directory)
    return manifest_id if marker is None else graph_of(marker, manifest_id, landed)


def overlay_marker(directory: Path) -> dict | None:
    """The overlay marker of an assembled directory; None for a full assembly. Raises
    IndexIncompatible for an overlay this codeagent cannot read."""
    try:
        marker = json.loads((directory / OVERLAY_MARKER).read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise IndexIncompatible(f"the overlay marker of {directory.name[:12]} is unreadable ({exc})",
                                hint="rebuild the index with `codeagent build`") from exc
    problem = overlay_problem(marker) if isinstance(marker, dict) else "a malformed overlay marker"
    if problem:
        raise IndexIncompatible(problem, hint="rebuild the index with `codeagent build` (or upgrade codeagent)")
    return marker


def overlay_graph_db(directory: Path, graph_landed: bool) -> str:
    """The database of a connection from `connect_overlay` holding the overlay's graph tables
    (rows and masks, in a file): its GRAPH_PART's once landed, else its top's (OVERLAY_DB for
    a full assembly)."""
    if graph_landed:
        return GRAPH_DB
    marker = overlay_marker(directory)
    return TOP_DB if marker is not None and marker_layers(marker) else OVERLAY_DB


def connect_overlay(base_dir: Path, directory: Path, graph_landed: bool = False):
    """An in-memory DuckDB connection reading `directory`'s overlay on the database in
    `base_dir` through merged views (both attached read-only, a chain's layers flattened in
    OVERLAY_DB, format/overlay.py; with `graph_landed`, the graph tables from its GRAPH_PART);
    the one `prepare_connection` opened for `base_dir`, if any."""
    marker = overlay_marker(directory) or {}
    con = _take_spare(base_dir) or _connect_base(base_dir)
    try:
        for statement in attach_chain_sql(directory, marker, TOP_DB, OVERLAY_DB):
            con.execute(statement)
        if graph_landed:
            con.execute(f"ATTACH {sql_literals([str(directory / GRAPH_PART / GRAPH_FILE)])} AS {GRAPH_DB} (READ_ONLY)")
        con.execute(merged_views_sql(graph=GRAPH_DB if graph_landed else None))
    except BaseException:
        con.close()
        raise
    return con


def _connect_base(base_dir: Path):
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {sql_literals([str(base_dir / fmt.DUCKDB_FILE)])} AS {BASE_DB} (READ_ONLY)")
    except BaseException:
        con.close()
        raise
    return con


_spare: tuple[str, object] | None = None  # (base directory, a connection with it attached)
_spare_lock = threading.Lock()


def prepare_connection(base_dir: Path | None) -> None:
    """Open now, for the next overlay on `base_dir`, the connection `connect_overlay` starts
    from (a new DuckDB database and the base attached: 30-100 ms that a long-lived reader's
    first request on a new overlay then does not wait for). One is kept per process; None
    (the reader follows a full assembly now) closes it, so it holds no pruned base open."""
    global _spare
    key = None if base_dir is None else str(base_dir)
    with _spare_lock:
        if _spare is not None and _spare[0] == key:
            return
        old, _spare = _spare, None
    if old is not None:
        old[1].close()
    if base_dir is None:
        return
    con = _connect_base(base_dir)
    with _spare_lock:
        if _spare is None:
            _spare, con = (key, con), None
    if con is not None:
        con.close()


def _take_spare(base_dir: Path):
    global _spare
    with _spare_lock:
        if _spare is None or _spare[0] != str(base_dir):
            return None
        con, _spare = _spare[1], None
    return con
