"""A full assembly drops each parsed shard's in-memory table once its batch is inserted (the
cold build's memory peak): the rows must not change, also when the same content sits at two
paths in different batches (the second one reads its shard back from the store)."""

from __future__ import annotations

import shutil

import duckdb
import pyarrow.parquet as pq

from codeagent import format as fmt
from codeagent.format.manifest import load_manifest
from codeagent.indexer.assemble.pipeline import assemble
from codeagent.indexer.assemble.plan import Assembly
from codeagent.indexer.build import BuildOptions, build
from codeagent.store import Store

QUERIES = ("SELECT * FROM term_postings", "SELECT * FROM files", "SELECT * FROM chunks",
           "SELECT * EXCLUDE (modifiers) FROM symbols", "SELECT * FROM refs", "SELECT * FROM edges")


def _rows(store: Store, manifest_id: str, query: str) -> list[tuple]:
    con = duckdb.connect(str(store.assembled_dir(manifest_id) / fmt.DUCKDB_FILE), read_only=True)
    try:
        return sorted(con.execute(query).fetchall(), key=repr)
    finally:
        con.close()


def test_batches_with_in_memory_tables_give_the_one_batch_rows_and_free_them(git_repo, tmp_path):
    shared = "class Shared:\n    '''Kept twice.'''\n    def run(self):\n        return helper(1)\n"
    git_repo.write_many({"a/first.py": shared, "z/second.py": shared,
                         **{f"m/m{i}.py": f"def helper(x):\n    return x + {i}\n" for i in range(3)}})
    git_repo.commit("init")
    one = build(BuildOptions(repo=git_repo.path, jobs=1))
    many = build(BuildOptions(repo=git_repo.path, store_dir=tmp_path / "many", jobs=1))
    store = Store(tmp_path / "many")
    shutil.rmtree(store.assembled_dir(many.manifest_id))
    manifest = load_manifest(store, many.manifest_id)
    tables = {f.shard: pq.read_table(store.object_path(f.shard)) for f in manifest.files if f.indexed}
    assert len(tables) == 4  # the shared content is one shard
    assemble(Assembly(store, manifest, many.manifest_id, batch_bytes=1, tables=tables))
    assert tables == {}
    reference = Store(git_repo.path / ".codeagent")
    for query in QUERIES:
        a, b = (_rows(s, one.manifest_id, query) for s in (reference, store))
        assert a == b and a, query
    paths = {r[0] for r in _rows(store, one.manifest_id, "SELECT path FROM symbols WHERE name = 'Shared'")}
    assert paths == {"a/first.py", "z/second.py"}
