"""`serve --watch`: a real stdio client sees an edit become searchable, hears
notifications/resources/updated, and index_status says `indexing` while a build runs."""

from __future__ import annotations

import json
import time

import anyio
import pytest

from mcp_helpers import ok, server_params

from codeagent.mcp_server.state import ServerConfig, ServerState
from codeagent.mcp_server.tools.engine import StatusTools
from codeagent.mcp_server.watch import INDEX_URI, apply_event

pytestmark = pytest.mark.anyio
SEARCHABLE_WITHIN = 60.0


async def _until_found(c, name: str) -> list[dict]:
    deadline = time.monotonic() + SEARCHABLE_WITHIN
    while time.monotonic() < deadline:
        hits = ok(await c.call_tool("search_symbols", {"query": name, "match": "exact"}))["results"]
        if hits:
            return hits
        await anyio.sleep(0.1)
    raise AssertionError(f"{name} was not searchable within {SEARCHABLE_WITHIN}s")


async def test_an_edit_becomes_searchable_and_subscribers_hear_of_it(indexed_repo):
    from mcp import Client

    heard = []

    async def on_message(message) -> None:
        if getattr(message, "method", "") == "notifications/resources/updated":
            heard.append(message.params.uri)

    # the 2025 protocol's resources/subscribe: what today's clients (Claude Code, Cursor) speak
    async with Client(server_params(indexed_repo.path, "--watch"), read_timeout_seconds=60,
                      message_handler=on_message, mode="legacy") as c:
        with pytest.warns(Warning):
            await c.subscribe_resource(INDEX_URI)
        indexed_repo.write("pkg/watched.py", "def freshly_written(x):\n    return helper(x)\n")
        hits = await _until_found(c, "freshly_written")
        assert [h["path"] for h in hits] == ["pkg/watched.py"]
        indexed_repo.remove("pkg/watched.py")
        deadline = time.monotonic() + SEARCHABLE_WITHIN
        while ok(await c.call_tool("search_symbols", {"query": "freshly_written", "match": "exact"}))["results"]:
            assert time.monotonic() < deadline, "a deleted file's symbol stayed searchable"
            await anyio.sleep(0.1)
        for _ in range(50):
            if heard:
                break
            await anyio.sleep(0.1)
        assert heard and set(heard) == {INDEX_URI}
        body = json.loads((await c.read_resource(INDEX_URI)).contents[0].text)
        assert body["last_build"]["event"] == "build_done" and body["manifest_id"]


def test_status_says_indexing_while_a_watch_build_runs(indexed_repo):
    state = ServerState(ServerConfig(indexed_repo.path))
    state.watch = {"building": None, "last": None}
    try:
        status = StatusTools(state)
        assert status.index_status().index_status == "ready"
        assert not apply_event(state, {"event": "build_started", "changes": 3})
        busy = status.index_status()
        assert busy.index_status == "indexing" and busy.active_job["changes"] == 3
        assert apply_event(state, {"event": "build_done", "changed": True, "manifest_id": "m"})
        assert status.index_status().index_status == "ready"
        assert not apply_event(state, {"event": "build_done", "changed": False})
        assert not apply_event(state, {"event": "build_failed", "error": {"message": "x"}})
    finally:
        state.close()


def test_watch_with_another_ref_is_refused(cli, indexed_repo):
    result = cli("serve", "--repo", str(indexed_repo.path), "--ref", "main", "--watch")
    assert result.returncode == 2 and "--watch" in result.stderr and "--ref" in result.stderr
