"""A long-lived reader's file texts: the assembly's memory-mapped `texts` structure (an
overlay's layered on its base's), compressed in blocks (format/texts.py).

Snippets and spans decompress the block of one file, and grep decompresses them all
(textscan.py), kept until the reader is idle.
"""

from __future__ import annotations

import bisect
from functools import partial
from typing import TYPE_CHECKING

from ..errors import AssemblyVanished, StoreCorrupt
from ..format.resident import TEXT_SHARDS_SQL, map_arrays, text_arrays
from ..format.texts import TextStore
from .assembly_check import check_resident
from .index import IndexView
from .overlay_arrays import overlay_layers
from .symbol_table import resident, structure_arrays

if TYPE_CHECKING:
    import pyarrow as pa


class ResidentTexts:
    """Every indexed file's text by path, read from the resident array (format/resident.py)."""

    def __init__(self, parts: dict) -> None:
        self.store = TextStore(parts)
        self.paths = self.store.paths

    def get(self, path: str) -> str | None:
        i = bisect.bisect_left(self.paths, path)
        return self.store.text(i) if i < len(self.paths) and self.paths[i] == path else None

    def raw(self, path: str) -> memoryview | bytes | None:
        """The path's text as UTF-8 bytes (not decoded)."""
        i = bisect.bisect_left(self.paths, path)
        return self.store.raw(i) if i < len(self.paths) and self.paths[i] == path else None


class LayeredTexts:
    """An overlay's file texts: a masked path's from the overlay's rows, any other's from its
    base's (the base's texts are not copied)."""

    def __init__(self, base: ResidentTexts, changed: ResidentTexts, masked: frozenset[str]) -> None:
        self.base, self.changed, self.masked = base, changed, masked

    def get(self, path: str) -> str | None:
        return (self.changed if path in self.masked else self.base).get(path)

    def raw(self, path: str) -> memoryview | bytes | None:
        return (self.changed if path in self.masked else self.base).raw(path)


def resident_texts(view: IndexView) -> ResidentTexts | LayeredTexts:
    """The view's file texts by path, mapped (layered on its base's for an overlay, or built
    from SQL) on first use."""
    return resident(view, "resident_texts", resident_texts, lambda: _texts(view))


def _texts(view: IndexView) -> ResidentTexts | LayeredTexts:
    read = partial(texts_of, view)
    try:
        layers = overlay_layers(view, "texts", TEXT_SHARDS_SQL, read)
        if layers is not None:
            base, changed, masked = layers
            return LayeredTexts(ResidentTexts(base), ResidentTexts(changed), masked)
        return ResidentTexts(structure_arrays(view, "texts", TEXT_SHARDS_SQL, read=read))
    except StoreCorrupt:  # the texts' arrays are damaged: every text is in a shard, re-hashed as read
        return ResidentTexts(text_arrays(read(view.cursor().sql(TEXT_SHARDS_SQL).to_arrow_table())))


def texts_of(view: IndexView, rows) -> pa.Table:
    """(path, text) of the files of (path, shard) `rows` (an Arrow table, as TEXT_SHARDS_SQL
    gives), read from their shards in the view's store: the texts no resident array holds (an
    overlay's changed files, an assembly whose texts are missing or damaged)."""
    from ..format.shard import shard_texts  # pyarrow.parquet: a reader whose texts are mapped reads none

    return shard_texts(zip(rows.column("path").to_pylist(), rows.column("shard").to_pylist()), view.store.get)


def mapped_texts(view: IndexView) -> ResidentTexts | None:
    """A one-shot reader's file texts mapped from its assembly (a stat and an mmap; selecting
    texts through SQL materialises the whole text column, ~40 ms of CPU on the stdlib for each
    query that touches it), or None: an overlay, or an assembly without them (resident_texts
    then layers or builds them)."""
    got = view.cache.get("mapped_texts", False)
    if got is False:
        got = None
        if view.base_id is None:
            try:
                check_resident(view, "texts")
                parts = map_arrays(view.path.parent, "texts")
            except (AssemblyVanished, StoreCorrupt):  # the SQL path answers, or says what is wrong
                parts = None
            got = ResidentTexts(parts) if parts is not None else None
        view.cache["mapped_texts"] = got
    return got
