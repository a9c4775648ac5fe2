"""Graph answers from the in-memory edge table equal the SQL path's, node for node and edge
for edge (order included), for every symbol, preset, direction and budget."""

from __future__ import annotations

import pytest

from codeagent.query import traverse
from codeagent.query.edge_table import EdgeTable
from codeagent.query.graph import EDGE_KINDS

from .conftest import POLY, build_repo, sql_and_memory

DEEP = {
    **POLY,
    "app/chain.py": "from app.util import helper\n\n"
                    + "".join(f"def f{i}():\n    return f{i + 1}() + helper(1)\n\n" for i in range(12))
                    + "def f12():\n    return 0\n",
}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("edgetab") / "repo", DEEP)
    with sql_and_memory(repo.path) as views:
        yield views


def _answer(view, symbol, **kw):
    resp = traverse(view, symbol, **kw)
    return ([n.to_dict() for n in resp.nodes], [e.to_dict() for e in resp.edges], resp.truncated)


def test_traversals_equal_the_sql_path(views):
    sql, mem = views
    ids = [r[0] for r in sql.sql("SELECT symbol_id FROM symbols ORDER BY symbol_id")][::3]
    assert len(ids) > 10
    cases = 0
    for sid in ids:
        for direction in ("in", "out", "both"):
            for kinds in (None, ["calls"], ["contains", "imports", "inherits"], list(EDGE_KINDS)):
                for depth, max_nodes in ((1, 1), (3, 2), (10, 200)):
                    kw = dict(direction=direction, edge_types=kinds, depth=depth, max_nodes=max_nodes)
                    got = _answer(mem, sid, **kw)
                    assert got == _answer(sql, sid, **kw), (sid, kw)
                    cases += bool(got[1])
    assert cases > 30  # most combinations found edges: the comparison is not of empty lists
    assert "edge_table" in mem.cache and "edge_table" not in sql.cache


def test_edge_rows_by_source_and_target(views):
    _, mem = views
    table = EdgeTable.load(mem)
    assert EdgeTable.load(mem) is table
    helper = traverse(mem, "app.util.helper", direction="in", edge_types=["calls"], depth=1)
    callers = {n.qualified_name for n in helper.nodes}
    assert {"app.chain.f0", "app.chain.f11", "app.util.unused_helper"} <= callers
    rows = table.rows([helper.root.symbol_id], "dst_id", ["calls"], 1000)
    assert len(rows) == len(helper.edges) and all(r[2] == "calls" for r in rows)
    assert rows == sorted(rows, key=lambda r: (r[3] != "exact", r[4], r[5]))
    assert table.rows([helper.root.symbol_id], "dst_id", ["calls"], 2) == rows[:2]
    assert table.rows(["no-such-id"], "dst_id", None, 10) == []
