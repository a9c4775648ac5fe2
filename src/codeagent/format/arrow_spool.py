"""An Arrow IPC file of one record batch, written from batches without holding its columns.

Each column's batches are appended to spool files, one per Arrow buffer (bitmaps as a byte a
row, packed when the column is finished). The file is then written by Arrow's own IPC writer
from arrays over the memory-mapped spool files; its writes of those buffers are copied file to
file by the kernel (`copy_file_range`), so no page of them enters this process. The bytes are
those the writer gives the same table held in memory: one record batch, dictionaries in
first-appearance order (as `dictionary_encode` assigns them).

A `SpoolMemory` keeps a structure's spool files in memory up to a byte limit (then they all
go to disk, as before): below it the file's bytes are written once, not spooled to disk and
copied (on the standard library the spool was ~40% of the bytes a cold build wrote).

Supported column types: fixed-width numbers, bool, string, list of a supported type, and
dictionary<string, int32> (from string batches).
"""

from __future__ import annotations

import bisect
import io
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa

from .. import kernels

_PACK_ROWS = 1 << 23  # bytes of a byte-a-row bitmap packed at once (a multiple of 8)


def _bits(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    """A bitmap's bits offset..offset+n as a byte each (all 1 when there is no bitmap)."""
    if buffer is None:
        return np.ones(n, np.uint8)
    packed = np.frombuffer(buffer, np.uint8, count=(offset + n + 7) // 8)
    return np.unpackbits(packed, bitorder="little")[offset:offset + n]


def _tail(buffer: pa.Buffer | None, end: int, pad: int) -> int:
    """The `pad` bits of a bitmap from bit `end` (past a batch's rows) as the high bits of a
    byte (0 where the source has none). A column that came in one batch keeps them in its last
    byte, as the IPC writer writes that array as given; one concatenated from several batches
    has 0 there, as Arrow's concatenation leaves it."""
    if buffer is None or pad == 0 or (end + pad + 7) // 8 > buffer.size:
        return 0
    bits = np.unpackbits(np.frombuffer(buffer, np.uint8, count=(end + pad + 7) // 8), bitorder="little")
    return int(np.packbits(np.concatenate([np.zeros(8 - pad, np.uint8), bits[end:end + pad]]),
                           bitorder="little")[0])


class _MemoryFile:
    """A spool file held in memory until its SpoolMemory rolls every file over to disk."""

    def __init__(self, path: Path, owner: SpoolMemory) -> None:
        self.path, self.owner = path, owner
        self.buf: io.BytesIO | None = io.BytesIO()
        self.disk = None

    def write(self, data) -> int:
        if self.disk is not None:
            return self.disk.write(data)
        n = self.buf.write(data)
        self.owner.charge(n)
        return n

    def to_disk(self) -> None:
        if self.disk is None:
            self.disk = open(self.path, "wb")
            self.disk.write(self.buf.getbuffer())
            self.buf = None

    def close(self) -> None:
        if self.disk is not None:
            self.disk.close()


class SpoolMemory:
    """The memory a structure's spool files may hold (`limit` bytes, shared by its spools);
    past it every file goes to disk and new ones are opened there. 0: all on disk."""

    def __init__(self, limit: int = 0) -> None:
        self.limit, self.used = limit, 0
        self.files: list[_MemoryFile] = []

    def open(self, path: Path):
        if self.limit <= 0:
            return open(path, "wb")
        self.files.append(_MemoryFile(path, self))
        return self.files[-1]

    def charge(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            self.limit = 0
            for f in self.files:
                f.to_disk()
            self.files = []


_ON_DISK = SpoolMemory()


class Spool:
    """One column's buffers, appended batch by batch to files under `directory` (in memory
    while `memory` allows); `given`: the file is to be the batches' arrays as given (False: as
    Arrow's `take` of them builds them anew, with 0 in a bitmap past the rows)."""

    def __init__(self, directory: Path, type_: pa.DataType, given: bool = True,
                 memory: SpoolMemory = _ON_DISK) -> None:
        directory.mkdir(parents=True)
        self.directory, self.type, self.given = directory, type_, given
        self.length = self.null_count = 0
        self.files = {"valid": memory.open(directory / "valid")}
        self.child: Spool | None = None
        self.size = 0  # data bytes (string) or child rows (list) so far
        self.tails = {"valid": 0, "data": 0}  # the bitmaps' bits past the last row (`_tail`)
        self.batches = 0
        if pa.types.is_dictionary(type_):
            if type_.index_type != pa.int32() or type_.value_type != pa.string():
                raise TypeError(f"a spooled dictionary is dictionary<string, int32>, not {type_}")
            self.codes: dict[str, int] = {}
            self.files["data"] = memory.open(directory / "data")
        elif pa.types.is_string(type_) or pa.types.is_list(type_):
            self.files["offsets"] = memory.open(directory / "offsets")
            self.files["offsets"].write(np.zeros(1, np.int32).tobytes())
            if pa.types.is_list(type_):
                self.child = Spool(directory / "child", type_.value_type, given, memory)
            else:
                self.files["data"] = memory.open(directory / "data")
        elif (pa.types.is_boolean(type_) or pa.types.is_fixed_size_binary(type_)
              or (pa.types.is_primitive(type_) and type_.bit_width % 8 == 0)):
            self.files["data"] = memory.open(directory / "data")
        else:
            raise TypeError(f"no spool for Arrow type {type_}")

    def append(self, array: pa.Array) -> None:
        n, off, buffers = len(array), array.offset, array.buffers()
        self.batches += 1  # empty ones too: Arrow concatenates a list's children, empty or not
        if n == 0:
            return
        valid = _bits(buffers[0], off, n) if array.null_count else np.ones(n, np.uint8)
        self.files["valid"].write(valid.tobytes())
        self.length += n
        pad = -self.length % 8
        # a dictionary column's bitmap is dictionary_encode's, made anew (0 past the rows)
        self.tails["valid"] = 0 if pa.types.is_dictionary(self.type) else _tail(buffers[0], off + n, pad)
        self.null_count += array.null_count
        if pa.types.is_dictionary(self.type):
            self._append_codes(array, valid)
        elif self.child is not None or pa.types.is_string(self.type):
            offsets = np.frombuffer(buffers[1], np.int32, count=off + n + 1)[off:]
            start, stop = int(offsets[0]), int(offsets[-1])
            if self.size + stop - start > np.iinfo(np.int32).max:
                raise OverflowError(f"a {self.type} column of more than 2 GiB: its offsets overflow")
            self.files["offsets"].write((offsets[1:] - start + self.size).astype(np.int32).tobytes())
            self.size += stop - start
            if self.child is not None:
                self.child.append(array.values.slice(start, stop - start))
            else:
                self.files["data"].write(memoryview(buffers[2])[start:stop] if stop > start else b"")
        elif pa.types.is_boolean(self.type):
            self.files["data"].write(_bits(buffers[1], off, n).tobytes())
            self.tails["data"] = _tail(buffers[1], off + n, pad)
        else:
            width = self.type.bit_width // 8
            self.files["data"].write(memoryview(buffers[1])[off * width:(off + n) * width])

    def _append_codes(self, array: pa.Array, valid: np.ndarray) -> None:
        """Append a string batch's dictionary codes, numbering its new values after the others."""
        local = kernels.dictionary_encode(array)
        mapping = np.array([self.codes.setdefault(v, len(self.codes)) for v in local.dictionary.to_pylist()]
                           + [0], np.int32)
        indices = np.frombuffer(local.indices.buffers()[1], np.int32, count=local.offset + len(local))
        codes = mapping[np.where(valid.astype(bool), indices[local.offset:], -1)]
        self.files["data"].write(codes.tobytes())

    def finish(self, maps: Mapped) -> pa.Array:
        """The column as one array over the mapped spool files (registered in `maps`)."""
        for fh in self.files.values():
            fh.close()
        f = self.files
        if self.batches > 1 or not self.given:
            self.tails = {"valid": 0, "data": 0}
        validity = maps.bitmap(f["valid"], self.length, self.tails["valid"]) if self.null_count else None
        if pa.types.is_dictionary(self.type):
            dictionary = pa.array(list(self.codes), pa.string())
            return pa.DictionaryArray.from_buffers(self.type, self.length, [validity, maps.buffer(f["data"])],
                                                   dictionary, null_count=self.null_count)
        if self.child is not None:
            return pa.Array.from_buffers(self.type, self.length, [validity, maps.buffer(f["offsets"])],
                                         null_count=self.null_count, children=[self.child.finish(maps)])
        if pa.types.is_string(self.type):
            buffers = [validity, maps.buffer(f["offsets"]), maps.buffer(f["data"])]
        elif pa.types.is_boolean(self.type):
            buffers = [validity, maps.bitmap(f["data"], self.length, self.tails["data"])]
        else:
            buffers = [validity, maps.buffer(f["data"])]
        return pa.Array.from_buffers(self.type, self.length, buffers, null_count=self.null_count)


def _path(spooled) -> Path:
    """The file of a spool file on disk (a path, a _MemoryFile rolled over, or an open file)."""
    if isinstance(spooled, Path):
        return spooled
    return spooled.path if isinstance(spooled, _MemoryFile) else Path(spooled.name)


class Mapped:
    """The spool files mapped for one write, by address: the sink copies a write that lies in
    one from the file instead of reading its pages."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, int]] = []  # (start, end, fd), sorted by start
        self.open: list = []

    def buffer(self, spooled) -> pa.Buffer:
        """A spool file's bytes (`spooled`: as Spool.files holds it), mapped when on disk."""
        if isinstance(spooled, _MemoryFile) and spooled.disk is None:
            return pa.py_buffer(spooled.buf.getbuffer())  # written to the output by os.write
        path = _path(spooled)
        size = path.stat().st_size
        if size == 0:
            return pa.py_buffer(b"")
        mapped = pa.memory_map(str(path), "r")
        fd = os.open(path, os.O_RDONLY)
        self.open += [mapped, fd]
        buf = mapped.read_buffer(size)
        i = bisect.bisect(self.starts, buf.address)
        self.starts.insert(i, buf.address)
        self.spans.insert(i, (buf.address, buf.address + size, fd))
        return buf

    def bitmap(self, spooled, length: int, tail: int = 0) -> pa.Buffer:
        """The byte-a-row spool file `spooled` packed into a bitmap (a file, mapped, when it
        is on disk); `tail`: the high bits of its last byte past the rows."""
        if isinstance(spooled, _MemoryFile) and spooled.disk is None:
            bits = bytearray(np.packbits(np.frombuffer(spooled.buf.getbuffer(), np.uint8), bitorder="little"))
            if length % 8 and tail:
                bits[length // 8] |= tail
            return pa.py_buffer(bits)
        path = _path(spooled)
        packed = path.with_name(path.name + ".bits")
        with open(path, "rb") as src, open(packed, "wb") as out:
            for _ in range(0, length, _PACK_ROWS):
                out.write(np.packbits(np.frombuffer(src.read(_PACK_ROWS), np.uint8), bitorder="little").tobytes())
        if length % 8 and tail:
            with open(packed, "r+b") as out:
                out.seek(length // 8)
                last = out.read(1)[0]
                out.seek(length // 8)
                out.write(bytes([last | tail]))
        return self.buffer(packed)

    def find(self, address: int, size: int) -> tuple[int, int] | None:
        """(fd, offset in its file) of a mapped range, or None."""
        i = bisect.bisect(self.starts, address) - 1
        if i >= 0 and address + size <= self.spans[i][1]:
            return self.spans[i][2], address - self.spans[i][0]
        return None

    def close(self) -> None:
        for item in self.open:
            item.close() if not isinstance(item, int) else os.close(item)
        self.open = []


class _Sink:
    """A raw output file for pa.PythonFile: writes of mapped spool buffers are copied by the
    kernel, the rest (metadata, padding, small dictionaries) written as given."""
    closed = False

    def __init__(self, fd: int, maps: Mapped) -> None:
        self.fd, self.maps, self.pos = fd, maps, 0

    def write(self, data) -> int:
        view = memoryview(data) if not isinstance(data, pa.Buffer) else None
        size = data.size if view is None else view.nbytes
        source = self.maps.find(data.address, size) if view is None and size else None
        if source is not None:
            _copy(source[0], self.fd, source[1], size)
        else:
            view = view if view is not None else memoryview(data)
            done = 0
            while done < size:
                done += os.write(self.fd, view[done:])
        self.pos += size
        return size

    def tell(self) -> int:
        return self.pos

    def writable(self) -> bool:
        return True

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _copy(src: int, dst: int, offset: int, size: int) -> None:
    """`size` bytes of file `src` from `offset`, appended to `dst` at its position."""
    while size:
        try:
            done = os.copy_file_range(src, dst, size, offset)
        except (AttributeError, OSError):  # no copy_file_range here, or not between these files
            done = os.write(dst, os.pread(src, min(size, 1 << 22), offset))
        if done <= 0:
            raise OSError(f"copying a spooled buffer stopped with {size} bytes left")
        offset, size = offset + done, size - done


def write_spooled(path: Path, schema: pa.Schema, spools: list[Spool],
                  adjust: Callable[[list[str], list[pa.Array]], list[pa.Array]] | None = None) -> None:
    """Write `spools` (one per field of `schema`, in order) as the IPC file `path`: one record
    batch, none when they are empty (as `write_table` writes an empty table); `adjust`: maps
    the columns (names, arrays) to those written, the fields' types following theirs."""
    maps = Mapped()
    try:
        arrays = [s.finish(maps) for s in spools]
        if adjust is not None:
            arrays = adjust(schema.names, arrays)
            schema = pa.schema([pa.field(f.name, a.type, f.nullable, f.metadata) for f, a in zip(schema, arrays)],
                               metadata=schema.metadata)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            with pa.ipc.new_file(pa.PythonFile(_Sink(fd, maps), mode="w"), schema) as writer:
                if spools and spools[0].length:
                    writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
        finally:
            os.close(fd)
        del arrays
    finally:
        maps.close()
