"""Assembled artifacts of a manifest: where they live, and the sizes and hashes that say
whether they are still what was written."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

from .. import format as fmt
from ..errors import InvalidParameter, StoreWriteFailed
from ..format.overlay import graph_of
from ..format.resident import RESIDENT_VERSION
from ..hashing import hash_stream, is_object_id
from .atomic import atomic_write

# A stamp is trusted only for a file whose ctime was at least this far behind the clock when
# its hash was checked: a later write then moves the ctime even on a file system whose
# timestamps are taken from a coarse clock (one tick: 1-10 ms on Linux). A ctime on a whole
# second suggests timestamps of one or two seconds (FAT, ext3, HFS+).
_STAMP_MARGIN_NS = 100_000_000
_COARSE_MARGIN_NS = 2_000_000_000


class AssemblyMixin:
    """Store's assembled-artifact methods."""

    root: Path

    def assembled_dir(self, manifest_id: str) -> Path:
        if not is_object_id(manifest_id):
            raise InvalidParameter(f"not a manifest id: {manifest_id!r}")
        return self.root / fmt.ASSEMBLED_DIR / manifest_id

    def is_assembled(self, manifest_id: str) -> bool:
        """The manifest's query artifacts exist, complete, in this codeagent's layout."""
        try:
            marker = (self.assembled_dir(manifest_id) / fmt.COMPLETE_MARKER).read_text()
        except OSError:
            return False
        return marker == complete_marker(manifest_id)

    def assembly_base(self, manifest_id: str) -> str | None:
        """The manifest whose database an overlay assembly reads with its own (format/overlay.py);
        None for a full assembly (or none), "" for an unreadable overlay marker."""
        try:
            marker = json.loads((self.assembled_dir(manifest_id) / fmt.OVERLAY_MARKER).read_bytes())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            return ""
        return str(marker.get("base", "")) if isinstance(marker, dict) else ""

    def graph_landed(self, manifest_id: str) -> bool:
        """Has the overlay assembly of `manifest_id` its graph part in place (format/overlay.py,
        GRAPH_PART)?"""
        part = self.assembled_dir(manifest_id) / fmt.GRAPH_PART
        try:
            return (part / fmt.COMPLETE_MARKER).read_text() == complete_marker(manifest_id)
        except OSError:
            return False

    def graph_source(self, manifest_id: str) -> str:
        """The manifest whose graph the assembly of `manifest_id` answers from: its own, or,
        for an overlay published before its graph step whose graph part has not landed, the
        one its marker's "graph" names (format/overlay.py)."""
        try:
            marker = json.loads((self.assembled_dir(manifest_id) / fmt.OVERLAY_MARKER).read_bytes())
        except (OSError, ValueError):
            return manifest_id
        if not isinstance(marker, dict):
            return manifest_id
        return graph_of(marker, manifest_id, self.graph_landed(manifest_id))

    def graph_pending(self, manifest_id: str) -> bool:
        """Is `manifest_id` an overlay published before its graph step, not landed yet?"""
        return self.graph_source(manifest_id) != manifest_id

    def assembly_problems(self, manifest_id: str, *, deep: bool = True, trust_mtime: bool = False,
                          which: Callable[[str], bool] | None = None,
                          stamped: bool = False) -> list[str]:
        """Why a manifest's assembled files cannot be trusted ([] when intact): each file is
        checked against the size (and, when `deep`, the blake3) recorded in SUMS. With
        `trust_mtime`, a file whose mtime is still the one recorded is not re-hashed (this
        catches every rewrite, not bit rot: `verify` and readers re-hash). With `stamped` (the
        readers), a file whose stat is still the one its last check recorded in VERIFIED is
        not re-hashed, and the files hashed intact are recorded there (see `_stamp_entry`).
        `which`: check only the files it accepts (by name). An overlay's landed graph part
        (format/overlay.py, GRAPH_PART) is checked the same way against its own SUMS."""
        directory = self.assembled_dir(manifest_id)
        problems = self._sums_problems(directory, deep, trust_mtime, which, stamped)
        if self.graph_landed(manifest_id):
            part = self._sums_problems(directory / fmt.GRAPH_PART, deep, trust_mtime, which, stamped)
            problems += [f"{fmt.GRAPH_PART}/{p}" for p in part]
        return problems

    def _sums_problems(self, directory: Path, deep: bool, trust_mtime: bool,
                       which: Callable[[str], bool] | None, stamped: bool) -> list[str]:
        try:
            sums = json.loads((directory / fmt.ASSEMBLY_SUMS).read_bytes())
        except (OSError, ValueError):
            return [f"{fmt.ASSEMBLY_SUMS} is missing or unreadable"]
        stamps = read_stamps(directory) if stamped else {}
        problems, checked = [], {}
        for name, (size, digest, *mtime) in sorted(sums.items()):
            if which is not None and not which(name):
                continue
            try:
                st = (directory / name).stat()
                if st.st_size != size:
                    problems.append(f"{name} has {st.st_size} bytes, {size} were written")
                elif not deep or (trust_mtime and mtime == [st.st_mtime_ns]):
                    continue
                elif stamps.get(name) == _stamp_entry(st, digest):
                    continue
                else:
                    started = time.time_ns()
                    with open(directory / name, "rb") as fh:
                        if hash_stream(fh) != digest:
                            problems.append(f"{name} does not match the hash recorded when it was written")
                            continue
                        entry = _stamp_entry(os.fstat(fh.fileno()), digest, started)
                    if entry is not None and entry == _stamp_entry(st, digest):
                        checked[name] = entry
            except OSError:
                problems.append(f"{name} is missing")
        if stamped and checked:
            self._record_stamps(directory, checked)
        return problems

    def _record_stamps(self, directory: Path, checked: dict[str, list]) -> None:
        """Add `checked` to the directory's VERIFIED (best effort: a stamp lost to a race, a
        read-only store or a full disk only costs the next reader a hash)."""
        stamps = {**read_stamps(directory), **checked}
        try:
            atomic_write(directory / fmt.ASSEMBLY_STAMPS, json.dumps(stamps, sort_keys=True).encode(),
                         self.root / fmt.TMP_DIR, durable=False)
        except (OSError, StoreWriteFailed):
            pass


def write_assembly_sums(directory: Path, known: dict[str, tuple[int, int, str]] | None = None) -> None:
    """Record size, blake3 and mtime of every file of an assembly being built (before
    COMPLETE), and stamp the files hashed here as verified (VERIFIED, when their ctime is
    old enough: see `_stamp_entry`). `known`: name -> (size, mtime_ns, blake3) of files
    copied from a verified assembly; a file whose size and mtime are still those is not
    hashed again."""
    sums, stamps = {}, {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name not in (fmt.ASSEMBLY_SUMS, fmt.COMPLETE_MARKER, fmt.ASSEMBLY_STAMPS):
            st = path.stat()
            size, mtime, digest = (known or {}).get(path.name, (-1, -1, ""))
            if (size, mtime) != (st.st_size, st.st_mtime_ns):
                started = time.time_ns()
                with open(path, "rb") as fh:
                    digest = hash_stream(fh)
                    entry = _stamp_entry(os.fstat(fh.fileno()), digest, started)
                if entry is not None and entry == _stamp_entry(st, digest):
                    stamps[path.name] = entry
            sums[path.name] = [st.st_size, digest, st.st_mtime_ns]
    (directory / fmt.ASSEMBLY_SUMS).write_text(json.dumps(sums, sort_keys=True))
    if stamps:
        (directory / fmt.ASSEMBLY_STAMPS).write_text(json.dumps(stamps, sort_keys=True))


def read_stamps(directory: Path) -> dict[str, list]:
    """The directory's VERIFIED stamps ({} when absent or unreadable: every file is hashed)."""
    try:
        stamps = json.loads((directory / fmt.ASSEMBLY_STAMPS).read_bytes())
    except (OSError, ValueError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def _stamp_entry(st: os.stat_result, digest: str, checked_ns: int | None = None) -> list | None:
    """What a file's stamp records: the stat fields any write changes (a write moves the
    ctime, which no user can set back; a replaced file has another inode) and the SUMS
    digest it was checked against. With `checked_ns` (when the hash read began): None when
    the ctime is too recent for a later write to be sure to move it (`_STAMP_MARGIN_NS`)."""
    if checked_ns is not None:
        margin = _COARSE_MARGIN_NS if st.st_ctime_ns % 1_000_000_000 == 0 else _STAMP_MARGIN_NS
        if st.st_ctime_ns > checked_ns - margin:
            return None
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, digest]


def complete_marker(manifest_id: str) -> str:
    """Content of an assembled directory's COMPLETE file (names the assembly, graph and
    resident-array layouts: a bump of any makes the next build assemble again, and a reader
    of an older one says to build)."""
    return (f"{manifest_id} assembly {fmt.ASSEMBLY_VERSION} graph {fmt.GRAPH_VERSION} "
            f"resident {RESIDENT_VERSION}\n")


