"""The history field of the file ranking: what past commit messages say each file is for.

The build stores the indexed commit's history view (format/history.py); here a query's terms
are looked up in its per-file postings and each file gets a BM25 over that field. A view with
no history (not a git repository, an old store, git could not walk it) scores nothing.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Mapping
from pathlib import Path

from ...format.history import FILES_FILE, POSTINGS_FILE, RECORDS_FILE, view_dir
from ...format.resident import StringColumn, whole
from ..index import IndexView, sql_literals
from ..symbol_table import resident
from .bm25 import bm25_term, idf

_ROWS_SQL = "SELECT path, any_value(dl), list(term), list(tf) FROM read_parquet(?) WHERE term IN ({terms}) GROUP BY path"


def postings_file(view: IndexView) -> Path | None:
    """The view's history postings, or None (memoised on the view)."""
    if "history_file" not in view.cache:
        path = view_dir(view.store.root, view.commit) / POSTINGS_FILE if view.commit else None
        view.cache["history_file"] = path if path is not None and path.exists() else None
    return view.cache["history_file"]


def _stats(view: IndexView, path: Path) -> tuple[int, float]:
    got = view.cache.get("history_stats")
    if got is None:
        import pyarrow.parquet as pq  # the read side has pyarrow; only a view with history reads it

        meta = pq.read_schema(path).metadata or {}
        got = view.cache["history_stats"] = (int(meta.get(b"n_docs", b"0")), float(meta.get(b"avgdl", b"1")))
    return got


def bm25(rows: list[tuple[str, float, list[str], list[float]]], weights: Mapping[str, float],
         n_docs: int, avgdl: float) -> dict[str, float]:
    """Weighted BM25 of each path's history field (pure); df from the rows themselves."""
    df: dict[str, int] = {}
    for _, _, terms, _ in rows:
        for t in terms:
            df[t] = df.get(t, 0) + 1
    out: dict[str, float] = {}
    for path, dl, terms, tfs in rows:
        s = sum(weights.get(term, 0.0) * bm25_term(tf, dl, avgdl or 1.0, idf(n_docs, df[term]))
                for term, tf in sorted(zip(terms, tfs)))
        if s > 0:
            out[path] = s
    return out


def history_scores(view: IndexView, weights: Mapping[str, float]) -> dict[str, float]:
    """path -> BM25 of its history field for the query `weights` (empty without history)."""
    path = postings_file(view)
    if path is None or not weights:
        return {}
    n_docs, avgdl = _stats(view, path)
    if view.keep_text_in_memory or "history_postings" in view.cache:
        rows = _resident_postings(view, path).rows(weights)
    else:
        rows = [(p, float(dl), list(t), [float(x) for x in tf])
                for p, dl, t, tf in view.sql(_ROWS_SQL.format(terms=sql_literals(weights)), [str(path)])]
    return bm25(rows, weights, max(n_docs, 1), avgdl)


class HistoryPostings:
    """The history postings of a view in memory, sorted by term: a query's rows are a slice
    per term found by binary search (long-lived views; reading the Parquet file through SQL
    took a round trip per query). The rows are _ROWS_SQL's, in the order of the scan."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa  # see _stats
        import pyarrow.compute as pc  # see _stats
        import pyarrow.parquet as pq  # see _stats

        table = pq.read_table(path, columns=["term", "path", "tf", "dl"])
        table = table.take(pc.sort_indices(table, sort_keys=[("term", "ascending")]))  # stable
        # plain strings (an empty history's columns are typed null)
        self.terms = StringColumn(whole(table.column("term")).cast(pa.string()))
        paths = whole(table.column("path")).cast(pa.string()).dictionary_encode()
        self.path_ids = paths.indices.to_numpy(zero_copy_only=False)
        self.paths: list[str] = paths.dictionary.to_pylist()
        self.tf = whole(table.column("tf")).to_numpy(zero_copy_only=False)
        self.dl = whole(table.column("dl")).to_numpy(zero_copy_only=False)

    def rows(self, terms: Iterable[str]) -> list[tuple[str, float, list[str], list[float]]]:
        """(path, dl, [term...], [tf...]) of every path whose history holds one of `terms`."""
        per_path: dict[int, tuple[float, list[str], list[float]]] = {}
        for term in dict.fromkeys(terms):
            lo = bisect.bisect_left(self.terms, term)
            hi = bisect.bisect_right(self.terms, term, lo)
            for pid, tf, dl in zip(self.path_ids[lo:hi].tolist(), self.tf[lo:hi].tolist(),
                                   self.dl[lo:hi].tolist()):
                got = per_path.get(pid)
                if got is None:
                    got = per_path[pid] = (float(dl), [], [])
                got[1].append(term)
                got[2].append(float(tf))
        return [(self.paths[pid], dl, ts, tfs) for pid, (dl, ts, tfs) in per_path.items()]


def _resident_postings(view: IndexView, path: Path | None = None) -> HistoryPostings | None:
    """The view's history postings, loaded on first use (and for the next manifest by a
    follower: `resident`)."""
    path = path or postings_file(view)
    if path is None:
        return None
    return resident(view, "history_postings", _resident_postings, lambda: HistoryPostings(path))


def file_activity(view: IndexView) -> dict[str, tuple[int, int]]:
    """path -> (commits since it last changed, how many commits changed it) within the
    history window; empty without history (memoised on the view)."""
    got = view.cache.get("history_activity")
    if got is None:
        path = postings_file(view)
        got = {}
        if path is not None and (path.parent / FILES_FILE).exists():
            import pyarrow.parquet as pq  # see _stats

            t = pq.read_table(path.parent / FILES_FILE).to_pydict()
            got = dict(zip(t["path"], zip(t["last"], t["touches"])))
        view.cache["history_activity"] = got
    return got


def stored_records(store_root: Path, commit: str | None, n: int) -> list[tuple[str, int, tuple[str, ...]]] | None:
    """(sha, author time, changed paths) of the newest `n` commits of `commit`'s stored history
    view, newest first; None when no view is stored (the caller asks git instead)."""
    path = view_dir(store_root, commit) / RECORDS_FILE if commit else None
    if path is None or not path.exists():
        return None
    import pyarrow.parquet as pq  # see _stats

    t = pq.read_table(path, columns=["sha", "time", "paths"]).slice(0, max(n, 0)).to_pydict()
    return [(s, int(tm), tuple(p)) for s, tm, p in zip(t["sha"], t["time"], t["paths"])]
