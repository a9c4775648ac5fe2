"""The CLI's `search --json` and MCP `search_code` are one result model: the CLI's field names
(top level, hits, metadata) are all names the MCP answer uses for the same things."""

from __future__ import annotations

import json

import pytest

from mcp_helpers import error_of, memory_client, ok, run_cli

pytestmark = pytest.mark.anyio


async def test_search_json_and_search_code_share_field_names(indexed_repo):
    cli = json.loads(run_cli("search", "helper", "--repo", indexed_repo.path, "--json").stdout)
    async with memory_client(indexed_repo.path) as c:
        mcp = ok(await c.call_tool("search_code", {"query": "helper"}))
    assert set(cli) <= set(mcp), set(cli) - set(mcp)
    assert set(cli["metadata"]) <= set(mcp["metadata"]), set(cli["metadata"]) - set(mcp["metadata"])
    assert set(cli["results"][0]) <= set(mcp["results"][0]), set(cli["results"][0]) - set(mcp["results"][0])
    assert cli["total_count"] == mcp["total_count"] and cli["query_intent"] == mcp["query_intent"]
    assert [r["symbol_id"] for r in cli["results"]] == [r["symbol_id"] for r in mcp["results"]]


async def test_search_code_groups_by_file_and_filters_roles(indexed_repo):
    """group_by="file" answers ranked files with the CLI's `--group files` fields; an unknown
    role is an argument error the model can read and correct."""
    cli = json.loads(run_cli("search", "helper", "--repo", indexed_repo.path, "--group", "files",
                             "--json").stdout)
    async with memory_client(indexed_repo.path) as c:
        mcp = ok(await c.call_tool("search_code", {"query": "helper", "group_by": "file"}))
        bad = await c.call_tool("search_code", {"query": "helper", "roles": ["banana"]})
    assert mcp["files"] and [f["path"] for f in mcp["files"]] == [f["path"] for f in cli["files"]]
    assert set(cli["files"][0]) <= set(mcp["files"][0])
    assert all(s["path"] == f["path"] for f in mcp["files"] for s in f["spans"])
    err = error_of(bad)
    assert err["code"] == "invalid_parameter" and "unknown role 'banana'" in err["message"]
