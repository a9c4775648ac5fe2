"""Every reference (`refs`) of one manifest in memory, grouped by the last dotted segment of
its target, for long-lived views: "uses of `name`" without scanning the table.

`refs` holds hundreds of thousands of rows on a large repository; the SQL condition
`target = name OR ends_with(target, '.' || name)` scans all of them (6-12 ms on the standard
library, on every `locate_symbol`). For a name without a dot that condition is exactly
"the target's last `.`-segment is `name`", so one ordered load keyed by that segment answers
it with a dictionary lookup. Rows keep the SQL path's order: (path, start_line, ordinal).
"""

from __future__ import annotations

from .index import IndexView
from .symbol_table import resident

_LOAD_SQL = """
SELECT regexp_extract(target, '[^.]*$') AS key, path, language, kind, target, start_line, end_line
FROM refs ORDER BY key, path, start_line, ordinal
"""
COLUMNS = ("path", "language", "kind", "target", "start_line", "end_line")
_ENCODED = ("path", "language", "kind")  # few distinct values: dictionary-encoded


class RefTable:
    """Reference rows (COLUMNS) grouped by the last segment of their target."""

    def __init__(self, table) -> None:
        import pyarrow as pa

        key = table.column("key").combine_chunks().dictionary_encode()
        codes = key.indices.to_numpy(zero_copy_only=False)
        names = key.dictionary.to_pylist()
        self.groups: dict[str, tuple[int, int]] = {}
        if len(codes):
            starts = [0, *((codes[1:] != codes[:-1]).nonzero()[0] + 1).tolist()]
            for lo, hi in zip(starts, [*starts[1:], len(codes)]):
                self.groups[names[codes[lo]]] = (lo, hi)
        self.table = pa.table({n: (table.column(n).combine_chunks().dictionary_encode()
                                   if n in _ENCODED else table.column(n)) for n in COLUMNS}
                              ).combine_chunks()

    @classmethod
    def load(cls, view: IndexView) -> "RefTable":
        """The view's reference table, loaded on first use."""
        return resident(view, "ref_table", cls.load,
                        lambda: cls(view.cursor().sql(_LOAD_SQL).to_arrow_table()))

    def uses(self, name: str, allowed: set[str] | None, limit: int) -> list[tuple]:
        """Rows (COLUMNS) whose target is `name` or ends with `.name` (`name` has no dot),
        in files `allowed` (None: all), in (path, start_line) order, at most `limit`."""
        lo, hi = self.groups.get(name, (0, 0))
        if hi <= lo or limit <= 0:
            return []
        if allowed is None:
            rows = list(range(lo, min(hi, lo + limit)))
        else:
            paths = self.table.column("path").slice(lo, hi - lo).to_pylist()
            rows = [lo + k for k, p in enumerate(paths) if p in allowed][:limit]
        if not rows:
            return []
        taken = self.table.take(rows)
        return list(zip(*(taken.column(n).to_pylist() for n in COLUMNS)))
