"""The resident file texts (RESIDENT_VERSION 6): compressed in blocks, read a block at a time.

The texts are the files' own bytes, so they compress well (zstd: 31.5 MB of standard library
in 6.3 MB); mapped uncompressed they were the largest resident file. The `rows` part holds
each file's path (sorted) with the block holding its text and the text's place in it; the
`blocks` part each block's compressed bytes and its size. A block holds whole files, in path
order, until it passes BLOCK_BYTES, so the blocks decompressed one after another are every
text in path order: a reader wanting one file decompresses its block (~0.1 ms), grep
decompresses them all into one Arrow string array (~20 ms on the standard library) and scans
that. A long-lived reader keeps what it decompressed until it is idle (`forget_decompressed`,
called with format.resident.drop_mapped_pages), as it kept the mapped pages it had read.

`TextBlocks` builds the parts, fed (path, text) rows in path order in batches of any size:
the blocks depend only on the texts, so the streamed assembly and the in-memory builder write
the same bytes.
"""

from __future__ import annotations

import threading
import weakref
from typing import TYPE_CHECKING

from .columns import StringColumn, value_offsets, whole

if TYPE_CHECKING:
    import pyarrow as pa

BLOCK_BYTES = 256 << 10
CODEC, LEVEL = "zstd", 5
_CACHED_BLOCKS = 16  # decompressed blocks a reader keeps for per-file reads


def _codec():
    import pyarrow as pa

    return pa.Codec(CODEC, compression_level=LEVEL)


class TextBlocks:
    """The texts structure's parts, built from (path, text) rows given in path order."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        self.block: list[int] = []
        self.start: list[int] = []
        self.size: list[int] = []
        self.data: list[bytes] = []
        self.raw_sizes: list[int] = []
        self._pending: list[bytes] = []
        self._pending_bytes = 0
        self._codec = _codec()

    def add(self, table: pa.Table) -> None:
        for path, text in zip(table.column("path").to_pylist(), text_bytes(table.column("text"))):
            if text is not None:
                self.append(path, text)

    def append(self, path: str, text: bytes | memoryview) -> None:
        """One file's text (UTF-8), after every path given before it."""
        self.paths.append(path)
        self.block.append(len(self.data))
        self.start.append(self._pending_bytes)
        self.size.append(len(text))
        self._pending.append(text)
        self._pending_bytes += len(text)
        if self._pending_bytes >= BLOCK_BYTES:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            raw = b"".join(self._pending)
            self.data.append(self._codec.compress(raw, asbytes=True))
            self.raw_sizes.append(len(raw))
            self._pending, self._pending_bytes = [], 0

    def parts(self) -> dict[str, pa.Table]:
        import pyarrow as pa

        self._flush()
        rows = pa.table({"path": pa.array(self.paths, pa.string()), "block": pa.array(self.block, pa.int32()),
                         "start": pa.array(self.start, pa.int32()), "size": pa.array(self.size, pa.int32())})
        blocks = pa.table({"data": pa.array(self.data, pa.binary()), "size": pa.array(self.raw_sizes, pa.int64())})
        return {"rows": rows, "blocks": blocks}


def text_bytes(column: pa.ChunkedArray) -> list[bytes | None]:
    """The UTF-8 bytes of a string column's values (None for a null), from its buffers (no
    pyarrow.compute: a build imports none)."""
    out: list[bytes | None] = []
    for chunk in column.chunks:
        at = value_offsets(chunk).tolist()
        data = chunk.buffers()[2]
        data = memoryview(data) if data is not None else memoryview(b"")
        got = [bytes(data[a:b]) for a, b in zip(at, at[1:])]
        if chunk.null_count:
            got = [t if ok else None for t, ok in zip(got, chunk.is_valid().to_pylist())]
        out += got
    return out


def text_parts(table: pa.Table) -> dict[str, pa.Table]:
    """The parts of (path, text) rows already sorted by path."""
    built = TextBlocks()
    built.add(table)
    return built.parts()


class TextStore:
    """The files' texts of a texts structure's parts (mapped or built), by row (path order)."""

    def __init__(self, parts: dict) -> None:
        rows, blocks = parts["rows"], parts["blocks"]
        self.rows = rows
        self.paths = StringColumn(rows.column("path"))
        self._block, self._start, self._size = (whole(rows.column(c)).to_numpy(zero_copy_only=False).astype("int64")
                                                for c in ("block", "start", "size"))
        self._data = whole(blocks.column("data"))
        self._raw = whole(blocks.column("size")).to_numpy(zero_copy_only=False)
        self._cache: dict[int, memoryview] = {}
        self._whole: tuple | None = None  # (texts, their offsets, their bytes)
        self._lock = threading.Lock()
        _stores.add(self)

    def __len__(self) -> int:
        return len(self.paths)

    def _decompressed(self, b: int) -> memoryview:
        with self._lock:
            got = self._cache.get(b)
        if got is None:
            got = memoryview(_codec().decompress(self._data[b].as_buffer(), int(self._raw[b]), asbytes=True))
            with self._lock:
                while len(self._cache) >= _CACHED_BLOCKS:
                    del self._cache[next(iter(self._cache))]
                self._cache[b] = got
        return got

    def raw(self, i: int) -> bytes:
        """Row i's text as UTF-8 bytes: a copy, so that what a caller keeps (a view's cached
        lines) does not keep a decompressed block, or every text, from `forget`."""
        got = self._whole
        if got is not None:
            _, offsets, data = got
            return bytes(data[int(offsets[i]):int(offsets[i + 1])])
        start = int(self._start[i])
        return bytes(self._decompressed(int(self._block[i]))[start:start + int(self._size[i])])

    def text(self, i: int) -> str:
        return self.raw(i).decode("utf-8")

    def texts(self) -> pa.Array:
        """Every text, decompressed into one Arrow string array (kept until `forget`). The
        blocks are zstd frames stored back to back, and frames one after another decompress
        to their contents one after another: one call writes every text into its place (a
        bytes object: Python's heap, not the Arrow pool, which keeps freed pages in the
        allocating thread's heap, where an idle release from another thread cannot reach)."""
        import numpy as np
        import pyarrow as pa

        got = self._whole
        if got is not None:
            return got[0]
        total = int(self._raw.sum())
        out = _codec().decompress(_frames(self._data), total, asbytes=True) if total else b""
        offsets = np.zeros(len(self._size) + 1, dtype=np.int64)
        np.cumsum(self._size, out=offsets[1:])
        kind = pa.large_string() if total >= 1 << 31 else pa.string()
        if kind == pa.string():
            offsets = offsets.astype(np.int32)
        texts = pa.Array.from_buffers(kind, len(self._size), [None, pa.py_buffer(offsets), pa.py_buffer(out)])
        self._whole = (texts, offsets, memoryview(out))
        return texts

    def forget(self) -> None:
        """Drop what was decompressed (read again on the next use)."""
        with self._lock:
            self._cache.clear()
        self._whole = None


def _frames(blocks: pa.BinaryArray) -> pa.Buffer:
    """The bytes of every value of a binary array, back to back (a slice of its data buffer)."""
    at = value_offsets(blocks)
    return blocks.buffers()[2].slice(int(at[0]), int(at[-1] - at[0]))


_stores: weakref.WeakSet[TextStore] = weakref.WeakSet()


def forget_decompressed() -> None:
    """Every live TextStore's decompressed texts dropped (a long-lived reader gone idle)."""
    for store in list(_stores):
        store.forget()
