"""An assembly's resident texts (format/texts.py), fed from the shards it inserts: the
database keeps no copy of them (ASSEMBLY_VERSION 8).

A full assembly inserts its entries in path order, each batch's shards in memory: their texts
are compressed into blocks there, so no text is read twice (reading them back from the shards
one by one took 0.91-1.20 s of CPU on the stdlib, against 0.39-0.49 s from the database's
column). An incremental one keeps the texts of the entries it inserts and takes every other
file's from its base's resident texts; a text neither has (the base wrote none, or the
entries came out of path order) is read from its shard.
"""

from __future__ import annotations

import bisect

import pyarrow as pa

from ...format.shard import shard_texts
from ...format.texts import TextBlocks, TextStore, text_bytes
from ...store import Store


class AssemblyTexts:
    """The texts of the entries an assembly inserts, given batch by batch (`add`); `full`:
    the assembly inserts every entry (in path order), so the blocks are built as they come."""

    def __init__(self, full: bool) -> None:
        self.blocks: TextBlocks | None = TextBlocks() if full else None
        self.changed: dict[str, bytes] = {}
        self._last: str | None = None

    def add(self, paths: pa.Array, texts: pa.ChunkedArray) -> None:
        """The texts (a string column) of one batch's entries, at `paths`."""
        for path, text in zip(paths.to_pylist(), text_bytes(texts)):
            if text is None:
                continue
            if self.blocks is None:
                self.changed[path] = text
                continue
            if self._last is not None and path <= self._last:  # out of order: read back at the end
                self.blocks = None
            else:
                self.blocks.append(path, text)
            self._last = path

    def built(self, con, store: Store, base_dir) -> TextBlocks:
        """Every indexed file's text in blocks, those not given read from the base's resident
        texts (`base_dir`'s) or from their shards; `con`: the assembled database."""
        if self.blocks is not None:
            return self.blocks
        from ...format.resident import TEXT_SHARDS_SQL  # here: see _base_texts

        rows = sorted(con.execute(TEXT_SHARDS_SQL).fetchall())
        base = _base_texts(base_dir)
        built = TextBlocks()
        missing: list[tuple[str, str]] = []
        for path, shard in rows:
            text = self.changed.get(path)
            if text is None and base is not None:
                text = base(path)
            if text is None:
                missing.append((path, shard))
            else:
                if missing:
                    built.add(shard_texts(missing, store.get))
                    missing = []
                built.append(path, text)
        if missing:
            built.add(shard_texts(missing, store.get))
        return built


def _base_texts(base_dir):
    """A look-up of the base assembly's resident texts by path (UTF-8 bytes or None), or None
    when it wrote none of this RESIDENT_VERSION."""
    from ...format.resident import map_arrays  # here: an overlay's build imports this module, maps none

    parts = map_arrays(base_dir, "texts") if base_dir is not None else None
    if parts is None:
        return None
    store = TextStore(parts)

    def text(path: str):
        i = bisect.bisect_left(store.paths, path)
        return store.raw(i) if i < len(store.paths) and store.paths[i] == path else None

    return text
