"""`build --memory`: sizes read as people write them, refused below what a build needs, and a
small budget (many assembly batches, DuckDB spilling) gives the same index as the default."""

from __future__ import annotations

import json

import duckdb
import pytest
from hypothesis import given, strategies as st

from codeagent import format as fmt
from codeagent.errors import InvalidParameter, OutOfMemory
from codeagent.indexer.budget import MIN_MEMORY, MemoryBudget, parse_memory
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.maintenance import verify_store
from codeagent.refs import WORKTREE_REF
from codeagent.store import Store


@pytest.mark.parametrize("text, size", [("1G", 1 << 30), ("512M", 512 << 20), ("1.5GiB", 3 << 29),
                                        ("300mb", 300 << 20), (str(1 << 30), 1 << 30)])
def test_sizes_read_as_written(text, size):
    assert parse_memory(text) == size


@pytest.mark.parametrize("text", ["", "lots", "1X", "-1G", "12"])
def test_what_is_no_size_or_too_small_is_refused(text):
    with pytest.raises(InvalidParameter):
        parse_memory(text)


@given(st.integers(MIN_MEMORY, 1 << 40))
def test_every_share_fits_the_budget(total):
    b = MemoryBudget(total)
    assert b.duckdb_limit + b.fresh_table_bytes + b.assembly_batch_bytes * 20 <= total
    # once the rows are in, DuckDB takes the batches' share; the kept shards stay
    assert b.duckdb_limit <= b.derived_duckdb_limit <= total - b.fresh_table_bytes - total // 4
    # the postings' merge rounds (~100 bytes a row) fit in what DuckDB's derived share leaves
    assert b.postings_round_rows * 100 <= total - b.derived_duckdb_limit - b.fresh_table_bytes
    assert 0 < b.parse_batch_bytes <= 64 << 20


def test_a_small_budget_builds_the_same_index(git_repo, cli, tmp_path):
    git_repo.write_many({f"pkg/m{i}.py": f"def f{i}(x):\n    return g{i % 7}(x) + {i}\n" * 40 for i in range(60)})
    git_repo.commit("init")
    small = json.loads(cli("build", git_repo.path, "--memory", "256M", "--json", check=True).stdout)
    default = json.loads(cli("build", git_repo.path, "--store", tmp_path / "default", "--json", check=True).stdout)
    assert small["manifest_id"] == default["manifest_id"]
    for store in (None, tmp_path / "default"):
        extra = ("--store", store) if store else ()
        found = json.loads(cli("search", "f42", "--repo", git_repo.path, *extra, "--json", check=True).stdout)
        assert found["results"][0]["path"] == "pkg/m42.py"
    bad = cli("build", git_repo.path, "--memory", "100M")
    assert bad.returncode == 2 and "below the 256 MiB a build needs" in bad.stderr


def test_a_budget_too_small_for_the_tree_fails_clearly_and_keeps_the_index(git_repo):
    """DuckDB running out of the budget's limit is an `out_of_memory` error naming the budget
    and a larger one, not a traceback; the previous index stays current and the store
    verifies. (The CLI refuses budgets this small: the library is given one to reach it.)"""
    git_repo.write_many({f"pkg/m{i}.py": f"def f{i}(x):\n    return g{i % 7}(x) + {i}\n" * 40 for i in range(60)})
    git_repo.commit("init")
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    store = Store(git_repo.path / ".codeagent")
    git_repo.write_many({f"pkg/n{i}.py": f"def h{i}(x):\n    return f{i}(x)\n" * 40 for i in range(60)})
    tiny = MemoryBudget(2 << 20)
    with pytest.raises(OutOfMemory) as caught:
        build(BuildOptions(repo=git_repo.path, jobs=1, memory=tiny, overlay=False))
    assert "--memory 2M" in caught.value.message and "--memory 1G" in caught.value.hint
    assert caught.value.exit_code == 16 and caught.value.code == "out_of_memory"
    assert store.read_ref(WORKTREE_REF) == first.manifest_id
    assert verify_store(store).problems == []
    assert not list(store.tmp_dir.iterdir())


def _edges(store: Store, manifest_id: str) -> list[tuple]:
    con = duckdb.connect(str(store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        return con.execute("SELECT * FROM edges ORDER BY ALL").fetchall()
    finally:
        con.close()


def test_the_symbol_graph_fits_a_small_duckdb_limit(git_repo, tmp_path):
    """A full graph of 12k classes, each calling through an ancestry, under the 60 MiB DuckDB
    limit a 96M budget gives the graph: the resolution joining all six tiers in one statement
    and the recursive ancestor closure needed ~70 MiB (the split ones fit 48). The edges equal
    the default budget's."""
    git_repo.write_many({f"m{i}.py": "".join(
        f"class C{i}_{j}(C{(i + 1) % 50}_{j % 5}):\n    def m{j}(self):\n"
        f"        return self.m{(j + 1) % 5}() + f{i}_{j}()\n\ndef f{i}_{j}():\n    return C{i}_{j}().m{j}()\n\n"
        for j in range(40)) for i in range(300)})
    git_repo.commit("init")
    small = build(BuildOptions(repo=git_repo.path, jobs=1, memory=MemoryBudget(96 << 20)))
    default = build(BuildOptions(repo=git_repo.path, jobs=1, store_dir=tmp_path / "default"))
    assert small.manifest_id == default.manifest_id
    edges = _edges(Store(git_repo.path / ".codeagent"), small.manifest_id)
    assert len(edges) > 30_000
    assert edges == _edges(Store(tmp_path / "default"), default.manifest_id)


# Run in a fresh interpreter: a block is mapped only when malloc's arenas hold no free chunk
# large enough, which a process that ran other tests cannot promise.
_MAPPED_PROBE = """
import ctypes, sys
import numpy as np
from codeagent.indexer.budget import MALLOC_MMAP_THRESHOLD, return_large_frees

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd",
                                               "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
try:
    mallinfo2 = ctypes.CDLL(None).mallinfo2
except AttributeError:
    sys.exit(3)
mallinfo2.restype = MallInfo2
if sys.argv[1] == "set" and not return_large_frees():
    sys.exit(3)
raised = np.ones(24 * MALLOC_MMAP_THRESHOLD, np.uint8)
del raised  # freed, a mapped block raises a dynamic threshold to its size
for size in (MALLOC_MMAP_THRESHOLD, 8 * MALLOC_MMAP_THRESHOLD):
    before = mallinfo2().hblkhd
    block = np.ones(size, np.uint8)
    mapped = mallinfo2().hblkhd - before
    del block
    print(mapped >= size, mallinfo2().hblkhd == before)
"""


@pytest.mark.parametrize("setting", ["set", "default"])
def test_large_blocks_go_back_to_the_system_once_freed(setting):
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _MAPPED_PROBE, setting], capture_output=True, text=True)
    if run.returncode == 3:
        pytest.skip("glibc's malloc only")
    assert run.returncode == 0, run.stderr
    if setting == "set":  # mapped on their own, and unmapped when freed
        assert run.stdout.split() == ["True", "True"] * 2
    else:  # glibc's own threshold, raised by the freed 24 MiB: both served from its arena
        assert run.stdout.split() == ["False", "True"] * 2

def test_the_assembly_connection_returns_freed_pages(tmp_path):
    from codeagent.indexer.assemble.base import connect

    con = connect(tmp_path / "index.duckdb")
    try:
        assert con.execute("SELECT current_setting('allocator_background_threads')").fetchone() == (True,)
    finally:
        con.close()
