"""The CLI commands (real subprocesses): search, show, callers, callees, refs."""

from __future__ import annotations

import json

import pytest

from .conftest import POLY, build_repo


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return build_repo(tmp_path_factory.mktemp("cli") / "repo", POLY)


def test_search_json_shape(cli, repo):
    proc = cli("search", "validate_token", "--repo", repo.path, "--ref", "main", "--json", check=True)
    data = json.loads(proc.stdout)
    assert set(data) == {"results", "query_intent", "total_count", "metadata"}
    assert set(data["metadata"]) == {"ref", "manifest_id", "freshness", "completeness"}
    top = data["results"][0]
    assert set(top) == {"path", "line_start", "line_end", "kind", "name", "qualified_name", "symbol_id",
                        "symbol_stable_id", "score", "snippet"}
    assert (top["path"], top["name"], top["kind"], top["line_start"]) == ("src/lib.rs", "validate_token", "function", 6)
    assert data["query_intent"] == "symbol" and data["metadata"]["ref"] == "heads/main"


def test_search_human_output_and_filters(cli, repo):
    proc = cli("search", "parse", "--mode", "symbol", "--lang", "go", "--repo", repo.path, check=True)
    assert "cmd/main.go:14-16" in proc.stdout and "ParseConfig" in proc.stdout
    assert "heads/main @" in proc.stdout
    proc = cli("search", r"def \w+\(", "--mode", "regex", "--path", "app/*.py", "--limit", "2",
               "--repo", repo.path, check=True)
    assert "app/server.py:23" not in proc.stdout and "truncated" in proc.stdout


def test_missing_index_exits_5_naming_build(cli, git_repo):
    git_repo.write("a.py", "x = 1\n")
    git_repo.commit()
    proc = cli("search", "x", "--repo", git_repo.path)
    assert proc.returncode == 5
    assert "codeagent build" in proc.stderr
    proc = cli("search", "x", "--repo", git_repo.path, "--json")
    assert json.loads(proc.stdout)["error"]["code"] == "index_missing"


def test_semantic_without_vectors_says_so(cli, repo):
    proc = cli("search", "rate limiting", "--mode", "semantic", "--repo", repo.path)
    assert proc.returncode == 5 and "no vectors" in proc.stderr and "--embedder" in proc.stderr


def test_show_symbol_and_outline(cli, repo):
    proc = cli("show", "app.server.RateLimiter", "--repo", repo.path, check=True)
    assert "class app.server.RateLimiter" in proc.stdout and "app/server.py:7-15" in proc.stdout
    assert "def check_rate_limit(self, request):" in proc.stdout
    data = json.loads(cli("show", "app.server.RateLimiter", "--repo", repo.path, "--json", check=True).stdout)
    assert data["symbol_id"] and data["spans"][0]["is_primary"]
    outline = cli("show", "cmd/main.go", "--repo", repo.path, check=True).stdout
    assert "cmd.Server.Start" in outline and "cmd.ParseConfig" in outline
    missing = cli("show", "nope_nothing", "--repo", repo.path)
    assert missing.returncode == 4


def test_graph_commands(cli, repo):
    out = cli("callers", "app.util.helper", "--repo", repo.path, check=True).stdout
    assert "app.server.RateLimiter.check_rate_limit" in out and "(exact)" in out
    data = json.loads(cli("callees", "app.server.handle_request", "--repo", repo.path, "--json",
                          check=True).stdout)
    assert "app.server.parse_http_response" in {n["qualified_name"] for n in data["nodes"]}
    assert data["metadata"]["manifest_id"]
    refs = cli("refs", "app.util.helper", "--depth", "2", "--repo", repo.path, check=True).stdout
    assert "app.server.handle_request" in refs  # caller of a caller
    ambiguous = cli("callers", "check_rate_limit", "--repo", repo.path)
    assert ambiguous.returncode == 2 and "SlidingWindowLimiter" in ambiguous.stderr
