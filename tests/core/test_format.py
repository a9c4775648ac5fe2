"""The format package as readers use it: an assembly records every version they check."""

from __future__ import annotations

import duckdb

from codeagent import format as fmt
from codeagent.format.assembly import version_problem
from codeagent.indexer.build import BuildOptions, build
from codeagent.store import Store


def test_an_assembly_records_every_version_its_readers_check(git_repo):
    git_repo.write("a.py", "def f():\n    return 1\n")
    git_repo.commit("init")
    result = build(BuildOptions(repo=git_repo.path, jobs=1))
    db = Store(git_repo.path / ".codeagent").assembled_dir(result.manifest_id) / fmt.DUCKDB_FILE
    with duckdb.connect(str(db), read_only=True) as con:
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall())
        graph = con.execute("SELECT max(version) FROM graph_version").fetchone()[0]
    assert (meta["assembly_version"], meta["graph_version"], graph) == (
        str(fmt.ASSEMBLY_VERSION), str(fmt.GRAPH_VERSION), fmt.GRAPH_VERSION)
    assert version_problem(meta) is None


def test_a_reader_refuses_an_assembly_of_another_version():
    meta = {"assembly_version": str(fmt.ASSEMBLY_VERSION), "graph_version": str(fmt.GRAPH_VERSION)}
    older_graph = {**meta, "graph_version": str(fmt.GRAPH_VERSION - 1)}
    assert version_problem(older_graph) == (
        f"index graph version {fmt.GRAPH_VERSION - 1}, this codeagent reads {fmt.GRAPH_VERSION}")
    assert version_problem({**meta, "assembly_version": "1"}) == (
        f"index assembly version 1, this codeagent reads {fmt.ASSEMBLY_VERSION}")
    assert version_problem({"assembly_version": str(fmt.ASSEMBLY_VERSION)}) == (
        f"index graph version None, this codeagent reads {fmt.GRAPH_VERSION}")
