"""`codeagent serve --org DIR`: a small MCP server over a fleet store (docs/org.md).

Three read-only tools: search_code across the fleet (each hit names its `repo`; `repos`
narrows), get_symbol and get_file_outline, which take the `repo` a hit named. Each call first
follows new builds (query.org.FleetView.refresh); calls are answered one at a time, so a view
replaced by a refresh is never closed under a running query.
"""

from __future__ import annotations

import threading
from importlib.metadata import version
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import Field

from ..errors import CodeagentError
from ..query import file_outline, get_symbol
from ..query.org import FleetView, org_search
from ..query.search import SearchRequest
from .app import error_result

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
INSTRUCTIONS = """\
codeagent answers questions about a fleet of repositories. search_code searches all of them
(`repos` narrows to some); every hit names its `repo`. Pass that repo with a hit's symbol_id to
get_symbol, or with a path to get_file_outline. Errors are isError results whose text is
{"error": {"code", "message", "hint"}}.
"""

Repo = Annotated[str, Field(min_length=1, max_length=100, description="A repository of the fleet (a hit's `repo`)")]


class OrgTools:
    def __init__(self, fleet: FleetView) -> None:
        self.fleet = fleet
        self.lock = threading.Lock()

    def search_code(self, query: Annotated[str, Field(min_length=1, max_length=2000)],
                    repos: list[str] | None = None, limit: Annotated[int, Field(ge=1, le=100)] = 10,
                    fusion: Literal["global", "score", "rank"] = "global") -> dict[str, Any]:
        """Search code across every repository of the fleet (or only `repos`); hits best
        first, each naming its `repo`, with symbol_id handles for get_symbol."""
        with self.lock:
            self.fleet.refresh()
            answer = org_search(self.fleet, SearchRequest(query=query, limit=limit), repos or None, fusion)
            return answer.to_dict()

    def get_symbol(self, repo: Repo, symbol_id: Annotated[str, Field(min_length=1, max_length=512)]) -> dict[str, Any]:
        """One symbol of `repo` in full: signature, doc, spans with source, children."""
        with self.lock:
            self.fleet.refresh()
            return {"repo": repo, **get_symbol(self.fleet.view(repo), symbol_id).to_dict()}

    def get_file_outline(self, repo: Repo, path: Annotated[str, Field(min_length=1, max_length=4096)]) -> dict[str, Any]:
        """The symbols a file of `repo` defines, in line order."""
        with self.lock:
            self.fleet.refresh()
            return {"repo": repo, **file_outline(self.fleet.view(repo), path).to_dict()}


class OrgMCP(MCPServer):
    """Our errors as isError results with their stable codes (as the single-repository server)."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except CodeagentError as exc:
            return error_result(exc)
        except ToolError as exc:
            if isinstance(exc.__cause__, CodeagentError):
                return error_result(exc.__cause__)
            raise


def create_org_server(fleet: FleetView) -> tuple[OrgMCP, OrgTools]:
    tools = OrgTools(fleet)
    server = OrgMCP("codeagent-org", title="codeagent fleet index", version=version("codeagent"),
                    instructions=INSTRUCTIONS)
    for fn in (tools.search_code, tools.get_symbol, tools.get_file_outline):
        server.add_tool(fn, annotations=READ_ONLY, description=" ".join((fn.__doc__ or "").split()),
                        structured_output=True)
    return server, tools
