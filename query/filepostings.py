"""Each file's term counts, in memory for long-lived views: the file ranking's body field
without a GROUP BY over the chunk postings per query.

`term_postings` holds one row per (term, chunk); the file ranking needs the sums per (term,
file) and each file's length. Summing them in SQL took 10-13 ms a query on the standard library
(1.6M chunk postings); here one load (about 0.3 s, 8 MB of arrays for 620k (term, file) pairs)
sorts the sums by term, so a query's rows are a slice per term. One-shot readers keep the SQL.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from .index import IndexView, sql_literals
from .symbol_table import resident

_LOAD_SQL = """
SELECT term, path, sum(tf)::INTEGER AS tf FROM term_postings WHERE doc_kind = 'c' GROUP BY ALL
"""
_LENGTHS_SQL = "SELECT path, sum(length)::DOUBLE AS dl FROM docs WHERE doc_kind = 'c' GROUP BY path"
# The same rows through SQL, for views that do not keep tables in memory.
BODY_SQL = """
WITH p AS (
  SELECT path, term, sum(tf)::DOUBLE AS tf FROM term_postings
  WHERE term IN ({terms}) AND doc_kind = 'c' AND {where}
  GROUP BY path, term),
fl AS (SELECT path, sum(length)::DOUBLE AS dl FROM docs
       WHERE doc_kind = 'c' AND path IN (SELECT DISTINCT path FROM p) GROUP BY path)
SELECT p.path, fl.dl, list(p.term), list(p.tf) FROM p JOIN fl USING (path) GROUP BY p.path, fl.dl
"""


class FilePostings:
    """(term, file, summed tf) rows sorted by term, and each file's length in tokens."""

    def __init__(self, table, lengths) -> None:
        terms = table.column("term").combine_chunks().dictionary_encode()
        paths = table.column("path").combine_chunks().dictionary_encode()
        codes = terms.indices.to_numpy(zero_copy_only=False)
        order = np.argsort(codes, kind="stable")
        ordered = codes[order]
        bounds = np.flatnonzero(np.diff(ordered)) + 1
        starts = np.concatenate(([0], bounds)) if len(ordered) else np.zeros(0, np.int64)
        ends = np.concatenate((bounds, [len(ordered)])) if len(ordered) else starts
        names = terms.dictionary.to_pylist()
        self.slices: dict[str, tuple[int, int]] = {
            names[ordered[lo]]: (int(lo), int(hi)) for lo, hi in zip(starts.tolist(), ends.tolist())}
        self.path_ids = paths.indices.to_numpy(zero_copy_only=False)[order].astype(np.int32)
        self.tf = table.column("tf").to_numpy()[order].astype(np.float64)
        self.paths: list[str] = paths.dictionary.to_pylist()
        known = dict(zip(lengths.column("path").to_pylist(), lengths.column("dl").to_pylist()))
        self.length = np.array([known.get(p, np.nan) for p in self.paths], dtype=np.float64)

    @classmethod
    def load(cls, view: IndexView) -> "FilePostings":
        """The view's file postings, loaded on first use."""
        return resident(view, "file_postings", cls.load, lambda: cls._read(view.cursor()))

    @classmethod
    def _read(cls, cur) -> "FilePostings":
        return cls(cur.sql(_LOAD_SQL).to_arrow_table(), cur.sql(_LENGTHS_SQL).to_arrow_table())

    def rows(self, terms: Iterable[str], allowed: set[str] | None = None) -> list[tuple]:
        """(path, length, [term...], [tf...]) of every file holding one of `terms` (and in
        `allowed` when given): the rows of BODY_SQL, in no particular order."""
        per_path: dict[int, tuple[list[str], list[float]]] = {}
        for term in dict.fromkeys(terms):
            lo, hi = self.slices.get(term, (0, 0))
            for pid, tf in zip(self.path_ids[lo:hi].tolist(), self.tf[lo:hi].tolist()):
                got = per_path.get(pid)
                if got is None:
                    got = per_path[pid] = ([], [])
                got[0].append(term)
                got[1].append(tf)
        out = []
        for pid, (ts, tfs) in per_path.items():
            path, dl = self.paths[pid], self.length[pid]
            if np.isnan(dl) or (allowed is not None and path not in allowed):
                continue
            out.append((path, float(dl), ts, tfs))
        return out


def body_rows(view: IndexView, terms: list[str], where: str, params: list,
              allowed: set[str] | None) -> list[tuple]:
    """(path, length, [term...], [tf...]) of every file holding one of `terms` within the
    filter (`where`/`params` for SQL, the same filter as `allowed` paths; None: all)."""
    if view.keep_text_in_memory or "file_postings" in view.cache:
        return FilePostings.load(view).rows(terms, allowed)
    return view.sql(BODY_SQL.format(terms=sql_literals(terms), where=where), params)
