"""`build --memory`: sizes read as people write them, refused below what a build needs, and a
small budget (many assembly batches, DuckDB spilling) gives the same index as the default."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, strategies as st

from codeagent.errors import InvalidParameter
from codeagent.indexer.budget import MIN_MEMORY, MemoryBudget, parse_memory


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
