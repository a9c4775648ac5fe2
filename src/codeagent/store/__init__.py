"""The object store: content-addressed objects, a shard-key action cache and ref pointers.

Every write is atomic (temp file in the store, flush, rename); every read of an object
re-hashes it before a caller sees the bytes. Objects are immutable: writing an id that
exists is a no-op. Layout is documented in `format.py`.

Hot paths (a build stores one object and one action entry per parsed file) work on string
paths and create each fan-out directory once per process; action entries are buffered and
written as packs of many entries (see `Store.put_action`).

One module per concern: `atomic` (the one atomic write), `objects` (Store and its objects),
`actions` (the action cache), `refs` (ref pointers), `assembly` (assembled artifacts and their
sums), `lock` (the writer lock), `log` (JSON-lines logs), `scores` (a commit's search-quality
figures, `publish --score`), `faults` (test-only fault hooks).
"""

from __future__ import annotations

from .actions import ACTION_PACK_ENTRIES, ACTION_PACKS_MAX
from .assembly import complete_marker, write_assembly_sums
from .atomic import atomic_write, disk_write_failure
from .lock import StoreLock
from .log import append_log, read_log
from .objects import Store, VerifyProblem

__all__ = [
    "ACTION_PACK_ENTRIES", "ACTION_PACKS_MAX", "Store", "StoreLock", "VerifyProblem",
    "append_log", "atomic_write", "complete_marker", "disk_write_failure", "read_log",
    "write_assembly_sums",
]
