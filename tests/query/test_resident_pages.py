"""A long-lived reader's resident arrays are memory-mapped; after each request the pages it
read are unmapped from the process (format.resident.drop_mapped_pages): they stay in the page
cache, and the next request maps them again and answers the same."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codeagent.query import IndexFollower, find_symbols

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
