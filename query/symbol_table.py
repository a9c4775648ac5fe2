"""Every symbol of one manifest, for long-lived readers, so that resolving a handle, listing
children, spans and a file's symbols take no DuckDB point query.

Each point query on the wide `symbols` table (joined to `symbol_names`) scans it: 4-12 ms on
the standard library, several per `get_symbol`. Here the rows (in the SQL path's order:
path, start_line, ordinal) and sorted key indexes by symbol_id, stable_id, parent, path and
names are columnar arrays the assembly wrote (format/resident.py), memory-mapped: loading
costs nothing, servers share the pages, and a `SymbolRow` is read from the columns on access.
An assembly without them gets the same arrays built from SQL on first use.

Long-lived readers (the server) use it; one-shot views keep the SQL path. `navigate`
answers identically from either.
"""

from __future__ import annotations

import atexit
import gc
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TypeVar

from ..errors import AssemblyVanished
from ..format import resident as arrays
from ..format.resident import READ_COLUMNS, KeyIndex, StringColumn, rows_column, whole
from .assembly_check import check_resident
from .index import IndexView
from .names import NameIndex, SymbolRow
from .overlay_arrays import overlay_arrays
from ..model import SymbolInfo

_load_locks: dict[str, threading.Lock] = {}
_exit_hook = False
TEST_PATH_RE2 = arrays.TEST_PATH_RE2
HOT = ("symbol_id", "stable_id", "path", "language", "kind", "name", "qualified_name", "fq_name",
       "signature", "start_line", "end_line", "top_level", "in_tests")
KEYS = arrays.SYMBOL_KEYS
COLD = ("doc", "visibility", "modifiers", "start_col", "end_col", "name_line", "parent_id",
        "body_hash", "ordinal", "raw_fq_key", "has_fq", "raw_is_fq")
_INFO_COLD = COLD[:8]
T = TypeVar("T")
# Lookup columns of `SymbolTable.where` (the SQL path's `WHERE column = ?`).
COLUMNS = ("symbol_id", "stable_id", "parent_id", "path", "qualified_name", "name")
SEARCHED = ("name_key", "qualified_key", "fq_key", "name")  # the key indexes a symbol search reads


def has_names(view: IndexView) -> bool:
    """Does the assembly carry module-qualified names (`symbol_names.fq_name`)?"""
    return view.has_table("symbol_names") and view.has_column("symbol_names", "fq_name")


def has_fq_keys(view: IndexView) -> bool:
    return view.has_table("symbol_names") and view.has_column("symbol_names", "fq_key")


def load_sql(view: IndexView) -> str:
    return arrays.symbols_sql(has_names(view), has_fq_keys(view))


def structure_arrays(view: IndexView, structure: str, sql: str, *, lazy: bool = False,
                     read: Callable | None = None) -> dict:
    """A resident structure's parts: memory-mapped from the assembly when it wrote them
    (format/resident.py), merged from its base's when `view` is an overlay
    (overlay_arrays.py; `lazy`: key indexes merged on first use), else built from `sql`'s
    rows (`read`: what makes the builder's rows of them; an assembly without the arrays)."""
    mapped = None
    if view.base_id is not None:
        mapped = overlay_arrays(view, structure, sql, lazy=lazy)
    else:
        try:
            check_resident(view, structure)
        except AssemblyVanished:  # pruned since the view opened: the database is still open, read it
            pass
        else:
            mapped = arrays.map_arrays(view.path.parent, structure)
    if mapped is not None:
        return mapped
    rows = view.cursor().sql(sql).to_arrow_table()
    return arrays.STRUCTURES[structure][0](read(rows) if read is not None else rows)


class _NumberColumn:
    """An integer or boolean Arrow column read as Python ints/bools."""

    def __init__(self, column) -> None:
        array = whole(column)
        self._cast = bool if array.type == "bool" else int
        self._valid = None if array.null_count == 0 else array.is_valid().to_numpy(zero_copy_only=False)
        if self._valid is not None:
            array = array.fill_null(self._cast(0))
        self._values = array.to_numpy(zero_copy_only=False)  # in place for integers

    def __getitem__(self, i: int):
        if self._valid is not None and not self._valid[i]:
            return None
        return self._cast(self._values[i])


_RECENT_ROWS = 1 << 14  # about 8 MiB of SymbolRows at most


class SymbolRows(Sequence):
    """The rows' hot fields as `SymbolRow`s, read from the columns on access."""

    def __init__(self, table) -> None:
        import pyarrow as pa

        columns = {n: rows_column(table, n) for n in HOT}
        self._columns = [c if isinstance(c, READ_COLUMNS) else StringColumn(c)
                         if pa.types.is_string(c.type) or pa.types.is_dictionary(c.type)
                         else _NumberColumn(c) for c in columns.values()]
        self._len = table.num_rows
        self._recent: dict[int, SymbolRow] = {}  # rows read lately (a ranking reads each again)

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self._len))]
        if i < 0:
            i += self._len
        row = self._recent.get(i)
        if row is None:
            if not 0 <= i < self._len:
                raise IndexError(i)
            if len(self._recent) >= _RECENT_ROWS:
                self._recent.clear()
            row = self._recent[i] = SymbolRow(*(c[i] for c in self._columns))
        return row


class _LazyIndex:
    """A KeyIndex made from the table `make()` returns on its first use, once whatever the
    threads asking (an overlay's merged index: a symbol search merges the two or three it
    reads, not all ten)."""

    def __init__(self, make: Callable[[], object], keys=None, folded: bool = False) -> None:
        self._make: Callable[[], object] | None = make
        self._keys, self._folded = keys, folded  # a permuted or folded index's column (KeyIndex)
        self._index: KeyIndex | None = None
        self._lock = threading.Lock()

    def made(self) -> KeyIndex:
        if self._index is None:
            with self._lock:
                if self._index is None:
                    self._index = KeyIndex(self._make(), self._keys, self._folded)
                    self._make = None
        return self._index

    def __getattr__(self, name: str):
        return getattr(self.made(), name)


class _FirstRow(Mapping):
    """key -> its first row, over a KeyIndex (the symbol_id index: one row per key)."""

    def __init__(self, index: KeyIndex) -> None:
        self.index = index

    def __getitem__(self, key: str) -> int:
        row = self.index.first(key) if isinstance(key, str) else None
        if row is None:
            raise KeyError(key)
        return row

    def __iter__(self) -> Iterator[str]:
        return iter(self.index.keys)

    def __len__(self) -> int:
        return len(self.index.keys)


class SymbolTable:
    """One manifest's symbols; row numbers index `rows` (ordered by path, line, ordinal)."""

    def __init__(self, table=None, parts: dict | None = None,
                 name_tables: Callable[[], dict] | None = None) -> None:
        """From the rows of `load_sql` (`table`), or from their resident `parts`;
        `name_tables()`: the resident `names` structure (NameIndex)."""
        parts = parts if parts is not None else arrays.symbol_arrays(table)
        main = parts["rows"]
        self.rows = SymbolRows(main)
        self.cold = main.select(list(COLD))
        self._cold_arrays = {n: whole(self.cold.column(n)) for n in COLD}
        # Dictionary-encoded cold columns read per value through their codes: Arrow's
        # take().to_pylist() and scalar as_py() on a dictionary cost 2-3x a plain string's.
        self._cold_strings = {n: StringColumn(self._cold_arrays[n]) for n in COLD
                              if n in arrays.SYMBOL_DICTIONARY}
        hexes = {n: rows_column(main, n) for n in COLD if n in arrays.HEX}  # ids kept as bytes
        self._cold_strings.update({n: c for n, c in hexes.items() if isinstance(c, READ_COLUMNS)})
        keys = {n: rows_column(main, n) if n in arrays.SYMBOL_PERMUTED else
                rows_column(main, arrays.FOLDED[n]) if n in arrays.FOLDED else None for n in arrays.SYMBOL_INDEXES}
        folded = {n: n in arrays.FOLDED for n in arrays.SYMBOL_INDEXES}
        self._index = {n: _LazyIndex(parts[n], keys[n], folded[n]) if callable(parts[n])
                       else KeyIndex(parts[n], keys[n], folded[n]) for n in arrays.SYMBOL_INDEXES}
        self.by_id: Mapping[str, int] = _FirstRow(self._index["symbol_id"])
        self.ordinals = self._cold_arrays["ordinal"].to_numpy(zero_copy_only=False)
        self.names = NameIndex(self.rows, by_name=self._index["name_key"],
                               by_qualified=(self._index["qualified_key"], self._index["fq_key"]),
                               by_written_name=self._index["name"], name_tables=name_tables)

    @classmethod
    def load(cls, view: IndexView) -> "SymbolTable":
        """The view's symbol table, loaded on first use (an overlay's key indexes are merged
        when a look-up first needs one: `warm` merges those a search reads, `complete` all)."""
        return resident(view, "symbol_table", cls.warm, partial(cls._loaded, view))

    @classmethod
    def _loaded(cls, view: IndexView) -> "SymbolTable":
        view.loaded(cls.complete, late=True)
        return cls(parts=structure_arrays(view, "symbols", load_sql(view), lazy=True),
                   name_tables=partial(_name_tables, weakref.ref(view)))

    @classmethod
    def warm(cls, view: IndexView, indexes: tuple[str, ...] = SEARCHED) -> "SymbolTable":
        """The view's symbol table with `indexes` made (IndexFollower loads a new manifest's
        with those a symbol search reads, and `complete`s it once its other tables are in)."""
        table = cls.load(view)
        for name in indexes:
            index = table._index[name]
            if isinstance(index, _LazyIndex):
                index.made()
        return table

    @classmethod
    def complete(cls, view: IndexView) -> "SymbolTable":
        return cls.warm(view, arrays.SYMBOL_INDEXES)

    def __len__(self) -> int:
        return len(self.rows)

    # ---- lookups: ascending row numbers -------------------------------------------------------
    def where(self, column: str, value: str) -> list[int]:
        """Rows whose `column` (one of COLUMNS) equals `value`."""
        if column not in COLUMNS:
            raise ValueError(f"no lookup by {column}")
        if column == "symbol_id":
            i = self.by_id.get(value)
            return [] if i is None else [i]
        if column == "parent_id" and value not in self.by_id:
            return []
        return self._index[column].rows_of(value)

    def fq_matches(self, handle: str) -> list[int]:
        """Rows whose `symbol_names` entry has fq_name = handle or fq_key = handle with `::`
        and `#` folded to `.` (the SQL path's first name tier)."""
        key = handle.replace("::", ".").replace("#", ".")
        by_fq = self._index["fq_name"]
        cand = set(by_fq.rows_of(handle)) | set(by_fq.rows_of(key))
        cand |= set(self._index["raw_fq_key"].rows_of(key))
        has_fq = self._cold_arrays["has_fq"]
        raw_key, raw_is_fq = self._cold_arrays["raw_fq_key"], self._cold_arrays["raw_is_fq"]
        return sorted(i for i in cand if (has_fq[i].as_py() and self.rows[i].fq_name == handle)
                      or (self.rows[i].fq_name if raw_is_fq[i].as_py() else raw_key[i].as_py()) == key)

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

    def standing(self, rows: list[int]) -> list[tuple[str, bool]]:
        """(visibility, has a doc comment) of each row, in the order given: what symbol
        search breaks ties between same-name definitions on (query/symbols.py)."""
        visibility = self._cold_values("visibility", rows)
        if len(rows) <= 64:  # per value beats the array calls' fixed cost for a few rows
            doc = self._cold_arrays["doc"]
            return [(v, bool(doc[i].as_py())) for v, i in zip(visibility, rows)]
        import pyarrow as pa  # as in _cold_values: loaded by now, the import only binds it
        import pyarrow.compute as pc

        taken = pa.array(rows, type=pa.int64())
        docs = pc.fill_null(pc.greater(pc.utf8_length(self._cold_arrays["doc"].take(taken)), 0), False)
        return list(zip(visibility, docs.to_pylist()))

    def _cold_values(self, name: str, rows: list[int]) -> list:
        if name in self._cold_strings:
            strings = self._cold_strings[name]
            return [strings[i] for i in rows]
        array = self._cold_arrays[name]
        if len(rows) <= 32:  # per value beats a take() call's fixed cost for a few rows
            return [array[i].as_py() for i in rows]
        import pyarrow as pa

        return array.take(pa.array(rows, type=pa.int64())).to_pylist()

    def at(self, path: str, ordinal: int) -> int | None:
        """The row of the symbol at `ordinal` in `path`."""
        return self.at_many([(path, ordinal)]).get((path, ordinal))

    def at_many(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
        """The row of each (path, ordinal) that names a symbol; each path looked up once (a
        BM25 answer asks for ~200 symbols of ~60 files)."""
        by_path: dict[str, list[int]] = {}
        for path, ordinal in keys:
            by_path.setdefault(path, []).append(ordinal)
        out = {}
        for path, ordinals in by_path.items():
            rows = self._index["path"].rows_of(path)
            if not rows:
                continue
            lo = rows[0]
            segment = self.ordinals[lo:rows[-1] + 1]
            for ordinal in ordinals:
                found = (segment == ordinal).nonzero()[0]
                if len(found):
                    out[(path, ordinal)] = lo + int(found[0])
        return out


def _no_loader(view: IndexView) -> None:
    """Structures loaded through another's (the name tables: through the symbol table's)."""


def _name_tables(view_ref: weakref.ref) -> dict:
    """The resident `names` structure of the view (held weakly: a table referring to its
    view would make a cycle, kept past the view's close by the frozen GC)."""
    view = view_ref()
    if view is None:
        raise RuntimeError("the view of this symbol table is gone")
    return resident(view, "name_tables", _no_loader,
                    lambda: structure_arrays(view, "names", arrays.NAMES_SQL))


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
