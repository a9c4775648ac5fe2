"""Each file's term counts, in memory for long-lived views: the file ranking's body field
without a GROUP BY over the chunk postings per query.

`term_postings` holds one row per (term, chunk); the file ranking needs the sums per (term,
file) and each file's length. Summing them in SQL took 10-13 ms a query on the standard library
(1.6M chunk postings); here the sums sorted by term (a resident array the assembly wrote,
format/resident.py: mapped, not loaded) make a query's rows a slice per term, found by binary
search. One-shot readers keep the SQL.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

import numpy as np

from ..format.resident import POSTINGS_SQL, StringColumn, postings_arrays, whole
from .index import IndexView, sql_literals
from .symbol_table import resident, structure_arrays

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
    """(term, file, summed tf, file length) rows sorted by term (a resident array)."""

    def __init__(self, table=None, parts: dict | None = None) -> None:
        """From the rows of POSTINGS_SQL (`table`), or from their resident `parts`."""
        rows = (parts if parts is not None else postings_arrays(table))["rows"]
        self.terms = StringColumn(rows.column("term"))
        paths = whole(rows.column("path"))
        self.path_ids = paths.indices.to_numpy(zero_copy_only=False)
        self.paths: list[str] = paths.dictionary.to_pylist()
        self.tf = whole(rows.column("tf")).to_numpy(zero_copy_only=False)
        # integers, in place (NULL, a file without a length: NaN in a float copy)
        self.length = whole(rows.column("dl")).to_numpy(zero_copy_only=False)
        self._codes, self._values = _sorted_codes(self.terms)  # see _span

    @classmethod
    def load(cls, view: IndexView) -> "FilePostings":
        """The view's file postings, loaded on first use."""
        return resident(view, "file_postings", cls.load,
                        lambda: cls(parts=structure_arrays(view, "postings", POSTINGS_SQL)))

    def rows(self, terms: Iterable[str], allowed: set[str] | None = None) -> list[tuple]:
        """(path, length, [term...], [tf...]) of every file holding one of `terms` (and in
        `allowed` when given): the rows of BODY_SQL, files in the order they first appear in
        the terms' slices, each file's terms in that order (grouped with numpy: a bug report's
        hundreds of terms have tens of thousands of postings)."""
        names, starts, counts = [], [], []
        for term in dict.fromkeys(terms):
            lo, hi = self._span(term)
            if hi > lo:
                names.append(term)
                starts.append(lo)
                counts.append(hi - lo)
        if not names:
            return []
        lengths = np.asarray(counts)
        ends = np.cumsum(lengths)
        at = np.arange(ends[-1]) - np.repeat(ends - lengths - np.asarray(starts), lengths)  # the slices' rows
        which = np.repeat(np.arange(len(names)), lengths)
        pids = self.path_ids[at]
        order = np.argsort(pids, kind="stable")  # a file's rows together, in slice order
        grouped = pids[order]
        first = np.flatnonzero(np.r_[True, grouped[1:] != grouped[:-1]])
        last = np.r_[first[1:], len(grouped)].tolist()
        term_of = [names[i] for i in which[order].tolist()]
        tfs = self.tf[at][order].astype(np.float64).tolist()
        dls = self.length[at[order[first]]].astype(np.float64).tolist()  # each file's first row's
        group_pids = grouped[first].tolist()
        out = []
        for g in np.argsort(order[first], kind="stable").tolist():  # files by first appearance
            path, dl = self.paths[group_pids[g]], dls[g]
            if dl != dl or (allowed is not None and path not in allowed):  # NaN: no length
                continue
            a, b = first[g], last[g]
            out.append((path, dl, term_of[a:b], tfs[a:b]))
        return out

    def _span(self, term: str) -> tuple[int, int]:
        """The rows of `term`: a binary search over the sorted distinct terms (a Python list:
        no string decoded per probe) and one over the rows' codes, when the terms are
        dictionary-encoded in sorted order as the in-memory builder makes them; over the
        runs' terms when they are run-encoded (as the assembly writes them)."""
        if self._codes is None:  # run-encoded, as the assembly writes them, or not encoded
            return self.terms.span(term)
        code = bisect.bisect_left(self._values, term, 0, len(self._values) - 1)
        if code == len(self._values) - 1 or self._values[code] != term:
            return 0, 0
        code = self._codes.dtype.type(code)  # the array's own type: a Python int would copy it
        return int(np.searchsorted(self._codes, code, "left")), int(np.searchsorted(self._codes, code, "right"))


def _sorted_codes(terms: StringColumn) -> tuple:
    """(codes, distinct terms + [None]) of a dictionary-encoded term column whose dictionary is
    sorted and whose codes never decrease down the rows, else (None, None). The StringColumn's
    own decoded dictionary is shared, not copied: it is the largest list a view holds."""
    codes, values = getattr(terms, "_codes", None), getattr(terms, "_values", None)
    if codes is None or not isinstance(values, list) or not values or values[-1] is not None:
        return None, None
    if len(codes) and (codes[0] < 0 or np.any(codes[1:] < codes[:-1])):
        return None, None
    if any(values[i] >= values[i + 1] for i in range(len(values) - 2)):
        return None, None
    return codes, values


def body_rows(view: IndexView, terms: list[str], where: str, params: list,
              allowed: set[str] | None) -> list[tuple]:
    """(path, length, [term...], [tf...]) of every file holding one of `terms` within the
    filter (`where`/`params` for SQL, the same filter as `allowed` paths; None: all)."""
    if view.keep_text_in_memory or "file_postings" in view.cache:
        return FilePostings.load(view).rows(terms, allowed)
    return view.sql(BODY_SQL.format(terms=sql_literals(terms), where=where), params)
