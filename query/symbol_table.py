"""Every symbol of one manifest in memory, loaded once per view, so that resolving a handle,
listing children, spans and a file's symbols take no DuckDB point query.

Each point query on the wide `symbols` table (joined to `symbol_names`) scans it: 4-12 ms on
the standard library, several per `get_symbol`. Here one ordered scan fills, per manifest:
the `SymbolRow`s that the name index also uses (hot fields, shared string objects), the
rarely read fields (doc, columns, body hash...) as compact Arrow columns taken per request,
and dictionaries from symbol_id, stable_id, parent and path to row numbers. Rows are in the
order the SQL path returns them: (path, start_line, ordinal).

Long-lived readers (the server) use it; one-shot views keep the SQL path, which is cheaper
than loading every symbol once. `navigate` answers identically from either.
"""

from __future__ import annotations

import atexit
import gc
import threading
import weakref
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from .index import IndexView
from .names import NameIndex, SymbolRow
from ..model import SymbolInfo

_load_locks: dict[str, threading.Lock] = {}
_exit_hook = False
TEST_PATH_RE2 = r"(^|/)(tests?|testing)(/|$)|(^|/)test_[^/]*$|_test\.[^/]+$"
_FOLD = ("replace(replace(replace(replace(replace(lower({}), '::', '.'), '->', '.'), '#', '.'), "
         "'/', '.'), chr(92), '.')")
_LOAD_SQL = """
SELECT s.symbol_id, s.stable_id, s.path, s.language, s.kind, s.name, s.qualified_name,
       {fq} AS fq_name, coalesce(s.signature, '') AS signature, s.start_line, s.end_line,
       s.parent_id IS NULL AS top_level, regexp_matches(s.path, '{test}') AS in_tests,
       lower(s.name) AS name_key, """ + _FOLD.format("s.qualified_name") + """ AS qualified_key,
       """ + _FOLD.format("{fq}") + """ AS fq_key_folded,
       coalesce(s.doc, '') AS doc, coalesce(s.visibility, '') AS visibility,
       coalesce(s.modifiers, []) AS modifiers, s.start_col, s.end_col, s.name_line, s.parent_id,
       coalesce(s.body_hash, '') AS body_hash, s.ordinal, {raw_key} AS raw_fq_key,
       {has_fq} AS has_fq
FROM symbols s {join}
ORDER BY s.path, s.start_line, s.ordinal
"""
HOT = ("symbol_id", "stable_id", "path", "language", "kind", "name", "qualified_name", "fq_name",
       "signature", "start_line", "end_line", "top_level", "in_tests")
KEYS = ("name_key", "qualified_key", "fq_key_folded")
COLD = ("doc", "visibility", "modifiers", "start_col", "end_col", "name_line", "parent_id",
        "body_hash", "ordinal", "raw_fq_key", "has_fq")
_SHARED = ("path", "language", "kind", "name")  # few distinct values: one object each
_INFO_COLD = COLD[:8]
T = TypeVar("T")
# Lookup columns of `SymbolTable.where` (the SQL path's `WHERE column = ?`).
COLUMNS = ("symbol_id", "stable_id", "parent_id", "path", "qualified_name", "name")




def has_names(view: IndexView) -> bool:
    """Does the assembly carry module-qualified names (`symbol_names.fq_name`)?"""
    return view.has_table("symbol_names") and view.has_column("symbol_names", "fq_name")


def has_fq_keys(view: IndexView) -> bool:
    return view.has_table("symbol_names") and view.has_column("symbol_names", "fq_key")


def load_sql(view: IndexView) -> str:
    named, keyed = has_names(view), has_fq_keys(view)
    return _LOAD_SQL.format(
        fq="coalesce(n.fq_name, s.qualified_name)" if named else "s.qualified_name",
        join="LEFT JOIN symbol_names n USING (symbol_id)" if named else "",
        raw_key="n.fq_key" if keyed else "NULL::VARCHAR",
        has_fq="n.fq_name IS NOT NULL" if named else "FALSE", test=TEST_PATH_RE2)


def _column(table, name: str) -> list:
    """A column as Python values; columns with few distinct values share one object per value."""
    col = table.column(name)
    if name not in _SHARED:
        return col.to_pylist()
    enc = col.dictionary_encode().combine_chunks()
    values = enc.dictionary.to_pylist()
    return [values[i] if i is not None else None for i in enc.indices.to_pylist()]


def _multimap(keys, skip_none: bool = True) -> dict:
    """key -> row number (one row) or list of row numbers (several, ascending)."""
    out: dict = {}
    for i, k in enumerate(keys):
        if k is None and skip_none:
            continue
        got = out.get(k)
        if got is None:
            out[k] = i
        elif isinstance(got, list):
            got.append(i)
        else:
            out[k] = [got, i]
    return out


def _rows(hit) -> list[int]:
    if hit is None:
        return []
    return list(hit) if isinstance(hit, list) else [hit]


class SymbolTable:
    """One manifest's symbols; row numbers index `rows` (ordered by path, line, ordinal)."""

    def __init__(self, table) -> None:
        import pyarrow as pa

        hot = [_column(table, name) for name in HOT]
        self.rows: list[SymbolRow] = [SymbolRow(*r) for r in zip(*hot)]
        self.cold = pa.table({n: table.column(n) for n in COLD}).combine_chunks()
        self._cold_arrays = {n: self.cold.column(n).combine_chunks() for n in COLD}
        self.by_id: dict[str, int] = {r.symbol_id: i for i, r in enumerate(self.rows)}
        self.by_stable = _multimap(r.stable_id for r in self.rows)
        self.children = _multimap(self.by_id.get(p) for p in self.cold.column("parent_id").to_pylist())
        self.ordinals = self.cold.column("ordinal").to_numpy()
        self.by_path: dict[str, tuple[int, int]] = {}
        for i, r in enumerate(self.rows):
            lo, _ = self.by_path.get(r.path, (i, i))
            self.by_path[r.path] = (lo, i + 1)
        self._exact: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.incoming: dict[int, int] | None = None  # row -> edges into it (reference counts)
        self.names = NameIndex(self.rows, zip(*(table.column(k).to_pylist() for k in KEYS)))

    @classmethod
    def load(cls, view: IndexView) -> "SymbolTable":
        """The view's symbol table, loaded on first use."""
        return resident(view, "symbol_table", cls.load,
                        lambda: cls(view.cursor().sql(load_sql(view)).to_arrow_table()))

    def __len__(self) -> int:
        return len(self.rows)

    # ---- lookups: ascending row numbers -------------------------------------------------------
    def where(self, column: str, value: str) -> list[int]:
        """Rows whose `column` (one of COLUMNS) equals `value`."""
        if column == "symbol_id":
            i = self.by_id.get(value)
            return [] if i is None else [i]
        if column == "stable_id":
            return _rows(self.by_stable.get(value))
        if column == "parent_id":
            parent = self.by_id.get(value)
            return [] if parent is None else _rows(self.children.get(parent))
        if column == "path":
            lo, hi = self.by_path.get(value, (0, 0))
            return list(range(lo, hi))
        if column in ("qualified_name", "name"):
            return _rows(self._exact_map(column).get(value))
        raise ValueError(f"no lookup by {column}")

    def fq_matches(self, handle: str) -> list[int]:
        """Rows whose `symbol_names` entry has fq_name = handle or fq_key = handle with `::`
        and `#` folded to `.` (the SQL path's first name tier)."""
        key = handle.replace("::", ".").replace("#", ".")
        by_fq = self._exact_map("fq_name")
        cand = set(_rows(by_fq.get(handle))) | set(_rows(by_fq.get(key)))
        cand |= set(_rows(self._exact_map("raw_fq_key").get(key)))
        has_fq = self._cold_arrays["has_fq"]
        raw_key = self._cold_arrays["raw_fq_key"]
        return sorted(i for i in cand if (has_fq[i].as_py() and self.rows[i].fq_name == handle)
                      or raw_key[i].as_py() == key)

    def _exact_map(self, column: str) -> dict:
        got = self._exact.get(column)
        if got is None:
            with self._lock:
                got = self._exact.get(column)
                if got is None:
                    got = self._build_exact(column)
                    self._exact[column] = got
        return got

    def _build_exact(self, column: str) -> dict:
        """Exact-value maps; `fq_name` holds symbol_names' own names only, `raw_fq_key` the
        fq_keys that map `fq_name` does not already cover (fq_matches checks both)."""
        has_fq = self.cold.column("has_fq").to_pylist()
        if column == "raw_fq_key":
            keys = self.cold.column(column).to_pylist()
            return _multimap(None if h and k == r.fq_name else k
                             for k, r, h in zip(keys, self.rows, has_fq))
        if column == "fq_name":
            return _multimap(r.fq_name if h else None for r, h in zip(self.rows, has_fq))
        return _multimap(getattr(r, column) for r in self.rows)

    # ---- materialising ------------------------------------------------------------------------
    def infos(self, rows: list[int]) -> list[SymbolInfo]:
        """SymbolInfo of each row, in the order given."""
        if not rows:
            return []
        c = {n: self._cold_values(n, rows) for n in _INFO_COLD}
        out = []
        for k, i in enumerate(rows):
            r = self.rows[i]
            out.append(SymbolInfo(
                symbol_id=r.symbol_id, symbol_stable_id=r.stable_id, path=r.path,
                language=r.language, kind=r.kind, name=r.name, qualified_name=r.qualified_name,
                signature=r.signature, doc=c["doc"][k], visibility=c["visibility"][k],
                modifiers=list(c["modifiers"][k]), line_start=r.line_start, line_end=r.line_end,
                col_start=c["start_col"][k], col_end=c["end_col"][k], name_line=c["name_line"][k],
                parent_id=c["parent_id"][k], body_hash=c["body_hash"][k], fq_name=r.fq_name))
        return out

    def _cold_values(self, name: str, rows: list[int]) -> list:
        array = self._cold_arrays[name]
        if len(rows) <= 32:  # per value beats a take() call's fixed cost for a few rows
            return [array[i].as_py() for i in rows]
        import pyarrow as pa

        return array.take(pa.array(rows, type=pa.int64())).to_pylist()

    def at(self, path: str, ordinal: int) -> int | None:
        """The row of the symbol at `ordinal` in `path`."""
        lo, hi = self.by_path.get(path, (0, 0))
        found = (self.ordinals[lo:hi] == ordinal).nonzero()[0]
        return lo + int(found[0]) if len(found) else None

    def reference_count(self, view: IndexView, row: int) -> int:
        """Edges into the symbol at `row` other than `contains` (from the `edges` table)."""
        if self.incoming is None:
            counts = view.sql("SELECT dst_id, count(*) FROM edges WHERE kind <> 'contains' "
                              "AND dst_id IS NOT NULL GROUP BY dst_id")
            self.incoming = {self.by_id[d]: n for d, n in counts if d in self.by_id}
        return self.incoming.get(row, 0)


def resident(view: IndexView, key: str, loader: Callable[[IndexView], T], build: Callable[[], T]) -> T:
    """`view.cache[key]`, made by `build()` on first use (once, whatever the threads asking).
    `loader(view)` is recorded so an IndexFollower loads the same table for the next manifest
    before a request needs it; the new objects are kept out of the cyclic GC (`settle`)."""
    cached = view.cache.get(key)
    if cached is not None:
        return cached
    with _load_locks.setdefault(key, threading.Lock()):
        cached = view.cache.get(key)
        if cached is None:
            cached = view.cache[key] = build()
            view.loaded(loader)
            settle(view)
    return cached


def settle(view: IndexView) -> None:
    """Keep a long-lived view's freshly loaded tables out of the cyclic GC's full passes.

    A full pass walks every tracked object: with a manifest's rows and name lists (~400k
    objects on the standard library) each took 100-300 ms, landing on whatever request was
    running. Frozen objects are still freed by reference counting; closing the view (and
    exiting) unfreezes everything, so a cycle through a retired view is collected after all.
    Freezing is global: when other settled views are still open, closing one collects and
    freezes again, so theirs stay frozen (a request's view and the watcher's can both hold a
    manifest's tables, and either may close last)."""
    global _exit_hook
    if not view.keep_text_in_memory:
        return
    gc.collect()
    gc.freeze()
    with _settled_lock:
        if view not in _settled:
            _settled.add(view)
            view.on_close(partial(_unsettle, weakref.ref(view)))
        if not _exit_hook:
            _exit_hook = True
            atexit.register(gc.unfreeze)  # the final collection must see every object


_settled: weakref.WeakSet[IndexView] = weakref.WeakSet()  # open views whose tables are frozen
_settled_lock = threading.RLock()  # gc.collect() under it may run finalizers that close a view


def _unsettle(ref: weakref.ref) -> None:
    with _settled_lock:
        view = ref()
        if view is not None:
            _settled.discard(view)
        del view
        gc.unfreeze()
        if _settled:
            gc.collect()
            gc.freeze()


def resident_table(view: IndexView) -> SymbolTable | None:
    """The symbol table when this view keeps one (long-lived readers, the same ones that keep
    file texts in memory; or already loaded), else None: answer through SQL."""
    if view.keep_text_in_memory or "symbol_table" in view.cache:
        return SymbolTable.load(view)
    return None
