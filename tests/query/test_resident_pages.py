"""A long-lived reader's resident arrays are memory-mapped; after each request the pages it
read are unmapped from the process (format.resident.drop_mapped_pages): they stay in the page
cache, and the next request maps them again and answers the same."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from codeagent.query import IndexFollower, find_symbols
from codeagent.query.follower import WATCH_INTERVAL

from .conftest import POLY, build_repo

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/smaps")


def _mapped_kib(directory: Path) -> int:
    """KiB of this process's resident set in mappings of `directory`'s resident arrays."""
    total, inside = 0, False
    with open("/proc/self/smaps") as fh:
        for line in fh:
            head = line.split()
            if head and "-" in head[0] and not head[0].endswith(":"):
                name = head[5] if len(head) > 5 else ""
                inside = name.startswith(str(directory)) and Path(name).name.startswith("resident.")
            elif inside and head[0] == "Rss:":
                total += int(head[1])
    return total


def test_a_request_leaves_no_array_pages_in_the_resident_set(tmp_path):
    repo = build_repo(tmp_path / "repo", POLY)
    follower = IndexFollower(repo.path)
    follower.warm_on_swap = False
    try:
        answers = []
        for _ in range(2):
            with follower.view() as view:
                directory = view.path.parent
                found = find_symbols(view, "RateLimiter", limit=5)
                answers.append([h.qualified_name for h in found.results])
                assert _mapped_kib(directory) > 0  # read through the mapping during the request
            assert _mapped_kib(directory) == 0
        assert answers[0] == answers[1] and "app.server.RateLimiter" in answers[0]
    finally:
        follower.close()


def test_a_watching_reader_drops_the_pages_once_idle(tmp_path):
    """With its watcher running, a follower leaves the pages mapped while requests come and
    drops them at the watcher's first look with no request in flight."""
    repo = build_repo(tmp_path / "repo", POLY)
    follower = IndexFollower(repo.path)
    try:
        with follower.view() as view:
            directory = view.path.parent
            found = find_symbols(view, "RateLimiter", limit=5)
            assert "app.server.RateLimiter" in [h.qualified_name for h in found.results]
            time.sleep(3 * WATCH_INTERVAL)
            assert _mapped_kib(directory) > 0  # in flight: the watcher leaves them
        deadline = time.monotonic() + 30
        while _mapped_kib(directory) and time.monotonic() < deadline:
            time.sleep(WATCH_INTERVAL / 2)
        assert _mapped_kib(directory) == 0
    finally:
        follower.close()
