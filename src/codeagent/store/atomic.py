"""The one atomic write: temp file in the store, write, fsync, rename, fsync the directory
(restic's `Save`), and what a disk error turns into."""

from __future__ import annotations

import errno
import itertools
import os
from pathlib import Path

from ..errors import StoreWriteFailed
from . import faults

TMP_PREFIX = ".tmp-"


def fsync_file(path: str) -> None:
    """fsync a file by name; one deleted meanwhile (gc, a merged pack) needs no flush."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(path: Path | str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


_tmp_names = itertools.count()
_tmp_stem = ""


def _tmp_name() -> str:
    """A temp file name unique among live writers: pid, a random tag per process, a counter
    (O_EXCL still refuses a clash with a file a dead process left behind)."""
    global _tmp_stem
    if not _tmp_stem.startswith(f"{TMP_PREFIX}{os.getpid()}-"):  # first use, or a forked child
        _tmp_stem = f"{TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}-"
    return f"{_tmp_stem}{next(_tmp_names)}"


def atomic_write(path: Path | str, data: bytes, tmp_dir: Path | str, *, durable: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part.

    The temp file lives in `tmp_dir` (same filesystem), is flushed (and fsynced when
    `durable`), then renamed over `path`; on any error, or an interrupt, the temp file is removed.
    """
    if faults.nonatomic():
        return faults.write_in_place(path, data)
    tmp = os.path.join(tmp_dir, _tmp_name())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            fault = faults.injected_fault(path)
            if fault is not None:
                raise fault
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        faults.step(f"write {os.path.basename(path)}")
        os.replace(tmp, path)
        if durable:
            fsync_dir(os.path.dirname(path))
    except BaseException as exc:  # a Ctrl-C too: an interrupted build leaves no temp file
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if not isinstance(exc, OSError):
            raise
        raise StoreWriteFailed(
            f"could not write {os.path.basename(path)}: {os.strerror(exc.errno or errno.EIO)}",
            hint="free disk space or fix the store's file system, then build again; "
            "the previous index is untouched",
        ) from exc


_DISK_ERRNOS = (errno.ENOSPC, errno.EIO, errno.EDQUOT, errno.EROFS, errno.EFBIG)


def disk_write_failure(exc: BaseException) -> StoreWriteFailed | None:
    """A StoreWriteFailed for a disk error raised outside atomic_write (mkdir, copy, DuckDB)."""
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
        cause = os.strerror(exc.errno)
    else:
        text = str(exc)
        cause = next((os.strerror(e) for e in _DISK_ERRNOS if os.strerror(e) in text), None)
        if cause is None or type(exc).__module__.split(".")[0] not in ("duckdb", "_duckdb", "pyarrow"):
            return None
    return StoreWriteFailed(
        f"could not write the index: {cause}",
        hint="free disk space or fix the store's file system, then build again; "
        "the previous index is untouched",
    )


