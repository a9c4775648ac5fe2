"""The build's memory budget (`build --memory`): how much each memory-hungry stage may hold, so
peak memory is set by the budget, not by the size of the repository."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from ..errors import InvalidParameter, OutOfMemory

MIB = 1 << 20
DEFAULT_MEMORY = 1 << 30
MIN_MEMORY = 256 * MIB
# An assembly batch holds its shards, flattened rows and postings at once: about 15x its
# source bytes at the peak (a 25.6 MB batch of the stdlib: +394 MiB), more while the
# previous batch's postings still go in beside it, so a batch gets 1/128 of the budget: with
# the parsed shards' tables dropped once inserted, the batches are no longer a cold stdlib
# build's peak (750-830 MiB at 1/40; docs/benchmarks/cold-build.md).
ASSEMBLY_BYTES_PER_SOURCE_BYTE = 128

# glibc's malloc serves a block below its mmap threshold from its arenas, and raises that
# threshold (up to 32 MiB) each time it frees a mapped block: the numpy arrays of an assembly's
# steps (the postings merge's rounds, run in DuckDB's scan threads, each with its own arena)
# then came from arenas that kept their pages once freed, ~100 MiB of a cold stdlib build's
# peak. A fixed threshold maps every block of this size or more on its own and unmaps it when
# freed (docs/benchmarks/cold-build.md).
MALLOC_MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h

_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": MIB, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class MemoryBudget:
    total: int = DEFAULT_MEMORY

    @property
    def duckdb_limit(self) -> int:
        """DuckDB's memory_limit during assembly; past it, sorts and joins spill to disk. The
        rest is the build process's own (the manifest, the parsed shards kept, a batch's Arrow
        rows: ~300 MiB of a stdlib build at the default budget)."""
        return self.total * 3 // 8

    @property
    def derived_duckdb_limit(self) -> int:
        """DuckDB's memory_limit once the rows are inserted (the symbol graph, the postings'
        sort): the batches' Arrow rows are gone, and their share goes to DuckDB's joins and
        sorts, which spilled under `duckdb_limit` on large trees (10x the stdlib)."""
        return self.total * 5 // 8

    @property
    def postings_round_rows(self) -> int:
        """term_postings rows merged at once at the end of a full assembly (~100 bytes each
        in the merge, with their sort and the insert's copy)."""
        return self.total // 1024

    @property
    def assembly_batch_bytes(self) -> int:
        """Source bytes inserted into the assembly per batch."""
        return max(4 * MIB, self.total // ASSEMBLY_BYTES_PER_SOURCE_BYTE)

    @property
    def fresh_table_bytes(self) -> int:
        """Arrow tables of shards parsed now kept in memory for the assembly (the rest is
        read back from Parquet)."""
        return self.total // 8

    @property
    def parse_batch_bytes(self) -> int:
        """Source bytes read and handed to the parsers at once."""
        return min(64 * MIB, max(8 * MIB, self.total // 16))


def return_large_frees() -> bool:
    """Have malloc give blocks of MALLOC_MMAP_THRESHOLD bytes or more back to the system as
    soon as they are freed (process-wide; True where it took: glibc on Linux)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes  # ~10 ms: imported by a build, not by every command that imports the budget

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    return mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_THRESHOLD) == 1


def parse_memory(text: str) -> int:
    """Bytes of a size such as `1G`, `512M`, `1.5GiB` or `800000000`; at least MIN_MEMORY."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", text.lower())
    if m is None:
        raise InvalidParameter(f"--memory {text!r} is not a size",
                               hint="write it as 512M, 2G or 1.5GiB (bytes without a unit)")
    size = int(float(m.group(1)) * _UNITS[m.group(2)])
    if size < MIN_MEMORY:
        raise InvalidParameter(f"--memory {text} is below the {MIN_MEMORY // MIB} MiB a build needs")
    return size


def memory_budget(text: str | None) -> MemoryBudget:
    """The budget `--memory TEXT` asks for (the default one for None)."""
    return MemoryBudget() if text is None else MemoryBudget(parse_memory(text))


def over_budget(exc: BaseException, budget: MemoryBudget) -> OutOfMemory | None:
    """The error to report for DuckDB running out of the budget's limit (None for any other
    error). Told apart by the class's name: this module must not import DuckDB."""
    if type(exc).__name__ != "OutOfMemoryException" or "duckdb" not in type(exc).__module__:
        return None
    larger = _size_text(max(2 * budget.total, DEFAULT_MEMORY))
    return OutOfMemory(
        f"the build ran out of its memory budget (--memory {_size_text(budget.total)}: DuckDB may "
        f"hold {_size_text(budget.duckdb_limit)} while rows are inserted, "
        f"{_size_text(budget.derived_duckdb_limit)} after): {str(exc).splitlines()[0]}",
        hint=f"run it again with a larger budget, e.g. --memory {larger}; the previous index "
             "stays current")


def _size_text(size: int) -> str:
    return f"{size / (1 << 30):g}G" if size % (1 << 30) == 0 else f"{size // MIB}M"
