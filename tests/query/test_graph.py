"""Graph queries over the resolved edges: one hop, edge-type filters, multi-hop budgets."""

from __future__ import annotations

import pytest

from codeagent.errors import InvalidParameter, NotFound
from codeagent.query import (callees, callers, dependencies, dependents, implementations,
                             references, traverse)

from .conftest import build_repo

CHAIN = {
    "chain/__init__.py": "",
    "chain/a.py": "from chain.b import b1\n\ndef a1():\n    return b1()\n\ndef a2():\n    return a1()\n",
    "chain/b.py": "from chain.c import c1, c2\n\ndef b1():\n    return c1() + c2()\n",
    "chain/c.py": "def c1():\n    return 1\n\ndef c2():\n    return d1()\n\ndef d1():\n    return 2\n",
}


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    from codeagent.query import open_index

    repo = build_repo(tmp_path_factory.mktemp("chain") / "repo", CHAIN)
    with open_index(repo.path, ref="main") as view:
        yield view


def fq(resp):
    return {n.qualified_name for n in resp.nodes}


def test_callers_and_callees(poly):
    assert fq(callers(poly, "app.util.helper")) == {"app.server.RateLimiter.check_rate_limit",
                                                    "app.util.unused_helper"}
    out = callees(poly, "app.server.handle_request")
    assert {"app.server.parse_http_response", "app.server.RateLimiter"} <= fq(out)
    assert all(e.kind == "calls" for e in out.edges)
    exact = [e.confidence for e in out.edges]
    assert exact == sorted(exact, key=lambda c: c != "exact")


def test_cross_language_callers(poly):
    assert fq(callers(poly, "web/client.parseHttpResponse")) == {"web/client.HttpClient.fetchJson"}


def test_references_include_imports_and_inheritance(poly):
    refs = references(poly, "app.util.helper")
    kinds = {e.kind for e in refs.edges}
    assert {"calls", "imports"} <= kinds
    assert any(n.kind == "file" and n.path == "app/server.py" for n in refs.nodes)
    assert fq(implementations(poly, "app.server.RateLimiter")) == {"app.server.SlidingWindowLimiter"}
    assert fq(implementations(poly, "app.server.RateLimiter.check_rate_limit")) == {
        "app.server.SlidingWindowLimiter.check_rate_limit"}


def test_dependencies_and_dependents_with_edge_filter(poly):
    deps = dependencies(poly, "app.server.SlidingWindowLimiter")
    assert {e.kind for e in deps.edges} == {"inherits"}
    assert fq(dependents(poly, "app.server.RateLimiter", edge_type="inherits")) == {
        "app.server.SlidingWindowLimiter"}
    assert fq(dependents(poly, "app.server.RateLimiter", edge_type="calls")) == {"app.server.handle_request"}
    with pytest.raises(InvalidParameter):
        dependents(poly, "app.server.RateLimiter", edge_type="likes")


def test_multi_hop_depth_and_budget(chain):
    one = traverse(chain, "chain.a.a2", direction="out", edge_types=["calls"], depth=1)
    assert fq(one) == {"chain.a.a1"}
    three = traverse(chain, "chain.a.a2", direction="out", edge_types=["calls"], depth=3)
    assert {(n.qualified_name, n.depth) for n in three.nodes} == {
        ("chain.a.a1", 1), ("chain.b.b1", 2), ("chain.c.c1", 3), ("chain.c.c2", 3)}
    assert not three.truncated
    deep = traverse(chain, "chain.a.a2", direction="out", edge_types=["calls"], depth=10)
    assert "chain.c.d1" in fq(deep)
    budget = traverse(chain, "chain.a.a2", direction="out", edge_types=["calls"], depth=10, max_nodes=2)
    assert len(budget.nodes) == 2 and budget.truncated
    assert budget.metadata.completeness == "truncated"
    up = traverse(chain, "chain.c.d1", direction="in", edge_types=["calls"], depth=5)
    assert {"chain.c.c2", "chain.b.b1", "chain.a.a1", "chain.a.a2"} <= fq(up)


def test_handles_and_errors(poly):
    by_id = callers(poly, callers(poly, "app.util.helper").root.symbol_id)
    assert fq(by_id) == fq(callers(poly, "app.util.helper"))
    with pytest.raises(NotFound):
        callers(poly, "no.such.symbol")
    with pytest.raises(InvalidParameter, match="2 symbols"):
        callers(poly, "check_rate_limit")
    with pytest.raises(InvalidParameter):
        traverse(poly, "app.util.helper", depth=0)


TREE = {
    "tree/__init__.py": "",
    "tree/core.py": "def root():\n    return 1\n",
    "tree/mid.py": ("from tree.core import root\n\n"
                    "def x1():\n" + "    root()\n" * 120 + "\n"
                    "def x2():\n    return root()\n"),
    "tree/top.py": "from tree.mid import x1, x2\n\ndef y1():\n    return x1()\n\ndef y2():\n    return x2()\n",
    "tests/test_mid.py": "from tree.mid import x2\n\ndef test_x2():\n    assert x2() == 1\n",
    "tree/mocks.py": "from tree.core import root\n\ndef fake_root():\n    return root()\n",
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    from codeagent.query import open_index

    repo = build_repo(tmp_path_factory.mktemp("tree") / "repo", TREE)
    with open_index(repo.path, ref="main") as view:
        yield repo, view


def test_no_tests_leaves_out_test_and_mock_code(tree):
    _, view = tree
    assert {"tests.test_mid.test_x2", "tree.mocks.fake_root"} <= fq(traverse(
        view, "tree.core.root", direction="in", edge_types=["calls"], depth=2))
    kept = traverse(view, "tree.core.root", direction="in", edge_types=["calls"], depth=2,
                    include_tests=False)
    assert fq(kept) == {"tree.mid.x1", "tree.mid.x2", "tree.top.y1", "tree.top.y2"}
    assert fq(callers(view, "tree.mid.x2", include_tests=False)) == {"tree.top.y2"}
    assert fq(callees(view, "tests.test_mid.test_x2", include_tests=False)) == {"tree.mid.x2"}
    # the cut-edge refill (limit 2: 121 call sites of x1) leaves test code out too
    assert fq(callers(view, "tree.core.root", limit=2, include_tests=False)) == {"tree.mid.x1", "tree.mid.x2"}


def test_tree_order_puts_each_second_hop_under_the_node_it_came_from(tree):
    from codeagent.query.graph import tree_order

    _, view = tree
    resp = traverse(view, "tree.core.root", direction="in", edge_types=["calls"], depth=2,
                    include_tests=False)
    assert [n.qualified_name for n in resp.nodes] == ["tree.mid.x1", "tree.mid.x2", "tree.top.y1", "tree.top.y2"]
    ordered = [(n.qualified_name, n.depth, e.dst_id if e else None) for n, e in tree_order(resp)]
    ids = {n.qualified_name: n.symbol_id for n in resp.nodes}
    assert ordered == [("tree.mid.x1", 1, resp.root.symbol_id), ("tree.top.y1", 2, ids["tree.mid.x1"]),
                       ("tree.mid.x2", 1, resp.root.symbol_id), ("tree.top.y2", 2, ids["tree.mid.x2"])]


def test_truncated_only_when_a_node_was_left_out(tree):
    _, view = tree
    # 121 call sites from two callers: the edge budget of limit 2 is cut, no caller is
    full = callers(view, "tree.core.root", limit=2, include_tests=False)
    assert fq(full) == {"tree.mid.x1", "tree.mid.x2"} and not full.truncated
    assert full.metadata.completeness == "complete"
    cut = callers(view, "tree.core.root", limit=1)
    assert len(cut.nodes) == 1 and cut.truncated


def test_callers_text_is_a_tree_and_says_truncated_only_when_cut(cli, tree):
    repo, _ = tree
    out = cli("callers", "tree.core.root", "--depth", "2", "--no-tests", "--repo", repo.path,
              check=True).stdout
    lines = [ln.split()[1] for ln in out.splitlines()[1:-1]]
    assert lines == ["tree.mid.x1", "tree.top.y1", "tree.mid.x2", "tree.top.y2"], out
    assert [ln[:4] for ln in out.splitlines()[1:-1]] == ["  fu", "    ", "  fu", "    "], out
    assert "-- 4 of 4 ·" in out and "truncated" not in out and "fake_root" not in out
    one = cli("callers", "tree.core.root", "--limit", "1", "--repo", repo.path, check=True).stdout
    assert "-- 1 of more than 1 (truncated" in one, one


def test_show_takes_a_short_path_qualified_name(cli, tree):
    repo, _ = tree
    out = cli("show", "mid.x2", "--repo", repo.path, "--no-source", check=True).stdout
    assert out.startswith("function tree.mid.x2"), out
