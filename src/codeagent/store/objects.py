"""The local store: content-addressed objects (immutable, re-hashed on read), with the action
cache, refs and assembled artifacts its mixins add (see the package doc)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .. import format as fmt
from ..errors import IndexMissing, InvalidParameter, StoreCorrupt, StoreWriteFailed
from ..hashing import hash_bytes, is_object_id
from . import faults
from .actions import ActionsMixin, _ActionCache
from .assembly import AssemblyMixin
from .atomic import TMP_PREFIX, atomic_write, fsync_dir, fsync_file
from .damage import damaged_objects, drop_damaged
from .refs import RefsMixin


@dataclass(frozen=True)
class VerifyProblem:
    kind: str  # corrupt_object | misnamed_object | dangling_shard | dangling_ref | bad_manifest | dangling_action
    name: str
    detail: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "detail": self.detail}


class Store(ActionsMixin, RefsMixin, AssemblyMixin):
    """A local store directory (default: REPO/.codeagent)."""

    def __init__(self, root: Path | str, *, create: bool = False, durable: bool = False) -> None:
        self.root = Path(root)
        self.durable = durable
        self._objects_dir = os.path.join(self.root, fmt.OBJECTS_DIR)
        self._tmp = os.path.join(self.root, fmt.TMP_DIR)
        self._fanout_made: set[str] = set()
        self._actions: _ActionCache | None = None
        self._unflushed: list[str] = []  # files written without fsync, flushed at the ref swap
        self._unflushed_dirs: set[str] = set()
        self.decoded_manifests: dict = {}  # format/manifest.load_manifest's, by id
        if create:
            self._init_layout()
        elif not (self.root / fmt.STORE_MARKER).exists():
            # No directory at all is no index yet (exit 5, as every query says before a
            # build), nor is a layout whose creation stopped before its marker (a Ctrl-C at
            # the first step); any other directory without the marker is not ours to read.
            raise IndexMissing(
                f"no index at {self.root}",
                hint="run `codeagent build` in the repository first, or pass --store",
            ) if not self.root.exists() or _never_finished(self.root) else StoreCorrupt(
                f"{self.root} exists but is not a codeagent store (no {fmt.STORE_MARKER} file)",
                hint="pass --store with a codeagent store directory",
            )

    # ---- layout ---------------------------------------------------------------------------
    LAYOUT = (fmt.OBJECTS_DIR, fmt.ACTIONS_DIR, fmt.REFS_DIR, fmt.ASSEMBLED_DIR, fmt.CACHE_DIR,
              fmt.TMP_DIR, fmt.LOGS_DIR)

    def _init_layout(self) -> None:
        try:
            for sub in self.LAYOUT:
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            marker = self.root / fmt.STORE_MARKER
            if not marker.exists():
                atomic_write(marker, f"codeagent store, schema {fmt.SCHEMA_VERSION}\n".encode(),
                             self.tmp_dir)
            gitignore = self.root / ".gitignore"
            if not gitignore.exists():
                atomic_write(gitignore, b"*\n", self.tmp_dir)
        except OSError as exc:
            raise StoreWriteFailed(f"cannot create store at {self.root}: {exc.strerror}") from exc

    @property
    def tmp_dir(self) -> Path:
        return Path(self._tmp)

    def object_path(self, object_id: str) -> Path:
        return Path(self.object_file(object_id))

    def object_file(self, object_id: str) -> str:
        """`object_path` as a string (cheaper where many objects are named)."""
        if not is_object_id(object_id):
            raise InvalidParameter(f"not an object id: {object_id!r}")
        return f"{self._objects_dir}/{object_id[:2]}/{object_id}"

    # ---- objects --------------------------------------------------------------------------
    def has(self, object_id: str) -> bool:
        return os.path.exists(self.object_file(object_id))

    def put(self, data: bytes) -> str:
        """Store `data`; returns its id. An existing object is never rewritten."""
        return self.add(data)[0]

    def add(self, data: bytes) -> tuple[str, bool]:
        """`put` that also tells whether the object was new: (id, written)."""
        object_id = hash_bytes(data)
        return object_id, self._write_object(object_id, data)

    def put_verified(self, object_id: str, data: bytes) -> None:
        """Store bytes that claim to be `object_id` (e.g. downloaded); refuses a mismatch."""
        actual = hash_bytes(data)
        if actual != object_id:
            raise StoreCorrupt(f"object {object_id[:12]} re-hashes to {actual[:12]}")
        self._write_object(object_id, data)

    def _write_object(self, object_id: str, data: bytes) -> bool:
        path = self.object_file(object_id)
        if os.path.exists(path):
            return False
        self._make_fanout(os.path.dirname(path))
        atomic_write(path, data, self._tmp, durable=self.durable)
        self._written(path)
        return True

    def _make_fanout(self, directory: str) -> None:
        if directory not in self._fanout_made:
            os.makedirs(directory, exist_ok=True)
            self._fanout_made.add(directory)
            if not self.durable:
                self._unflushed_dirs.add(os.path.dirname(directory))

    def _written(self, path: str) -> None:
        if not self.durable:
            self._unflushed.append(path)
            self._unflushed_dirs.add(os.path.dirname(path))

    def track_written(self, root: Path | str) -> None:
        """Note a tree this process wrote without fsync (an assembly renamed into place): it
        is flushed with the objects before the next ref swap."""
        faults.step(f"assembled {os.path.basename(root)}")
        if self.durable:
            return
        for dirpath, _dirs, files in os.walk(root):
            self._unflushed_dirs.add(dirpath)
            self._unflushed.extend(os.path.join(dirpath, name) for name in files)
        self._unflushed_dirs.add(os.path.dirname(os.fspath(root)))

    def flush_written(self) -> int:
        """fsync every file this Store wrote without fsync, then the directories that name
        them; returns how many files. Only what this process wrote: flushing the whole machine
        (os.sync) stalls every other program's I/O for seconds."""
        files, self._unflushed = self._unflushed, []
        dirs, self._unflushed_dirs = sorted(self._unflushed_dirs, key=len, reverse=True), set()
        if len(files) > 64:  # fsync waits on the disk, not the GIL: overlap the waits
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(8, thread_name_prefix="fsync") as pool:
                list(pool.map(fsync_file, files))
        else:
            for path in files:
                fsync_file(path)
        for directory in dirs:  # deepest first: a new directory's entry is flushed after it
            fsync_dir(directory)
        return len(files)

    def get(self, object_id: str) -> bytes:
        """Read and re-hash an object; retries once, then raises StoreCorrupt."""
        path = self.object_path(object_id)
        for attempt in range(2):
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                raise StoreCorrupt(
                    f"object {object_id[:12]} is missing from the store",
                    hint="run `codeagent repair` (it re-creates it from the sources), or rebuild or sync",
                ) from None
            if hash_bytes(data) == object_id:
                return data
            if attempt == 0:
                time.sleep(0.01)
        raise StoreCorrupt(
            f"object {object_id[:12]} is corrupt (its bytes do not hash to its name)",
            hint="run `codeagent repair` (it re-creates it from the sources), or rebuild or sync",
        )

    def iter_objects(self) -> Iterator[str]:
        base = self.root / fmt.OBJECTS_DIR
        if not base.exists():
            return
        for sub in sorted(base.iterdir()):
            if sub.is_dir():
                for entry in sorted(sub.iterdir()):
                    if not entry.name.startswith(TMP_PREFIX):
                        yield entry.name

    def present_objects(self) -> set[str]:
        """Ids of every object in the store (one listing per fan-out directory)."""
        out: set[str] = set()
        try:
            subs = os.listdir(self._objects_dir)
        except FileNotFoundError:
            return out
        for sub in subs:
            try:
                out.update(n for n in os.listdir(f"{self._objects_dir}/{sub}") if not n.startswith(TMP_PREFIX))
            except NotADirectoryError:
                continue
        return out

    def damaged_objects(self, ids) -> list[str]:
        """The objects among `ids` whose bytes no longer hash to their names (see damage.py)."""
        return damaged_objects(self, ids)

    def drop_damaged(self, ids) -> set[str]:
        """Delete the damaged objects among `ids` (so they can be written again); returns them."""
        return drop_damaged(self, ids)

    def delete_object(self, object_id: str) -> None:
        faults.step(f"delete {object_id}")
        try:
            self.object_path(object_id).unlink()
        except FileNotFoundError:
            pass

    # ---- maintenance ----------------------------------------------------------------------
    def sweep_tmp(self, *, older_than: float = 0.0) -> int:
        """Remove leftover temp files (from killed writers). Call with the build lock held."""
        removed = 0
        now = time.time()
        for entry in self.tmp_dir.iterdir() if self.tmp_dir.exists() else ():
            try:
                if now - entry.stat().st_mtime >= older_than:
                    if entry.is_dir():
                        import shutil
                        shutil.rmtree(entry, ignore_errors=True)
                    else:
                        entry.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed

    def size_bytes(self) -> int:
        total = 0
        for dirpath, _dirs, files in os.walk(self.root):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
        return total

    def verify_objects(self) -> list[VerifyProblem]:
        problems: list[VerifyProblem] = []
        for object_id in self.iter_objects():
            path = self.object_path(object_id) if is_object_id(object_id) else None
            if path is None:
                problems.append(VerifyProblem("misnamed_object", object_id, "name is not an object id"))
                continue
            actual = hash_bytes(path.read_bytes())
            if actual != object_id:
                problems.append(VerifyProblem("corrupt_object", object_id, f"re-hashes to {actual}"))
        return problems


def _never_finished(root: Path) -> bool:
    """Whether `root` holds only a store layout's folders, each empty but the temp folder: a
    store whose creation stopped before its marker was written."""
    try:
        names = set(os.listdir(root))
        return bool(names) and names <= set(Store.LAYOUT) and not any(
            os.listdir(root / sub) for sub in names if sub != fmt.TMP_DIR)
    except OSError:
        return False
