"""Reading an overlay assembly (format/overlay.py): its base's database and its own attached
read-only to an in-memory connection whose views merge them, so every query reads them as
one index by the same table names."""

from __future__ import annotations

import json
from pathlib import Path

from .. import format as fmt
from ..errors import IndexIncompatible
from ..format.assembly import sql_literals
from ..format.overlay import BASE_DB, OVERLAY_DB, OVERLAY_FILE, OVERLAY_MARKER, merged_views_sql, overlay_problem


def overlay_base_id(directory: Path) -> str | None:
    """The base manifest id an assembled directory's overlay sits on; None for a full assembly.
    Raises IndexIncompatible for an overlay this codeagent cannot read."""
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
    return str(marker["base"])


def connect_overlay(base_dir: Path, directory: Path):
    """An in-memory DuckDB connection reading `directory`'s overlay on the database in
    `base_dir` through merged views (both attached read-only)."""
    import duckdb

    con = duckdb.connect()
    try:
        con.execute(f"ATTACH {sql_literals([str(base_dir / fmt.DUCKDB_FILE)])} AS {BASE_DB} (READ_ONLY)")
        con.execute(f"ATTACH {sql_literals([str(directory / OVERLAY_FILE)])} AS {OVERLAY_DB} (READ_ONLY)")
        con.execute(merged_views_sql())
    except BaseException:
        con.close()
        raise
    return con
