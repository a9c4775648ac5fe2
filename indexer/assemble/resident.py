"""The assembly step that writes the resident arrays long-lived readers memory-map
(their layout and version: format/resident.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ... import format as fmt
from ...format.manifest import Manifest
from ...format.resident_write import write_resident
from ...store import Store
from ..budget import MemoryBudget


def write_resident_arrays(store: Store, manifest: Manifest, manifest_id: str, work_dir: Path,
                          prev_dir: Path | None, memory: MemoryBudget | None = None) -> None:
    """Write the resident arrays beside the finished database (`prev_dir`: the assembly it
    was built on, whose unchanged name tables are copied). DuckDB keeps under the build's
    budget (`memory`, else the default one), spilling its sorts to the store's tmp/: without
    a limit it held up to 80% of the machine's memory, and this step made a build's peak. The
    arrays are spooled to the store's tmp/ as well (format/resident_write.py)."""
    import duckdb

    spill = store.tmp_dir / f"spill-resident-{work_dir.name}"
    limit = (memory or MemoryBudget()).duckdb_limit
    con = duckdb.connect(str(work_dir / fmt.DUCKDB_FILE), read_only=True,
                         config={"memory_limit": f"{limit}B", "temp_directory": str(spill)})
    try:
        write_resident(con, work_dir, store.tmp_dir / f"spool-resident-{work_dir.name}", prev_dir)
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
