"""What a long-lived reader's allocators keep after its requests, handed back: DuckDB's when
the reader is idle, the Arrow pool's at the end of each request (release_arrow).

After a burst of searches, DuckDB holds the blocks it read in its buffer pool and, beside
them, the freed memory of the queries' hash tables and sorts in its allocator's caches: on
the standard library ~50 MiB anonymous after 20 `search_code` calls, which nothing handed
back.

Lowering a database's memory limit evicts every block no query pins and flushes the
allocator (jemalloc's retained pages, glibc's through malloc_trim); the limit is then set
back. A later query reads its blocks again from the file (the page cache: no I/O). A query
running on the same database instance while its limit is low could fail for want of memory:
the follower calling `release_database` holds back its own requests meanwhile, and `_open`
counts the views of this process on each database file (DuckDB gives every connection to one
file the same instance); a file another view also has open is left alone.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter

RELEASE_LIMIT = "256KB"  # low enough that every unpinned block goes (an assembly's blocks are 64 KiB)

_open: Counter[str] = Counter()  # database file -> views of this process open on it
_lock = threading.Lock()


def opened(key: str | None) -> None:
    """A view opened a connection on database file `key` (None: a database of its own)."""
    if key is not None:
        with _lock:
            _open[key] += 1


def closed(key: str | None) -> None:
    if key is not None:
        with _lock:
            _open[key] -= 1
            if _open[key] <= 0:
                del _open[key]


def release_database(cursor, key: str | None) -> bool:
    """Evict the unpinned blocks of `cursor`'s database and flush its allocator; the caller
    runs no query on it meanwhile. False (nothing done) when another view of this process
    has the same database file open. When more than RELEASE_LIMIT is pinned, DuckDB refuses
    the limit after evicting what it could; the limit is set back either way."""
    import duckdb  # imported already: the cursor is one of its

    with _lock:
        if key is not None and _open.get(key, 0) > 1:
            return False
        try:
            cursor.execute("SET memory_limit = ?", [RELEASE_LIMIT])
        except duckdb.Error:
            pass
        finally:
            cursor.execute("RESET memory_limit")
    return True


def release_arrow() -> None:
    """Hand back the pages the Arrow pool freed on this thread. Its allocator (mimalloc)
    keeps them in the thread's own heap, where a release from another thread cannot reach:
    a server's requests run on a pool of threads, so each request releases its own (~10 MiB
    after the first prefix search of symbol names on the stdlib, ~25 MiB after a grep).
    Microseconds when the request freed nothing; nothing when pyarrow is not imported."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        pa.default_memory_pool().release_unused()
