"""Every edge of one manifest in memory, indexed by its source and its target, for long-lived
views: a symbol's callers, callees and other neighbours without scanning `edges`.

`edges` holds about 450k rows on the standard library; the SQL path's `dst_id IN (...)`
scans all of them (30-60 ms a hop, two hops per multi-hop level). Here the rows are in the SQL
path's order (EDGE_ORDER) in a resident array (format/resident.py), with sorted src_id and
dst_id indexes, so the rows of any set of symbols are their row numbers sorted: the same
rows, in the same order, as the SQL query.
"""

from __future__ import annotations

import numpy as np

from ..format.resident import (EDGE_COLUMNS, EDGE_ORDER, EDGES_SQL, KeyIndex, StringColumn, edge_arrays, pylist,
                               whole)
from .index import IndexView
from .symbol_table import resident, structure_arrays

COLUMNS = EDGE_COLUMNS
__all__ = ["COLUMNS", "EDGE_ORDER", "EdgeTable"]


class EdgeTable:
    """Edge rows (COLUMNS) in the SQL path's order, indexed by src_id and by dst_id."""

    def __init__(self, table=None, parts: dict | None = None) -> None:
        """From the rows of EDGES_SQL (`table`), or from their resident `parts`."""
        import pyarrow as pa

        parts = parts if parts is not None else edge_arrays(table)
        self.table = parts["rows"]
        kind = whole(self.table.column("kind"))
        self.kind_codes = kind.indices.to_numpy(zero_copy_only=False)
        self.kind_names: list[str] = kind.dictionary.to_pylist()
        # run-encoded columns (format/resident.RUNS), read per row: Arrow takes no runs
        self._runs = {f.name: StringColumn(self.table.column(f.name)) for f in self.table.schema
                      if pa.types.is_run_end_encoded(f.type)}
        self.by_src = KeyIndex(parts["src_id"], self.table.column("src_id"))  # permuted indexes
        self.by_dst = KeyIndex(parts["dst_id"], self.table.column("dst_id"))

    @classmethod
    def load(cls, view: IndexView) -> "EdgeTable":
        """The view's edge table, loaded on first use."""
        return resident(view, "edge_table", cls.load,
                        lambda: cls(parts=structure_arrays(view, "edges", EDGES_SQL)))

    def count_into(self, dst_id: str) -> int:
        """Edges into `dst_id` other than `contains`."""
        lo, hi = self.by_dst.span(dst_id)
        kinds = self.kind_codes[self.by_dst.rows[lo:hi]]
        contains = self.kind_names.index("contains") if "contains" in self.kind_names else -1
        return int((kinds != contains).sum())

    def rows(self, ids: list[str], key: str, kinds: list[str] | None, limit: int) -> list[tuple]:
        """Rows (COLUMNS) whose `key` ("src_id" or "dst_id") is one of `ids` and whose kind is
        in `kinds` (None: any kind but `contains`), in table order, at most `limit`."""
        index = self.by_dst if key == "dst_id" else self.by_src
        spans = (index.span(i) for i in dict.fromkeys(ids))
        parts = [index.rows[lo:hi] for lo, hi in spans if hi > lo]
        if not parts or limit <= 0:
            return []
        found = np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        wanted = [c for c, name in enumerate(self.kind_names)
                  if (name in kinds if kinds is not None else name != "contains")]
        found = found[np.isin(self.kind_codes[found], wanted)][:limit]
        if not len(found):
            return []
        taken = self.table.select([n for n in COLUMNS if n not in self._runs]).take(found)
        found = found.tolist()
        # the hex ids kept as bytes (format/columns.HEX) decoded for the taken rows only
        return list(zip(*([self._runs[n][i] for i in found] if n in self._runs
                          else pylist(taken.column(n)) for n in COLUMNS)))
