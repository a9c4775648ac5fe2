"""`codeagent serve --org DIR` through the SDK's real stdio client: hits name their repository,
`repos` narrows, navigation takes `repo`, and a new fleet build is served without a restart."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio

from codeagent.indexer.fleet.engines import LocalEngine
from codeagent.indexer.fleet.plan import build_fleet
from codeagent.indexer.fleet.spec import load_fleet
from codeagent.store import Store


def _ok(result) -> dict:
    assert not result.is_error, result.content
    return result.structured_content


async def _session(store: Path, fleet: dict) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "codeagent", "serve", "--org", str(store)],
                                   env={**os.environ, "PYTHONUNBUFFERED": "1"})
    async with Client(params, read_timeout_seconds=60) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert names == {"search_code", "get_symbol", "get_file_outline"}
        hits = _ok(await client.call_tool("search_code", {"query": "BillingRetryPolicy"}))["results"]
        assert hits[0]["repo"] == "billing" and hits[0]["path"] == "billing/retry.py"
        narrowed = _ok(await client.call_tool("search_code", {"query": "handle_request_3", "repos": ["api-fork"]}))
        assert narrowed["results"] and {h["repo"] for h in narrowed["results"]} == {"api-fork"}
        symbol = _ok(await client.call_tool("get_symbol", {"repo": "billing", "symbol_id": hits[0]["symbol_id"]}))
        assert symbol["repo"] == "billing" and symbol["name"] == "BillingRetryPolicy" and symbol["spans"]
        outline = _ok(await client.call_tool("get_file_outline", {"repo": "api", "path": "api/server.go"}))
        assert [s["name"] for s in outline["symbols"]] == ["StartServer"]
        wrong = await client.call_tool("get_symbol", {"repo": "nope", "symbol_id": "x"})
        assert wrong.is_error and json.loads(wrong.content[0].text)["error"]["code"] == "invalid_parameter"

        billing = fleet["repos"]["billing"]
        billing.write("billing/ledger.py", "def reconcile_ledger_entries():\n    return []\n")
        billing.commit("ledger")
        build_fleet(load_fleet(fleet["file"]), Store(store), LocalEngine(1))
        fresh = _ok(await client.call_tool("search_code", {"query": "reconcile_ledger_entries"}))["results"]
        assert fresh[0]["repo"] == "billing" and fresh[0]["path"] == "billing/ledger.py"


def test_serve_org_over_stdio(fleet, tmp_path: Path):
    store = Store(tmp_path / "s", create=True)
    build_fleet(load_fleet(fleet["file"]), store, LocalEngine(1))
    anyio.run(_session, store.root, fleet)
