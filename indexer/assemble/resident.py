"""The assembly step that writes the resident arrays long-lived readers memory-map
(their layout and version: format/resident.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from ... import format as fmt
from ...format.resident_write import write_resident
from ..budget import MemoryBudget
from .base import ALLOCATOR_CONFIG
from .plan import Assembly
from .texts import AssemblyTexts


def spool_memory(budget: MemoryBudget) -> int:
    """The bytes of a resident file's spool kept in memory (1/16 of the budget: 64 MiB by
    default, every file of the standard library): such a file is written once instead of
    spooled to tmp/ and copied. Larger ones spool to disk, so memory stays bounded."""
    return budget.total // 16


def write_resident_arrays(assembly: Assembly, work_dir: Path, base_dir: Path | None,
                          texts: AssemblyTexts) -> None:
    """Write the resident arrays beside the finished database (`base_dir`: the assembly it
    was built on, whose unchanged name tables are copied; `texts`: those of the entries it
    inserted). DuckDB keeps under the build's
    budget (`assembly.memory`, else the default one), spilling its sorts to the store's tmp/: without
    a limit it held up to 80% of the machine's memory, and this step made a build's peak. The
    arrays are spooled to the store's tmp/ as well (format/resident_write.py)."""
    import duckdb

    store = assembly.store
    spill = store.tmp_dir / f"spill-resident-{work_dir.name}"
    limit = (assembly.memory or MemoryBudget()).duckdb_limit
    con = duckdb.connect(str(work_dir / fmt.DUCKDB_FILE), read_only=True,
                         config={"memory_limit": f"{limit}B", "temp_directory": str(spill), **ALLOCATOR_CONFIG})
    try:
        write_resident(con, work_dir, store.tmp_dir / f"spool-resident-{work_dir.name}",
                       texts.built(con, store, base_dir), base_dir,
                       memory=spool_memory(assembly.memory or MemoryBudget()))
    finally:
        con.close()
        shutil.rmtree(spill, ignore_errors=True)
