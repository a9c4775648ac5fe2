"""The object store: content-addressed objects, a shard-key action cache and ref pointers.

Every write is atomic (temp file in the store, flush, rename); every read of an object
re-hashes it before a caller sees the bytes. Objects are immutable: writing an id that
exists is a no-op. Layout is documented in `format.py`.

Hot paths (a build stores one object and one action entry per parsed file) work on string
paths and create each fan-out directory once per process; action entries are buffered and
written as packs of many entries (see `Store.put_action`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import itertools
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .. import format as fmt
from ..errors import CodeagentError, InvalidParameter, StoreCorrupt, StoreLocked, StoreWriteFailed
from ..hashing import hash_bytes, hash_stream, is_object_id

_TMP_PREFIX = ".tmp-"


def _fsync_file(path: str) -> None:
    """fsync a file by name; one deleted meanwhile (gc, a merged pack) needs no flush."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except (FileNotFoundError, NotADirectoryError):
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: Path | str) -> None:
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


# ---- test-only hooks: the reliability suites (tests/reliability) set these; nothing else may.
# CODEAGENT_TEST_NONATOMIC=1  write in place (no temp file, no rename) with a pause mid-write:
#     the torn-write writer the crash harness must catch (its negative control).
# CODEAGENT_TEST_FAULT=ERRNO[@N|@SUBDIR]  fail store writes with ERRNO (ENOSPC, EIO...) as a
#     full or failing disk would: every write, writes number N and later of this process, or
#     writes under one store subdirectory (objects, actions, refs, cache).
_fault_writes = 0


def _injected_fault(path: Path | str) -> OSError | None:
    global _fault_writes
    spec = os.environ.get("CODEAGENT_TEST_FAULT")
    if not spec:
        return None
    _fault_writes += 1
    name, _, where = spec.partition("@")
    code = getattr(errno, name, errno.EIO)
    if not where or (where.isdigit() and _fault_writes >= int(where)) or where in Path(path).parts:
        return OSError(code, os.strerror(code), str(path))
    return None


def _write_in_place(path: Path | str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data[: len(data) // 2])
        fh.flush()
        time.sleep(0.05)  # a slow disk: widens the torn window
        fh.write(data[len(data) // 2:])


_tmp_names = itertools.count()
_tmp_stem = ""


def _tmp_name() -> str:
    """A temp file name unique among live writers: pid, a random tag per process, a counter
    (O_EXCL still refuses a clash with a file a dead process left behind)."""
    global _tmp_stem
    if not _tmp_stem.startswith(f"{_TMP_PREFIX}{os.getpid()}-"):  # first use, or a forked child
        _tmp_stem = f"{_TMP_PREFIX}{os.getpid()}-{os.urandom(4).hex()}-"
    return f"{_tmp_stem}{next(_tmp_names)}"


def atomic_write(path: Path | str, data: bytes, tmp_dir: Path | str, *, durable: bool = True) -> None:
    """Write `data` to `path` so that readers see the old file or the new one, never a part.

    The temp file lives in `tmp_dir` (same filesystem), is flushed (and fsynced when
    `durable`), then renamed over `path`; on any error the temp file is removed.
    """
    if os.environ.get("CODEAGENT_TEST_NONATOMIC") == "1":
        return _write_in_place(path, data)
    tmp = os.path.join(tmp_dir, _tmp_name())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            fault = _injected_fault(path)
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
        os.replace(tmp, path)
        if durable:
            _fsync_dir(os.path.dirname(path))
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
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


@dataclass(frozen=True)
class VerifyProblem:
    kind: str  # corrupt_object | misnamed_object | dangling_shard | dangling_ref | bad_manifest | dangling_action
    name: str
    detail: str

    def to_dict(self) -> dict:
        return {"kind": self.kind, "name": self.name, "detail": self.detail}


class Store:
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
        if create:
            self._init_layout()
        elif not (self.root / fmt.STORE_MARKER).exists():
            raise StoreCorrupt(
                f"no codeagent store at {self.root}",
                hint="run `codeagent build` in the repository first, or pass --store",
            ) if not self.root.exists() else StoreCorrupt(
                f"{self.root} exists but is not a codeagent store (no {fmt.STORE_MARKER} file)",
                hint="pass --store with a codeagent store directory",
            )

    # ---- layout ---------------------------------------------------------------------------
    def _init_layout(self) -> None:
        try:
            for sub in (fmt.OBJECTS_DIR, fmt.ACTIONS_DIR, fmt.REFS_DIR, fmt.ASSEMBLED_DIR,
                        fmt.CACHE_DIR, fmt.TMP_DIR, fmt.LOGS_DIR):
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
                list(pool.map(_fsync_file, files))
        else:
            for path in files:
                _fsync_file(path)
        for directory in dirs:  # deepest first: a new directory's entry is flushed after it
            _fsync_dir(directory)
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
                    hint="run `codeagent verify`, then rebuild or sync the index",
                ) from None
            if hash_bytes(data) == object_id:
                return data
            if attempt == 0:
                time.sleep(0.01)
        raise StoreCorrupt(
            f"object {object_id[:12]} is corrupt (its bytes do not hash to its name)",
            hint="run `codeagent verify`, delete the object and rebuild or sync",
        )

    def iter_objects(self) -> Iterator[str]:
        base = self.root / fmt.OBJECTS_DIR
        if not base.exists():
            return
        for sub in sorted(base.iterdir()):
            if sub.is_dir():
                for entry in sorted(sub.iterdir()):
                    if not entry.name.startswith(_TMP_PREFIX):
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
                out.update(n for n in os.listdir(f"{self._objects_dir}/{sub}") if not n.startswith(_TMP_PREFIX))
            except NotADirectoryError:
                continue
        return out

    def delete_object(self, object_id: str) -> None:
        try:
            self.object_path(object_id).unlink()
        except FileNotFoundError:
            pass

    # ---- action cache: shard key -> object id ---------------------------------------------
    def _action_cache(self) -> "_ActionCache":
        if self._actions is None:
            self._actions = _ActionCache(self)
        return self._actions

    def get_action(self, key: str) -> str | None:
        """The shard object id for a shard key, "skip:<reason>", or None when unknown."""
        value = self._action_cache().get(key)
        if value is None or value.startswith("skip:"):
            return value
        return value if is_object_id(value) and self.has(value) else None

    def put_action(self, key: str, object_id: str) -> None:
        """Record key -> object id (or "skip:<reason>"). Inside `batched_actions` the entry is
        buffered (visible to `get_action` at once) and written with others as one pack."""
        self._action_cache().put(key, object_id)

    @contextmanager
    def batched_actions(self) -> Iterator[None]:
        """Buffer `put_action`s; they are written on leaving the block (and every
        ACTION_PACK_ENTRIES entries, so an interrupted build keeps most of its work)."""
        cache = self._action_cache()
        cache.depth += 1
        try:
            yield
        except BaseException:
            cache.depth -= 1
            if cache.depth == 0:
                try:
                    cache.flush()
                except (OSError, StoreWriteFailed):
                    pass  # the error in flight says more
            raise
        cache.depth -= 1
        if cache.depth == 0:
            cache.flush()

    def iter_actions(self) -> Iterator[tuple[str, str]]:
        yield from sorted(self._action_cache().all_entries().items())

    def delete_actions(self, keys: Iterable[str]) -> None:
        self._action_cache().delete(set(keys))

    def delete_action(self, key: str) -> None:
        self.delete_actions((key,))

    # ---- refs -----------------------------------------------------------------------------
    def _ref_path(self, ref: str) -> Path:
        parts = ref.split("/")
        if not ref or "\x00" in ref or any(p in ("", ".", "..") or p.startswith(_TMP_PREFIX) for p in parts):
            raise InvalidParameter(f"invalid ref name: {ref!r}")
        return self.root / fmt.REFS_DIR / Path(*parts)

    def read_ref(self, ref: str) -> str | None:
        try:
            value = self._ref_path(ref).read_text().strip()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        if not is_object_id(value):
            raise StoreCorrupt(f"ref {ref} does not hold a manifest id", hint="run `codeagent verify`")
        return value

    def set_ref(self, ref: str, manifest_id: str) -> None:
        """Swap the ref pointer atomically (always durable: it is the commit point)."""
        if not self.has(manifest_id):
            raise StoreCorrupt(f"refusing to point {ref} at absent manifest {manifest_id[:12]}")
        path = self._ref_path(ref)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.flush_written()  # what the ref will name must be on disk before the commit point
        atomic_write(path, f"{manifest_id}\n".encode(), self.tmp_dir, durable=True)

    def delete_ref(self, ref: str) -> None:
        try:
            self._ref_path(ref).unlink()
        except FileNotFoundError:
            pass

    def list_refs(self) -> dict[str, str]:
        base = self.root / fmt.REFS_DIR
        out: dict[str, str] = {}
        if not base.exists():
            return out
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                if name.startswith(_TMP_PREFIX):
                    continue
                ref = (Path(dirpath) / name).relative_to(base).as_posix()
                try:
                    value = self.read_ref(ref)
                except CodeagentError:
                    continue
                if value:
                    out[ref] = value
        return dict(sorted(out.items()))

    # ---- assembled artifacts --------------------------------------------------------------
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

    def assembly_problems(self, manifest_id: str, *, deep: bool = True,
                          trust_mtime: bool = False) -> list[str]:
        """Why a manifest's assembled files cannot be trusted ([] when intact): each file is
        checked against the size (and, when `deep`, the blake3) recorded in SUMS. With
        `trust_mtime`, a file whose mtime is still the one recorded is not re-hashed (this
        catches every rewrite, not bit rot: `verify` and readers re-hash)."""
        directory = self.assembled_dir(manifest_id)
        try:
            sums = json.loads((directory / fmt.ASSEMBLY_SUMS).read_bytes())
        except (OSError, ValueError):
            return [f"{fmt.ASSEMBLY_SUMS} is missing or unreadable"]
        problems = []
        for name, (size, digest, *mtime) in sorted(sums.items()):
            try:
                st = (directory / name).stat()
                actual = st.st_size
                if actual != size:
                    problems.append(f"{name} has {actual} bytes, {size} were written")
                elif deep and not (trust_mtime and mtime == [st.st_mtime_ns]):
                    with open(directory / name, "rb") as fh:
                        if hash_stream(fh) != digest:
                            problems.append(f"{name} does not match the hash recorded when it was written")
            except OSError:
                problems.append(f"{name} is missing")
        return problems

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


ACTION_PACK_ENTRIES = 512  # a batch writes a pack every this many entries
ACTION_PACKS_MAX = 16  # more packs than this are merged into one when the next is written
_PACK_HEADER = b"codeagent-actions 1\n"
_pack_names = itertools.count()


class _ActionCache:
    """The action cache's entries. Written as packs under actions/packs/: a header line, then
    one "key TAB value" line per entry, later packs (by name) winning. Stores from before packs
    kept one file per entry (actions/<2 hex>/<key>); those are still read, never written."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.base = os.path.join(store.root, fmt.ACTIONS_DIR)
        self.packs_dir = os.path.join(self.base, fmt.ACTION_PACKS_DIR)
        self.depth = 0
        self.pid = os.getpid()
        self.pending: dict[str, str] = {}
        for _attempt in range(3):
            if self._load():
                break

    def _load(self) -> bool:
        """Read every pack; False when one vanished meanwhile (merged by another writer)."""
        self.entries: dict[str, str] = {}
        self.packs: list[str] = []
        self.legacy: set[str] = set()
        try:
            self.legacy = {n for n in os.listdir(self.base) if n != fmt.ACTION_PACKS_DIR}
            names = sorted(n for n in os.listdir(self.packs_dir) if not n.startswith(_TMP_PREFIX))
        except FileNotFoundError:
            return True
        for name in names:
            try:
                with open(os.path.join(self.packs_dir, name), "rb") as fh:
                    data = fh.read()
            except FileNotFoundError:
                return False
            if not data.startswith(_PACK_HEADER):
                continue  # a later pack format: neither read nor merged away
            self.packs.append(name)
            for line in data[len(_PACK_HEADER):].decode("utf-8", "replace").split("\n"):
                key, tab, value = line.partition("\t")
                if tab and value:
                    self.entries[key] = value
        return True

    def _legacy_file(self, key: str) -> str:
        return os.path.join(self.base, key[:2], key)

    def get(self, key: str) -> str | None:
        value = self.entries.get(key)
        if value is None and key[:2] in self.legacy and "/" not in key:
            try:
                with open(self._legacy_file(key), encoding="utf-8") as fh:
                    return fh.read().strip() or None
            except (FileNotFoundError, NotADirectoryError):
                return None
        return value

    def put(self, key: str, value: str) -> None:
        if not key or any(c in key for c in "\t\n") or "\n" in value:
            raise InvalidParameter(f"not an action cache entry: {key!r} -> {value!r}")
        if self.entries.get(key) == value:
            return
        self.entries[key] = self.pending[key] = value
        if self.depth == 0 or len(self.pending) >= ACTION_PACK_ENTRIES or os.getpid() != self.pid:
            self.flush()

    def flush(self) -> None:
        """Write the pending entries as a pack (all entries, replacing the packs read, when
        there would be more than ACTION_PACKS_MAX; never in a forked child, whose view of the
        packs is its parent's)."""
        if not self.pending:
            return
        if len(self.packs) >= ACTION_PACKS_MAX and os.getpid() == self.pid:
            self._rewrite()
        else:
            self.packs.append(self._write_pack(self.pending))
        self.pending = {}

    def _write_pack(self, entries: dict[str, str]) -> str:
        name = f"{time.time_ns():020d}-{os.getpid()}-{next(_pack_names)}"
        body = "".join(f"{k}\t{v}\n" for k, v in entries.items()).encode()
        self.store._make_fanout(self.packs_dir)
        path = os.path.join(self.packs_dir, name)
        atomic_write(path, _PACK_HEADER + body, self.store._tmp, durable=self.store.durable)
        self.store._written(path)
        return name

    def _rewrite(self) -> None:
        """Replace the packs read by one pack of every entry (written first: a crash between
        the two steps leaves duplicates, never a loss)."""
        old = self.packs
        self.packs = [self._write_pack(self.entries)] if self.entries else []
        for name in old:
            try:
                os.unlink(os.path.join(self.packs_dir, name))
            except FileNotFoundError:
                pass

    def all_entries(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for sub in sorted(self.legacy):
            directory = os.path.join(self.base, sub)
            if not os.path.isdir(directory):
                continue
            for name in sorted(os.listdir(directory)):
                try:
                    with open(os.path.join(directory, name), encoding="utf-8") as fh:
                        out[name] = fh.read().strip()
                except OSError:
                    continue
        out.update(self.entries)
        return out

    def delete(self, keys: set[str]) -> None:
        for key in keys:
            if key[:2] in self.legacy and "/" not in key:
                try:
                    os.unlink(self._legacy_file(key))
                except (FileNotFoundError, NotADirectoryError):
                    pass
            self.pending.pop(key, None)
        if keys & self.entries.keys():
            self.entries = {k: v for k, v in self.entries.items() if k not in keys}
            self._rewrite()
            self.pending = {}


_HELD_LOCK_FDS: set[int] = set()


def _drop_inherited_locks() -> None:
    # A forked child (a parser pool worker) must not keep the parent's flock alive: if the
    # parent is killed, orphaned workers would otherwise hold the store lock indefinitely.
    # Closing the child's copy drops a reference only; the parent's lock stands.
    for fd in _HELD_LOCK_FDS:
        try:
            os.close(fd)
        except OSError:
            pass
    _HELD_LOCK_FDS.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


def write_assembly_sums(directory: Path, known: dict[str, tuple[int, int, str]] | None = None) -> None:
    """Record size, blake3 and mtime of every file of an assembly being built (before
    COMPLETE). `known`: name -> (size, mtime_ns, blake3) of files copied from a verified
    assembly; a file whose size and mtime are still those is not hashed again."""
    sums = {}
    for path in sorted(directory.iterdir()):
        if path.is_file() and path.name not in (fmt.ASSEMBLY_SUMS, fmt.COMPLETE_MARKER):
            st = path.stat()
            size, mtime, digest = (known or {}).get(path.name, (-1, -1, ""))
            if (size, mtime) != (st.st_size, st.st_mtime_ns):
                with open(path, "rb") as fh:
                    digest = hash_stream(fh)
            sums[path.name] = [st.st_size, digest, st.st_mtime_ns]
    (directory / fmt.ASSEMBLY_SUMS).write_text(json.dumps(sums, sort_keys=True))


def complete_marker(manifest_id: str) -> str:
    """Content of an assembled directory's COMPLETE file (names the assembly layout)."""
    return f"{manifest_id} assembly {fmt.ASSEMBLY_VERSION}\n"


class StoreLock:
    """An exclusive, non-blocking writer lock on a store (one build at a time)."""

    def __init__(self, store: Store, *, wait: float = 0.0) -> None:
        self.path = store.root / fmt.LOCK_FILE
        self.wait = wait
        self._fd: int | None = None

    def __enter__(self) -> "StoreLock":
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
                    os.close(fd)
                    raise StoreLocked(
                        f"another build holds the store lock ({holder})",
                        hint="wait for it to finish, or pass --wait SECONDS",
                    ) from None
                time.sleep(0.05)
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}\n".encode(), 0)
        except OSError:
            pass  # the holder's pid is informative only; a full disk must not break locking
        self._fd = fd
        _HELD_LOCK_FDS.add(fd)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            _HELD_LOCK_FDS.discard(self._fd)
            os.close(self._fd)
            self._fd = None


def append_log(store: Store, name: str, record: dict) -> None:
    """Append one JSON line to logs/NAME.jsonl (best effort: a log never fails a build)."""
    try:
        with open(store.root / fmt.LOGS_DIR / f"{name}.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError:
        pass


def read_log(store: Store, name: str, limit: int = 20) -> list[dict]:
    try:
        lines = (store.root / fmt.LOGS_DIR / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    out = []
    for line in lines[-limit:]:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
