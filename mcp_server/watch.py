"""`serve --watch`: the server follows a `codeagent watch` child process and tells clients.

The server itself stays read-only: the child watches the work tree and runs each build in a
process of its own; the server reads its JSON event lines, reports `indexing` (index_status,
the `codeagent://index` resource) while a build runs, and after a build that moved the index
sends `notifications/resources/updated` for `codeagent://index` to a client that subscribed
to it. Requests keep answering from the newest complete manifest throughout (the follower
swaps to it on the next request). The child stops when the server's end of its stdin closes,
so it never outlives the server.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from ..cli import child_command
from .state import ServerState
from .tools.engine import StatusTools

INDEX_URI = "codeagent://index"
log = logging.getLogger("codeagent.mcp.watch")
Send = Callable[[SessionMessage], Awaitable[None]]


def watch_command(state: ServerState) -> tuple[list[str], str]:
    return child_command("watch", str(state.root), "--json", "--store", str(state.store_dir),
                         "--stop-on-stdin-eof")


def index_updated() -> SessionMessage:
    return SessionMessage(types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/resources/updated", params={"uri": INDEX_URI}))


def apply_event(state: ServerState, event: dict[str, Any]) -> bool:
    """Record one watcher event in `state`; True when clients should hear the index moved."""
    kind = event.get("event")
    if kind == "build_started":
        state.watch["building"] = {"job_id": "watch", "mode": "watch_graph" if event.get("graph") else "watch",
                                   "changes": event.get("changes", 0),
                                   "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    elif kind == "graph_abandoned":
        state.watch["building"] = None
    elif kind in ("build_done", "build_failed"):
        state.watch["building"] = None
        state.watch["last_graph" if event.get("graph") else "last"] = event
        return kind == "build_done" and bool(event.get("changed") or event.get("graph"))
    return False


async def follow_watcher(state: ServerState, send: Send | None) -> None:
    """Run the watcher child until cancelled; `send` delivers notifications (None: the
    transport has no way to push them)."""
    state.watch = {"building": None, "last": None}
    argv, cwd = watch_command(state)
    async with await anyio.open_process(argv, cwd=cwd, stderr=None) as proc:
        try:
            buf = b""
            async for chunk in proc.stdout:
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for line in lines:
                    await _handle(state, line, send)
            log.warning("the watcher stopped (exit %s): the index no longer follows the work tree",
                        await proc.wait())
        finally:
            with anyio.CancelScope(shield=True):
                await proc.stdin.aclose()  # the watcher's signal to stop
                with anyio.move_on_after(5):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
            state.watch["building"] = None


async def _handle(state: ServerState, line: bytes, send: Send | None) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        return
    if event.get("event") == "build_failed":
        log.warning("watch build failed: %s", event.get("error", {}).get("message"))
    if apply_event(state, event) and send is not None and INDEX_URI in state.subscriptions:
        await send(index_updated())


def index_resource(state: ServerState) -> str:
    """The `codeagent://index` resource: what the server answers from and whether a build runs."""
    status = StatusTools(state).index_status()
    return json.dumps({"index_status": status.index_status, "ref": status.ref,
                       "manifest_id": status.manifest_id, "active_job": status.active_job,
                       "last_build": (state.watch or {}).get("last"),
                       "last_graph_build": (state.watch or {}).get("last_graph")})


def enable_watch_protocol(server, state: ServerState) -> None:
    """Offer the `codeagent://index` resource and subscriptions to it."""
    server.resource(INDEX_URI, name="index", title="Index status", mime_type="application/json",
                    description="The index the server answers from; subscribe to hear when a "
                                "watch build replaced it")(lambda: index_resource(state))

    async def subscribe(_ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        state.subscriptions.add(str(params.uri))
        return types.EmptyResult()

    async def unsubscribe(_ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        state.subscriptions.discard(str(params.uri))
        return types.EmptyResult()

    low = server._lowlevel_server
    low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)
