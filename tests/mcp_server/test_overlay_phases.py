"""An overlay published before its graph step (two-phase publishing): between the phases a
graph answer says so in its metadata, a build killed between them leaves a servable index,
and the next build lands the graph, the same as a clean build's."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_helpers import ok, server_params

from codeagent.indexer.build import BuildOptions, build
from codeagent.query import open_index
from codeagent.store import Store

pytestmark = pytest.mark.anyio

START = {"a.py": "def g():\n    return 1\n", "b.py": "from a import g\n\ndef f():\n    return g()\n"}
EDIT = "from a import g\n\ndef f():\n    return g()\n\ndef fresh_caller():\n    return g()\n"


def _codeagent(repo: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeagent", *args], cwd=repo, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "CODEAGENT_DAEMON": "0", **(env or {})})


def _edges(repo: Path) -> list[tuple]:
    with open_index(repo) as view:
        return sorted(view.sql("SELECT src_path, kind, dst_path, target FROM edges WHERE kind <> 'contains'"))


def _clean_edges(repo: Path, into: Path) -> list[tuple]:
    shutil.copytree(repo, into, ignore=shutil.ignore_patterns(".codeagent"))
    build(BuildOptions(repo=into, jobs=1))
    return _edges(into)


async def _callers(c, name: str) -> dict:
    hit = ok(await c.call_tool("search_symbols", {"query": name, "match": "exact"}))["results"][0]
    return ok(await c.call_tool("get_callers", {"symbol_id": hit["symbol_id"]}))


async def test_between_the_phases_graph_answers_say_they_are_from_the_previous_graph(git_repo):
    from mcp import Client

    git_repo.write_many(START)
    first = build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", EDIT)
    published = build(BuildOptions(repo=git_repo.path, jobs=1, graph_later=True))
    assert published.graph_pending and Store(git_repo.path / ".codeagent").graph_pending(published.manifest_id)
    async with Client(server_params(git_repo.path), read_timeout_seconds=60) as c:
        found = ok(await c.call_tool("search_symbols", {"query": "fresh_caller", "match": "exact"}))
        assert [h["path"] for h in found["results"]] == ["b.py"]
        assert found["metadata"]["manifest_id"] == published.manifest_id
        stale = await _callers(c, "g")  # no build runs: it answers at once, and says from what
        assert stale["metadata"]["graph"] == "indexing"
        assert stale["metadata"]["graph_manifest_id"] == first.manifest_id
        assert "fresh_caller" not in {n["name"] for n in stale["nodes"]}
        landed = build(BuildOptions(repo=git_repo.path, jobs=1))
        assert landed.manifest_id == published.manifest_id and not landed.graph_pending
        exact = await _callers(c, "g")  # the same server, the same manifest: its graph now
        assert exact["metadata"]["graph"] == "ready" and exact["metadata"]["manifest_id"] == published.manifest_id
        assert {"f", "fresh_caller"} <= {n["name"] for n in exact["nodes"]}


def test_a_build_killed_between_the_phases_leaves_a_servable_index_and_the_next_build_lands_the_graph(
        git_repo, tmp_path):
    git_repo.write_many(START)
    build(BuildOptions(repo=git_repo.path, jobs=1))
    git_repo.write("b.py", EDIT)
    twin = tmp_path / "twin"
    shutil.copytree(git_repo.path, twin)
    steps = tmp_path / "steps.log"
    assert _codeagent(twin, "build", "--json", env={"CODEAGENT_TEST_STEPS": str(steps)}).returncode == 0
    names = steps.read_text().splitlines()
    published = names.index("set ref worktree") + 1  # 1-based: the first swap, phase 1's
    assert "set ref worktree" in names[published:]  # the graph part's swap follows
    killed = _codeagent(git_repo.path, "build", "--json", env={"CODEAGENT_TEST_KILL_AT": str(published + 1)})
    assert killed.returncode == -9
    store = Store(git_repo.path / ".codeagent")
    mid = store.read_ref("worktree")
    assert store.graph_pending(mid)
    with open_index(git_repo.path) as view:
        assert view.graph_pending and view.sql("SELECT path FROM symbols WHERE name = 'fresh_caller'") == [("b.py",)]
    verified = _codeagent(git_repo.path, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert _codeagent(git_repo.path, "build", "--json").returncode == 0
    assert store.read_ref("worktree") == mid and not store.graph_pending(mid) and store.graph_landed(mid)
    assert _edges(git_repo.path) == _clean_edges(git_repo.path, tmp_path / "clean")
    assert ("b.py", "calls", "a.py", "g") in _edges(git_repo.path)
    verified = _codeagent(git_repo.path, "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert _codeagent(git_repo.path, "gc").returncode == 0
    with open_index(git_repo.path) as view:
        assert not view.graph_pending and view.manifest_id == mid
