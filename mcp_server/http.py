"""`serve --transport http`: one Starlette app with streamable HTTP at /mcp, the legacy
HTTP+SSE transport at /sse (+ /messages/) for clients that predate it, and GET /health."""

from __future__ import annotations

from typing import Any

from .. import __version__
from .events import RETRY_MS, BoundedEventStore
from .state import NoIndex

LEGACY_PATHS = ("/sse", "/messages")


def http_app(server: Any, host: str) -> Any:
    """The ASGI app serving `server` (a CodeagentMCP) over both HTTP transports."""
    from starlette.requests import Request
    from starlette.responses import JSONResponse

    @server.custom_route("/health", methods=["GET"], include_in_schema=False)
    async def health(_request: Request) -> JSONResponse:
        return JSONResponse(health_of(server.state))

    # an event store makes the SDK open each SSE stream with a priming event and `retry:`
    app = server.streamable_http_app(host=host, event_store=BoundedEventStore(),
                                     retry_interval=RETRY_MS)
    legacy = server.sse_app(host=host)
    app.router.routes.extend(r for r in legacy.routes if getattr(r, "path", "") in LEGACY_PATHS)
    return app


def health_of(state: Any) -> dict:
    """Liveness and which index answers (no work-tree scan: a probe must be cheap)."""
    with state.optional_view() as view:
        if isinstance(view, NoIndex):
            return {"status": "ok", "version": __version__, "index": view.schema_status,
                    "manifest_id": None}
        return {"status": "ok", "version": __version__, "index": "ready", "ref": view.ref,
                "manifest_id": view.manifest_id}
