"""The assembly step that writes the resident arrays long-lived readers memory-map
(their layout and version: format/resident.py)."""

from __future__ import annotations

from pathlib import Path

from ... import format as fmt
from ...format.manifest import Manifest
from ...format.resident import write_resident
from ...store import Store


def write_resident_arrays(store: Store, manifest: Manifest, manifest_id: str, work_dir: Path,
                          prev_dir: Path | None) -> None:
    """Write the resident arrays beside the finished database (`prev_dir`: the assembly it
    was built on, whose unchanged name tables are copied)."""
    import duckdb

    con = duckdb.connect(str(work_dir / fmt.DUCKDB_FILE), read_only=True)
    try:
        write_resident(con, work_dir, prev_dir)
    finally:
        con.close()
