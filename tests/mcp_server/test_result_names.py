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


async def test_qualified_names_agree_between_tools(indexed_repo):
    """A symbol's qualified_name is the same (module-qualified) in an outline, get_symbol,
    lookup_symbol, search hits and graph answers: the name one tool gives, another takes."""
    async with memory_client(indexed_repo.path) as c:
        outline = ok(await c.call_tool("get_file_outline", {"path": "pkg/core.py"}))["symbols"]
        names = {s["symbol_id"]: s["qualified_name"] for s in outline}
        assert names and set(names.values()) >= {"pkg.core.helper", "pkg.core.Base.run"}
        for symbol_id, qualified in names.items():
            detail = ok(await c.call_tool("get_symbol", {"symbol_id": symbol_id}))
            assert detail["symbol"]["qualified_name"] == qualified
            looked = ok(await c.call_tool("lookup_symbol", {"qualified_name": qualified}))
            assert symbol_id in [h["symbol_id"] for h in looked["results"]], qualified
        callers = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.core.helper"}))
        assert callers["root"]["qualified_name"] == "pkg.core.helper"
        for node in callers["nodes"]:
            assert node["qualified_name"] == names[node["symbol_id"]]
        hits = ok(await c.call_tool("search_symbols", {"query": "helper"}))["results"]
        assert {h["qualified_name"] for h in hits if h["symbol_id"] in names} == {"pkg.core.helper"}
