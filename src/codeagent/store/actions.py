"""The action cache: shard key -> shard object id (or "skip:<reason>"), written in packs."""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from .. import format as fmt
from ..errors import InvalidParameter, StoreWriteFailed
from ..hashing import is_object_id
from .atomic import TMP_PREFIX, atomic_write


class _PackWriter(Protocol):
    """What the action cache needs of its Store (objects.py) to write a pack."""

    root: Path
    durable: bool
    _tmp: str  # the store's temp directory

    def _make_fanout(self, directory: str) -> None: ...

    def _written(self, path: str) -> None: ...


class ActionsMixin:
    """Store's action-cache methods (the entries live in one _ActionCache per Store)."""

    _actions: "_ActionCache | None"

    def _action_cache(self) -> "_ActionCache":
        if self._actions is None:
            self._actions = _ActionCache(self)  # type: ignore[arg-type]
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

ACTION_PACK_ENTRIES = 512  # a batch writes a pack every this many entries
# More packs than this are merged when the next is written: those after the first into one
# while the first (the whole cache as a first build or the last full merge wrote it) holds
# more entries than they do, else all into one. So a run of small builds rewrites their own
# entries, not the repository's, and each entry is rewritten O(log n) times in all.
ACTION_PACKS_MAX = 16
_PACK_HEADER = b"codeagent-actions 1\n"
_pack_names = itertools.count()


class _ActionCache:
    """The action cache's entries. Written as packs under actions/packs/: a header line, then
    one "key TAB value" line per entry, later packs (by name) winning. Stores from before packs
    kept one file per entry (actions/<2 hex>/<key>); those are still read, never written."""

    def __init__(self, store: _PackWriter) -> None:
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
        self.first_size = 0  # entries of packs[0]
        self.tail: dict[str, str] = {}  # the entries of packs[1:], merged
        self.legacy: set[str] = set()
        try:
            self.legacy = {n for n in os.listdir(self.base) if n != fmt.ACTION_PACKS_DIR}
            names = sorted(n for n in os.listdir(self.packs_dir) if not n.startswith(TMP_PREFIX))
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
            pack = {}
            for line in data[len(_PACK_HEADER):].decode("utf-8", "replace").split("\n"):
                key, tab, value = line.partition("\t")
                if tab and value:
                    pack[key] = value
            self.entries.update(pack)
            self._appended(name, pack)
        return True

    def _appended(self, name: str, pack: dict[str, str]) -> None:
        if not self.packs:
            self.first_size = len(pack)
        else:
            self.tail.update(pack)
        self.packs.append(name)

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
            if self.first_size > len(self.tail) + len(self.pending):
                self._merge_tail()
            else:
                self._rewrite()
        else:
            self._appended(self._write_pack(self.pending), self.pending)
        self.pending = {}

    def _merge_tail(self) -> None:
        """Replace the packs after the first by one pack of their entries and the pending ones
        (written first, later than the first pack: it still wins over it)."""
        old = self.packs[1:]
        merged = {**self.tail, **self.pending}
        self.packs, self.tail = self.packs[:1], {}
        self._appended(self._write_pack(merged), merged)
        for name in old:
            try:
                os.unlink(os.path.join(self.packs_dir, name))
            except FileNotFoundError:
                pass

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
        self.packs, self.tail, self.first_size = [], {}, 0
        if self.entries:
            self._appended(self._write_pack(self.entries), self.entries)
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


