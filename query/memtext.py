"""An in-memory copy of the `files` table (path, language, status, line_count, text) for
long-lived readers.

Reading 30 MB of text out of DuckDB's on-disk storage costs more than scanning it, so a
server keeps one copy per manifest in an in-memory DuckDB (same RE2 engine, same SQL) and
regex search runs several times faster. One-shot CLI calls read the file directly.

Snippets and spans read one file's text from the resident texts (`resident_texts`: the
assembly's mapped array, no copy), which a first look-up needs without paying for this copy.

The copy also keeps every file's lines split once (`flines(path, lines)`), for the grep
queries that read the lines of many files which mostly do not match (see grep.py).
"""

from __future__ import annotations

import bisect
import threading

from ..format.resident import TEXTS_SQL, StringColumn
from .index import IndexView, thread_cursor
from .overlay_arrays import overlay_layers
from .symbol_table import resident, structure_arrays

_LOAD_SQL = "SELECT path, language, status, line_count, text FROM files"
_FLINES_SQL = """CREATE TABLE flines AS SELECT path, string_split(text, chr(10))[:line_count] AS lines
FROM files WHERE text IS NOT NULL ORDER BY path"""


class TextCopy:
    def __init__(self, view: IndexView) -> None:
        import duckdb

        table = view.cursor().sql(_LOAD_SQL).to_arrow_table()
        self.con = duckdb.connect(":memory:")
        self.con.register("files_arrow", table)
        self.con.execute("CREATE TABLE files AS SELECT * FROM files_arrow ORDER BY path")
        self.con.execute(_FLINES_SQL)
        self.con.unregister("files_arrow")
        self._local = threading.local()
        self._lock = threading.Lock()

    def cursor(self):
        return thread_cursor(self.con, self._local, self._lock)

    def close(self) -> None:
        self.con.close()


_build_lock = threading.Lock()


def text_cursor(view: IndexView):
    """A cursor whose `files` table holds the text: the in-memory copy when the view keeps
    one (`view.keep_text_in_memory`), else the index itself."""
    if not view.keep_text_in_memory:
        return view.cursor()
    return text_copy(view).cursor()


def text_copy(view: IndexView) -> TextCopy:
    """The view's in-memory copy of file texts, made on first use."""
    copy = view.cache.get("text_copy")
    if copy is None:
        with _build_lock:
            copy = view.cache.get("text_copy")
            if copy is None:
                copy = TextCopy(view)
                view.cache["text_copy"] = copy
                view.on_close(copy.close)
                view.loaded(text_copy)
    return copy


class ResidentTexts:
    """Every indexed file's text by path, read from the resident array (format/resident.py)."""

    def __init__(self, parts: dict) -> None:
        rows = parts["rows"]
        self.paths = StringColumn(rows.column("path"))
        self.texts = StringColumn(rows.column("text"))

    def get(self, path: str) -> str | None:
        i = bisect.bisect_left(self.paths, path)
        return self.texts[i] if i < len(self.paths) and self.paths[i] == path else None


class LayeredTexts:
    """An overlay's file texts: a masked path's from the overlay's rows, any other's from its
    base's mapped array (the base's 30 MB of text on the stdlib are not copied)."""

    def __init__(self, base: ResidentTexts, changed: ResidentTexts, masked: frozenset[str]) -> None:
        self.base, self.changed, self.masked = base, changed, masked

    def get(self, path: str) -> str | None:
        return (self.changed if path in self.masked else self.base).get(path)


def resident_texts(view: IndexView) -> ResidentTexts | LayeredTexts:
    """The view's file texts by path, mapped (layered on its base's for an overlay, or built
    from SQL) on first use."""
    return resident(view, "resident_texts", resident_texts, lambda: _texts(view))


def _texts(view: IndexView) -> ResidentTexts | LayeredTexts:
    layers = overlay_layers(view, "texts", TEXTS_SQL)
    if layers is not None:
        base, changed, masked = layers
        return LayeredTexts(ResidentTexts(base), ResidentTexts(changed), masked)
    return ResidentTexts(structure_arrays(view, "texts", TEXTS_SQL))
