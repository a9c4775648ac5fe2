"""Every filter reaches every retriever (issue 45, items 3 and 6): `roles` filters symbol
answers too, a negated path glob excludes, and a filter a retriever cannot apply is an error
or leaves that retriever out, never unfiltered hits."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from codeagent.errors import InvalidParameter
from codeagent.query import SearchRequest, open_index, search
from codeagent.query.globs import glob_matcher
from codeagent.roles import file_role

from .conftest import build_repo

GIN = {
    "tree.go": '''package gin

type node struct {
	path string
}

// getValue returns the handle registered with the given path.
func (n *node) getValue(path string) string {
	return n.path + path
}
''',
    "tree_test.go": '''package gin

import "testing"

func getValue(t *testing.T) string {
	return "fake"
}

func TestGetValue(t *testing.T) {
	n := &node{path: "/"}
	if n.getValue("x") == "" {
		t.Fatal("empty")
	}
}
''',
    "docs/routing.md": '''# Routing

Routes are matched by getValue in the radix tree.
''',
}
MODES = ("auto", "symbol", "text", "regex", "path")


@pytest.fixture(scope="module")
def gin(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("gin") / "repo", GIN)
    with open_index(repo.path, ref="main") as view:
        yield repo, view


@pytest.mark.parametrize("role", ["test", "docs", "source"])
@pytest.mark.parametrize("mode", MODES)
def test_roles_filter_every_mode(gin, mode, role):
    _, view = gin
    query = "tree" if mode == "path" else "getValue"
    resp = search(view, SearchRequest(query, mode=mode, roles=(role,), limit=20))
    roles = {h.path: file_role(h.path, "") for h in resp.results}
    assert set(roles.values()) <= {role}, (mode, role, roles)


def test_symbol_query_with_role_test_answers_the_test_definition_first(gin):
    """The repro of issue 45: `search getValue --role test` put tree.go's method first."""
    _, view = gin
    top = search(view, SearchRequest("getValue", roles=("test",))).results[0]
    assert (top.path, top.result_type) == ("tree_test.go", "symbol")


@pytest.mark.parametrize("mode", MODES)
def test_a_negated_path_glob_excludes(gin, mode):
    _, view = gin
    query = "tree" if mode == "path" else "getValue"
    resp = search(view, SearchRequest(query, mode=mode, path="!*_test.go", limit=20))
    paths = {h.path for h in resp.results}
    assert paths and "tree_test.go" not in paths, (mode, paths)


def test_the_python_glob_matcher_negates_like_the_sql_one():
    match = glob_matcher("!*_test.go")
    assert [match(p) for p in ("tree.go", "tree_test.go", "a/b_test.go")] == [True, False, False]
    with pytest.raises(InvalidParameter):
        glob_matcher("!")


@pytest.mark.parametrize("mode", ["text", "regex", "path"])
def test_kind_on_a_mode_that_cannot_apply_it_is_an_error(gin, mode):
    _, view = gin
    with pytest.raises(InvalidParameter, match="kind filter cannot apply"):
        search(view, SearchRequest("getValue", mode=mode, kind="function"))


def test_kind_in_auto_mode_answers_only_symbols_of_that_kind(gin):
    _, view = gin
    for query in ("getValue", "where are routes matched"):
        resp = search(view, SearchRequest(query, kind="method", limit=20))
        assert {(h.result_type, h.kind) for h in resp.results} <= {("symbol", "method")}, query


def _cli(repo, *args):
    return subprocess.run([sys.executable, "-m", "codeagent", *args, "--repo", str(repo.path)],
                          capture_output=True, text=True, timeout=120)


def test_cli_role_and_negated_path(gin):
    repo, _ = gin
    out = _cli(repo, "search", "getValue", "--role", "test", "--json")
    assert out.returncode == 0, out.stderr
    assert {r["path"] for r in json.loads(out.stdout)["results"]} == {"tree_test.go"}
    out = _cli(repo, "search", "getValue", "--path", "!*_test.go", "--json")
    assert out.returncode == 0, out.stderr
    paths = {r["path"] for r in json.loads(out.stdout)["results"]}
    assert "tree.go" in paths and "tree_test.go" not in paths
    out = _cli(repo, "search", "getValue", "--path", "!")
    assert out.returncode == 2 and "negates nothing" in out.stderr and "Traceback" not in out.stderr
