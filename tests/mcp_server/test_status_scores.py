"""MCP `index_status` carries the search-quality figures `publish --score` recorded for the
served commit, as `status --json` does (real git, real remote, the real server over stdio)."""

from __future__ import annotations

import json

import pytest

from mcp_helpers import ok, run_cli, stdio_client

pytestmark = pytest.mark.anyio


async def test_index_status_shows_the_figures_publish_recorded(git_repo, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    git_repo.write("parser.py", 'def parse_config(text):\n    """Read key value pairs."""\n    return text\n')
    git_repo.commit("initial import of the project")
    git_repo.write("parser.py", (git_repo.path / "parser.py").read_text() + "# strip keys\n")
    git_repo.commit("strip whitespace around configuration keys")
    run_cli("build", git_repo.path, "--ref", "main")
    out = run_cli("publish", git_repo.path, "--to", tmp_path / "remote", "--ref", "main", "--score", "1", "--json")
    figures = json.loads(out.stdout)["scores"]
    assert figures and figures["tasks"] == 1
    async with stdio_client(git_repo.path, "--ref", "main") as client:
        status = ok(await client.call_tool("index_status", {}))
    assert status["search_quality"] == figures
