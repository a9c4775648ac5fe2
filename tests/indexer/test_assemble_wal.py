"""Incremental assemblies commit to DuckDB's WAL instead of checkpointing: readers still see
exactly the new manifest, SUMS covers the WAL, and a grown WAL is folded back in."""

from __future__ import annotations

import duckdb
import pytest

from codeagent import format as fmt
from codeagent.indexer.assemble import base
from codeagent.indexer.build import BuildOptions, build
from codeagent.store import Store


def _names(store: Store, manifest_id: str) -> list[str]:
    con = duckdb.connect(str(store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT name FROM symbols ORDER BY name").fetchall()]
    finally:
        con.close()


@pytest.fixture
def repo(git_repo):
    git_repo.write_many({f"m{i}.py": f"def f{i}():\n    return {i}\n" for i in range(5)})
    git_repo.commit("init")
    return git_repo


def test_incremental_assembly_leaves_a_wal_that_readers_replay(repo):
    first = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    store = Store(repo.path / ".codeagent")
    assert not (store.assembled_dir(first.manifest_id) / fmt.DUCKDB_WAL).exists()
    repo.write("m2.py", "def renamed():\n    return 2\n")
    second = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    directory = store.assembled_dir(second.manifest_id)
    assert (directory / fmt.DUCKDB_WAL).stat().st_size > 0
    assert _names(store, second.manifest_id) == ["f0", "f1", "f3", "f4", "renamed"]
    assert _names(store, first.manifest_id) == ["f0", "f1", "f2", "f3", "f4"]
    assert store.assembly_problems(second.manifest_id) == []
    with open(directory / fmt.DUCKDB_WAL, "r+b") as fh:
        fh.seek(-3, 2)
        byte = fh.read(1)
        fh.seek(-3, 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert any(fmt.DUCKDB_WAL in p for p in store.assembly_problems(second.manifest_id))


def test_a_wal_past_the_limit_is_checkpointed(repo, monkeypatch):
    build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    store = Store(repo.path / ".codeagent")
    repo.write("m1.py", "def g1():\n    return 1\n")
    kept = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    assert (store.assembled_dir(kept.manifest_id) / fmt.DUCKDB_WAL).exists()
    monkeypatch.setattr(base, "WAL_MAX_BYTES", 0)
    repo.write("m3.py", "def g3():\n    return 3\n")
    folded = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    directory = store.assembled_dir(folded.manifest_id)
    wal = directory / fmt.DUCKDB_WAL
    assert not wal.exists() or wal.stat().st_size == 0
    assert _names(store, folded.manifest_id) == ["f0", "f2", "f4", "g1", "g3"]
