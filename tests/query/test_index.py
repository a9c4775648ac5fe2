"""Opening manifests: refs, ids, missing indexes, freshness, and following a ref across builds."""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest

from codeagent import format as fmt
from codeagent.errors import IndexMissing, StoreCorrupt
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, find_symbols, open_index
from codeagent.query.assembly_check import _verified, check_resident
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
    from codeagent.query import follower as index_mod
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


def _flip_in_place(path, at: int = 4096) -> None:
    """One byte changed where it lies: same size, mtime put back (only the ctime moves)."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_stamped_database_damaged_by_a_write_is_refused_by_the_next_reader(git_repo, cli):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    directory = Store(git_repo.path / ".codeagent").assembled_dir(result.manifest_id)
    time.sleep(0.15)  # past the stamp's ctime margin
    assert cli("search", "alpha", "--repo", git_repo.path).returncode == 0
    stamps = json.loads((directory / fmt.ASSEMBLY_STAMPS).read_text())
    assert fmt.DUCKDB_FILE in stamps  # stamped: the next reader would not hash it again...
    _flip_in_place(directory / fmt.DUCKDB_FILE)
    refused = cli("search", "alpha", "--repo", git_repo.path)
    assert refused.returncode == 7 and "damaged" in refused.stderr  # ...but the write moved the ctime


def test_a_stamped_resident_array_damaged_by_a_write_is_refused(git_repo):
    git_repo.write("m.py", "def alpha():\n    pass\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    time.sleep(0.15)
    with open_index(git_repo.path) as view:
        check_resident(view, "symbols")
        array = view.path.parent / "resident.symbols.rows.arrow"
        assert array.name in json.loads((view.path.parent / fmt.ASSEMBLY_STAMPS).read_text())
    _flip_in_place(array, at=array.stat().st_size // 2)
    _verified.clear()  # a new process: nothing checked yet
    with open_index(git_repo.path) as view, pytest.raises(StoreCorrupt, match="resident.symbols.rows"):
        check_resident(view, "symbols")
