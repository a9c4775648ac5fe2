"""Opening manifests: refs, ids, missing indexes, freshness, and following a ref across builds."""

from __future__ import annotations

import shutil
import time

import pytest

from codeagent.errors import IndexMissing
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, find_symbols, open_index
from codeagent.store import Store


def test_open_by_branch_ref_name_and_id_prefix(git_repo):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    result = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    for spec in ("main", "heads/main", "refs/heads/main", result.manifest_id[:12]):
        with open_index(git_repo.path, ref=spec) as view:
            assert view.manifest_id == result.manifest_id
            assert view.commit == result.commit


def test_missing_index_names_the_build_command(git_repo, tmp_path):
    git_repo.write("m.py", "x = 1\n")
    git_repo.commit()
    with pytest.raises(IndexMissing, match="no index") as err:
        open_index(git_repo.path)
    assert "codeagent build" in err.value.hint
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    with pytest.raises(IndexMissing) as err:
        open_index(git_repo.path, ref="feature")
    assert "codeagent build" in err.value.hint and "--ref feature" in err.value.hint


def test_pruned_assembly_is_reported_not_half_read(git_repo):
    git_repo.write("m.py", "x = 1\n")
    git_repo.commit()
    result = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    store = Store(git_repo.path / ".codeagent")
    shutil.rmtree(store.assembled_dir(result.manifest_id))
    with pytest.raises(IndexMissing, match="not assembled"):
        open_index(git_repo.path, ref="main")


def test_worktree_freshness_turns_stale(git_repo):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    with open_index(git_repo.path) as view:
        assert view.ref == "worktree"
        assert view.metadata().freshness == "fresh"
        git_repo.write("m.py", "def beta():\n    pass\n")
        assert view.metadata().freshness == "stale"  # the next request sees the edit


def test_follower_swaps_and_finishes_in_flight_requests(git_repo):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    first = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    follower = IndexFollower(git_repo.path, ref="main")
    try:
        with follower.view() as old:
            assert old.manifest_id == first.manifest_id
            git_repo.write("m.py", "def beta():\n    pass\n")
            git_repo.commit()
            second = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
            with follower.view() as new:
                assert new.manifest_id == second.manifest_id
                assert find_symbols(new, "beta").results[0].name == "beta"
            # the request that started on the old manifest still answers from it
            assert find_symbols(old, "alpha", match="exact").results[0].name == "alpha"
            assert not find_symbols(old, "beta", match="exact").results
        with follower.view() as v:
            assert v.manifest_id == second.manifest_id
    finally:
        follower.close()


def test_follower_loads_the_next_manifests_tables_before_a_request(git_repo):
    """After a build moves the ref, the follower's watcher opens the new manifest and loads
    the in-memory tables the old view had, so no request pays for them."""
    from codeagent.query import index as index_mod
    from codeagent.query.symbol_table import SymbolTable

    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    follower = IndexFollower(git_repo.path, ref="main")
    try:
        with follower.view() as v:
            SymbolTable.load(v)
        git_repo.write("m.py", "def alpha():\n    pass\n\n\ndef gamma():\n    pass\n")
        git_repo.commit()
        second = build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
        deadline = time.monotonic() + 20 * index_mod.WATCH_INTERVAL
        current = None
        while time.monotonic() < deadline:
            current = follower._current
            if current is not None and current.manifest_id == second.manifest_id \
                    and "symbol_table" in current.cache:
                break
            time.sleep(0.05)
        assert current is not None and current.manifest_id == second.manifest_id
        assert {r.name for r in current.cache["symbol_table"].rows} == {"alpha", "gamma"}
        with follower.view() as v:
            assert v is current
    finally:
        follower.close()
    follower._watcher.join(4 * index_mod.WATCH_INTERVAL)
    assert not follower._watcher.is_alive()
