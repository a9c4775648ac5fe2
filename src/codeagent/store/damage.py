"""Which objects of a store are damaged (their bytes no longer hash to their names), cheaply
enough for every `status` and build: an object whose stat is still the one its last intact
re-hash recorded is not read again (the stamps of assembled files, `assembly._stamp_entry`,
applied to objects: a write moves the ctime, which nobody can set back). The stamps live in
cache/object-stamps.json; losing them only costs the next check a re-hash."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable

from .. import format as fmt
from ..errors import StoreWriteFailed
from ..hashing import hash_stream
from .assembly import _stamp_entry
from .atomic import atomic_write

STAMPS_FILE = "object-stamps.json"


def damaged_objects(store, ids: Iterable[str]) -> list[str]:
    """The objects among `ids` present in `store` whose bytes do not hash to their name
    (absent ones are the callers' other check), sorted."""
    path = store.root / fmt.CACHE_DIR / STAMPS_FILE
    stamps = _read(path)
    damaged, checked = [], {}
    wanted = sorted(ids)
    for oid in wanted:
        name = store.object_file(oid)
        try:
            st = os.stat(name)
            if stamps.get(oid) == _stamp_entry(st, oid):
                continue
            started = time.time_ns()
            with open(name, "rb") as fh:
                if hash_stream(fh) != oid:
                    damaged.append(oid)
                    continue
                entry = _stamp_entry(os.fstat(fh.fileno()), oid, started)
        except FileNotFoundError:
            continue
        if entry is not None and entry == _stamp_entry(st, oid):
            checked[oid] = entry
    if checked or any(oid in stamps for oid in damaged):
        _write(store, path, stamps, checked, set(wanted), set(damaged))
    return damaged


def drop_damaged(store, ids: Iterable[str]) -> set[str]:
    """Delete the damaged objects among `ids` and return them: objects are never rewritten,
    so the good bytes can only be written again once the bad ones are gone."""
    damaged = set(damaged_objects(store, ids))
    for oid in damaged:
        store.delete_object(oid)
    return damaged


def _read(path) -> dict:
    try:
        stamps = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    return stamps if isinstance(stamps, dict) else {}


def _write(store, path, stamps: dict, checked: dict, wanted: set[str], damaged: set[str]) -> None:
    """Best effort (a read-only store or a full disk only costs the next check a re-hash);
    stamps of objects no check asked about lately go once they outnumber the asked ones."""
    stamps = {k: v for k, v in {**stamps, **checked}.items() if k not in damaged}
    if len(stamps) > 2 * len(wanted) + 4096:
        stamps = {k: v for k, v in stamps.items() if k in wanted}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(stamps, separators=(",", ":")).encode(), store.tmp_dir,
                     durable=False)
    except (OSError, StoreWriteFailed):
        pass
