"""A long-lived reader hands back what DuckDB kept for its requests once it is idle
(query/idle_memory.py): the blocks its searches read leave the buffer pool, the memory limit
is back to DuckDB's default, and the next search answers the same. A database file another
view of the process also has open is left alone: lowering its limit could fail that view's
query."""

from __future__ import annotations

import time

import duckdb
import pytest

from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, SearchRequest, open_index, search
from codeagent.query.follower import WATCH_INTERVAL

from .conftest import POLY, build_repo

# Enough postings that a search reads many blocks (a few always stay pinned: the catalog's)
FILES = {**POLY, **{f"gen/mod{i}.py": "".join(
    f"def check_rate_{i}_{j}(request, limit={j}):\n    return request.rate < limit + {i}\n\n"
    for j in range(40)) for i in range(150)}}


def _buffered(view) -> int:
    """Bytes of table blocks in the buffer pool of `view`'s database."""
    return view.sql("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory() "
                    "WHERE tag = 'BASE_TABLE'")[0][0]


def _answer(view) -> list[str]:
    found = search(view, SearchRequest("token bucket rate limiter", mode="text", limit=5))
    return [f"{h.path}:{h.line_start}" for h in found.results]


def _released(follower: IndexFollower, before: int, read: int) -> bool:
    """Whether the watcher released (within 30 s) most of what a search read: `before` bytes
    were buffered before it (the catalog's blocks, pinned), `read` after."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(2 * WATCH_INTERVAL)
        with follower.view() as view:
            if _buffered(view) - before < (read - before) // 2:
                return True
    return False


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return build_repo(tmp_path_factory.mktemp("idle") / "repo", FILES)


def test_an_idle_reader_hands_back_the_blocks_its_searches_read(repo):
    default_limit = duckdb.connect().execute("SELECT current_setting('memory_limit')").fetchone()[0]
    follower = IndexFollower(repo.path)
    try:
        with follower.view() as view:
            before = _buffered(view)
            first = _answer(view)
            assert first and any(a.startswith("app/server.py:") for a in first)
            read = _buffered(view)
            assert read - before > 1 << 19  # 8 of an assembly's 64 KiB blocks
        assert _released(follower, before, read)
        with follower.view() as view:
            assert _answer(view) == first
            assert view.sql("SELECT current_setting('memory_limit')")[0][0] == default_limit
    finally:
        follower.close()


def test_a_database_another_view_has_open_is_left_alone(repo):
    follower = IndexFollower(repo.path)
    try:
        with follower.view() as view:
            before = _buffered(view)
            first = _answer(view)
            read = _buffered(view)
            # the same file: DuckDB gives it the same instance. Opened while the request is in
            # flight: once it ends, the watcher's next look may come before any later line
            other = open_index(repo.path)
        try:
            time.sleep(4 * WATCH_INTERVAL)
            assert _buffered(other) == read
            assert _answer(other) == first
        finally:
            other.close()
        with follower.view() as view:  # a request since: the next idle look releases
            assert _answer(view) == first
        assert _released(follower, before, read)
    finally:
        follower.close()


def test_an_overlay_reader_hands_back_its_blocks_too(repo):
    """An overlay is read through an in-memory database of its own with its base attached."""
    build(BuildOptions(repo=repo.path, jobs=1))
    repo.write_many({"app/util.py": POLY["app/util.py"] + "\n\ndef token_bucket_refill(rate):\n    return rate\n"})
    build(BuildOptions(repo=repo.path, jobs=1))
    follower = IndexFollower(repo.path)
    try:
        with follower.view() as view:
            assert view.base_id is not None
            before = _buffered(view)
            first = _answer(view)
            assert any(a.startswith("app/util.py:") for a in first)
            read = _buffered(view)
        assert _released(follower, before, read)
        with follower.view() as view:
            assert _answer(view) == first
    finally:
        follower.close()
