"""Every reference (`refs`) of one manifest in memory, grouped by the last dotted segment of
its target, for long-lived views: "uses of `name`" without scanning the table.

`refs` holds hundreds of thousands of rows on a large repository; the SQL condition
`target = name OR ends_with(target, '.' || name)` scans all of them (6-12 ms on the standard
library, on every `locate_symbol`). For a name without a dot that condition is exactly
"the target's last `.`-segment is `name`", so rows sorted by that segment (a resident array,
format/resident.py) answer it with a binary search. Within a segment rows keep the SQL
path's order: (path, start_line, ordinal).
"""

from __future__ import annotations

from ..format.columns import pylist
from ..format.resident import REF_COLUMNS, REFS_SQL, StringColumn, ref_arrays
from .index import IndexView
from .symbol_table import resident, structure_arrays

COLUMNS = REF_COLUMNS


class RefTable:
    """Reference rows (COLUMNS) grouped by the last segment of their target."""

    def __init__(self, table=None, parts: dict | None = None) -> None:
        """From the rows of REFS_SQL (`table`), or from their resident `parts`."""
        self.table = (parts if parts is not None else ref_arrays(table))["rows"]
        self.keys = StringColumn(self.table.column("key"))

    @classmethod
    def load(cls, view: IndexView) -> "RefTable":
        """The view's reference table, loaded on first use."""
        return resident(view, "ref_table", cls.load,
                        lambda: cls(parts=structure_arrays(view, "refs", REFS_SQL)))

    def uses(self, name: str, allowed: set[str] | None, limit: int) -> list[tuple]:
        """Rows (COLUMNS) whose target is `name` or ends with `.name` (`name` has no dot),
        in files `allowed` (None: all), in (path, start_line) order, at most `limit`."""
        lo, hi = self.keys.span(name)
        if hi <= lo or limit <= 0:
            return []
        if allowed is None:
            rows = list(range(lo, min(hi, lo + limit)))
        else:
            paths = pylist(self.table.column("path").slice(lo, hi - lo))
            rows = [lo + k for k, p in enumerate(paths) if p in allowed][:limit]
        if not rows:
            return []
        taken = self.table.select(list(COLUMNS)).take(rows)  # not the keys: Arrow takes no runs
        return list(zip(*(pylist(taken.column(n)) for n in COLUMNS)))
