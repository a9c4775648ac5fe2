"""Re-hashing an assembly's files against SUMS before a reader reads them (once per process
and manifest); a reader meets errors.AssemblyVanished when the assembly is gone."""

from __future__ import annotations

import threading
from functools import partial
from pathlib import Path
from typing import Protocol

from ..errors import AssemblyVanished, StoreCorrupt
from ..format.resident import is_resident_file
from ..store import Store



class AssemblyReader(Protocol):
    """What `check_resident` reads of a view (query/index.py's IndexView): named here so this
    module, which index.py imports, need not import it back."""

    store: Store
    manifest_id: str
    path: Path


_verified: set[tuple[str, str, str]] = set()
_verified_lock = threading.Lock()


def _not_resident(name: str) -> bool:
    return not is_resident_file(name)


def _check_assembly(store: Store, manifest_id: str, directory: Path,
                    structure: str | None = None) -> None:
    """Re-hash the assembled files against SUMS before DuckDB reads a byte; once per process
    and manifest (assembled files are immutable once renamed into place), and not at all for
    a file whose stat is still the one stamped when its hash last matched (VERIFIED: a write
    moves the ctime; `verify` re-hashes everything). The resident arrays are checked apart,
    one `structure` at a time before it is mapped (`check_resident`): a view's first request
    pays only for those it reads."""
    key = (str(store.root), manifest_id, structure or "")
    with _verified_lock:
        if key in _verified:
            return
    check = getattr(store, "assembly_problems", None)  # the store's SUMS check, where present
    which = _not_resident if structure is None else partial(is_resident_file, structure=structure)
    damaged = check(manifest_id, which=which, stamped=True) if check else []
    if damaged and store.is_assembled(manifest_id):
        raise StoreCorrupt(f"the assembled index of {manifest_id[:12]} is damaged: {damaged[0]}",
                           hint=f"delete {directory} and run `codeagent build`")
    if damaged:
        raise AssemblyVanished(manifest_id)
    with _verified_lock:
        _verified.add(key)


def check_resident(view: AssemblyReader, structure: str, manifest_id: str | None = None) -> None:
    """Re-hash the resident `structure` files (format/resident.py) of the view's assembly (or
    of `manifest_id`'s: an overlay's base, `view.path.parent`) before they are mapped."""
    _check_assembly(view.store, manifest_id or view.manifest_id, view.path.parent, structure)
