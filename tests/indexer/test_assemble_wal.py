"""Every assembly, an incremental one too, ends checkpointed: no WAL is left for a reader to
replay into memory DuckDB cannot spill (the resident step's reader ran out of its limit on
one), and a WAL an older assembly left is carried along, covered by SUMS, and folded in."""

from __future__ import annotations

import duckdb
import pytest

from codeagent import format as fmt
from codeagent.indexer.build import BuildOptions, build
from codeagent.store import Store
from codeagent.store.assembly import write_assembly_sums


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


def _wal(store: Store, manifest_id: str):
    return store.assembled_dir(manifest_id) / fmt.DUCKDB_WAL


def test_an_incremental_assembly_leaves_no_wal(repo):
    first = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    store = Store(repo.path / ".codeagent")
    repo.write("m2.py", "def renamed():\n    return 2\n")
    second = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    for manifest_id in (first.manifest_id, second.manifest_id):
        wal = _wal(store, manifest_id)
        assert not wal.exists() or wal.stat().st_size == 0
        assert store.assembly_problems(manifest_id) == []
    assert _names(store, second.manifest_id) == ["f0", "f1", "f3", "f4", "renamed"]
    assert _names(store, first.manifest_id) == ["f0", "f1", "f2", "f3", "f4"]


def test_a_wal_an_older_assembly_left_is_verified_and_folded_in(repo):
    """An older store's assembly may hold changes in its WAL only: SUMS covers the WAL, the
    next assembly on it carries them into its file, and a damaged WAL is reported."""
    first = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    store = Store(repo.path / ".codeagent")
    directory = store.assembled_dir(first.manifest_id)
    con = duckdb.connect(str(directory / fmt.DUCKDB_FILE))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("SET checkpoint_threshold = '1GB'")
    con.execute("CREATE TABLE older_code_wal AS SELECT 7 AS x")
    con.close()
    assert _wal(store, first.manifest_id).stat().st_size > 0
    write_assembly_sums(directory, {})
    assert store.assembly_problems(first.manifest_id) == []

    repo.write("m1.py", "def g1():\n    return 1\n")
    second = build(BuildOptions(repo=repo.path, jobs=1, overlay=False))
    wal = _wal(store, second.manifest_id)
    assert not wal.exists() or wal.stat().st_size == 0
    con = duckdb.connect(str(store.assembled_dir(second.manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        assert con.execute("SELECT x FROM older_code_wal").fetchall() == [(7,)]
    finally:
        con.close()
    assert _names(store, second.manifest_id) == ["f0", "f2", "f3", "f4", "g1"]

    with open(_wal(store, first.manifest_id), "r+b") as fh:
        fh.seek(-3, 2)
        byte = fh.read(1)
        fh.seek(-3, 2)
        fh.write(bytes([byte[0] ^ 0xFF]))
    assert any(fmt.DUCKDB_WAL in p for p in store.assembly_problems(first.manifest_id))


def test_an_assembly_writer_commits_into_the_file_not_the_wal(tmp_path):
    """A commit past base.CHECKPOINT_BYTES is checkpointed into the database file: committed by
    a connection closed without a checkpoint, its rows are in the file and no WAL holds them
    (logging every row before the checkpoint wrote it again doubled the assembly's writes)."""
    from codeagent.indexer.assemble.base import CHECKPOINT_BYTES, connect

    path = tmp_path / fmt.DUCKDB_FILE
    con = connect(path)
    con.execute("CREATE TABLE t(x INTEGER, s VARCHAR)")
    # fewer rows than a row group (DuckDB writes a full one to the file whatever the settings)
    rows, width = 60_000, 3 * CHECKPOINT_BYTES // 60_000 + 8
    con.execute(f"INSERT INTO t SELECT i, repeat(chr((97 + i % 26)::INTEGER), {width}) FROM range({rows}) r(i)")
    con.close()
    wal = tmp_path / fmt.DUCKDB_WAL
    assert not wal.exists() or wal.stat().st_size < CHECKPOINT_BYTES // 4
    wal.unlink(missing_ok=True)
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT count(*), sum(x), sum(length(s)), count(DISTINCT s) FROM t").fetchone()
    finally:
        con.close()
    assert got == (rows, rows * (rows - 1) // 2, rows * width, 26)
