"""Every edge of one manifest in memory, indexed by its source and its target, for long-lived
views: a symbol's callers, callees and other neighbours without scanning `edges`.

`edges` holds about 450k rows on the standard library; the SQL path's `dst_id IN (...)`
scans all of them (30-60 ms a hop, two hops per multi-hop level). Here one ordered load puts
the rows in the SQL path's order (graph.EDGE_ORDER), so the rows of any set of symbols are
their row numbers sorted: the same rows, in the same order, as the SQL query.
"""

from __future__ import annotations

from .index import IndexView
from .symbol_table import resident

COLUMNS = ("src_id", "dst_id", "kind", "confidence", "src_path", "src_line", "target", "dst_path")
_ENCODED = ("kind", "confidence", "src_path", "dst_path")  # few distinct values
# The order of graph queries' rows: exact edges first, then by place. The trailing columns
# break every tie, so the SQL path and this table agree row for row.
EDGE_ORDER = ("e.confidence = 'exact' DESC, e.src_path, e.src_line, e.dst_path, e.src_id, "
              "e.dst_id, e.kind, e.target")
_LOAD_SQL = f"""
SELECT src_id, dst_id, kind, confidence, src_path, src_line, coalesce(target, '') AS target, dst_path
FROM edges e ORDER BY {EDGE_ORDER}
"""


def _groups(column) -> tuple[dict[str, tuple[int, int]], object]:
    """key -> (lo, hi) into the returned permutation, whose slice lists the key's rows in
    ascending order; null keys are left out."""
    import numpy as np

    enc = column.combine_chunks().dictionary_encode()
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False)
    perm = np.argsort(codes, kind="stable")
    ordered = codes[perm]
    bounds = np.flatnonzero(np.diff(ordered)) + 1
    starts = [0, *bounds.tolist()]
    ends = [*bounds.tolist(), len(ordered)]
    names = enc.dictionary.to_pylist()
    groups = {names[ordered[lo]]: (lo, hi) for lo, hi in zip(starts, ends)
              if len(ordered) and ordered[lo] >= 0}
    return groups, perm


class EdgeTable:
    """Edge rows (COLUMNS) in the SQL path's order, grouped by src_id and by dst_id."""

    def __init__(self, table) -> None:
        import pyarrow as pa

        self.table = pa.table({n: (table.column(n).combine_chunks().dictionary_encode()
                                   if n in _ENCODED else table.column(n)) for n in COLUMNS}
                              ).combine_chunks()
        kind = self.table.column("kind").combine_chunks()
        self.kind_codes = kind.indices.to_numpy(zero_copy_only=False)
        self.kind_names: list[str] = kind.dictionary.to_pylist()
        self.by_dst, self.dst_perm = _groups(table.column("dst_id"))
        self.by_src, self.src_perm = _groups(table.column("src_id"))

    @classmethod
    def load(cls, view: IndexView) -> "EdgeTable":
        """The view's edge table, loaded on first use."""
        return resident(view, "edge_table", cls.load,
                        lambda: cls(view.cursor().sql(_LOAD_SQL).to_arrow_table()))

    def rows(self, ids: list[str], key: str, kinds: list[str] | None, limit: int) -> list[tuple]:
        """Rows (COLUMNS) whose `key` ("src_id" or "dst_id") is one of `ids` and whose kind is
        in `kinds` (None: any kind but `contains`), in table order, at most `limit`."""
        import numpy as np

        groups, perm = (self.by_dst, self.dst_perm) if key == "dst_id" else (self.by_src, self.src_perm)
        parts = [perm[lo:hi] for lo, hi in (groups.get(i, (0, 0)) for i in dict.fromkeys(ids)) if hi > lo]
        if not parts or limit <= 0:
            return []
        found = np.sort(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        wanted = [c for c, name in enumerate(self.kind_names)
                  if (name in kinds if kinds is not None else name != "contains")]
        found = found[np.isin(self.kind_codes[found], wanted)][:limit]
        if not len(found):
            return []
        taken = self.table.take(found)
        return list(zip(*(taken.column(n).to_pylist() for n in COLUMNS)))
