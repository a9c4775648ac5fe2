"""Graph tools (callers, callees, references, implementations, dependencies, dependents) and
`code_research`, the multi-hop walk that reports progress after each hop."""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from .index_tools import QUERY_TIMEOUT, Handle, Query, hits
from .budget import skipped
from .schemas import Edge, Graph, Node, Research, ResearchHop, Symbol
from .state import ServerState, metadata_of

EdgeKind = Literal["calls", "references", "imports", "inherits", "implements", "overrides", "contains"]
GraphLimit = Annotated[int, Field(ge=1, le=1000, description="Most neighbours returned")]

# focus -> (direction, edge kinds) followed from the seeds; None: every kind.
FOCUS = {
    None: ("out", ["calls", "references", "inherits", "implements"]),
    "flow": ("out", ["calls"]),
    "dependencies": ("out", None),
    "architecture": ("out", ["imports", "inherits", "implements", "contains"]),
    "patterns": ("in", ["inherits", "implements", "overrides"]),
}


def graph_out(resp, view) -> Graph:
    return Graph(root=Symbol.model_validate(resp.root.to_dict()) if resp.root else None,
                 direction=resp.direction,
                 nodes=[Node.model_validate(n.to_dict()) for n in resp.nodes],
                 edges=[Edge.model_validate(e.to_dict()) for e in resp.edges],
                 truncated=resp.truncated,
                 metadata=metadata_of(view, "truncated" if resp.truncated else resp.metadata.completeness))


class GraphTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def _run(self, fn, symbol_id: str, **kwargs) -> Graph:
        with self.state.view() as view, view.deadline(QUERY_TIMEOUT):
            return graph_out(fn(view, symbol_id, **kwargs), view)

    def get_callers(self, symbol_id: Handle, limit: GraphLimit = 200) -> Graph:
        """Symbols that call this one; each edge says how sure it is (exact or name-matched)."""
        from ..query import callers

        return self._run(callers, symbol_id, limit=limit + skipped())

    def get_callees(self, symbol_id: Handle, limit: GraphLimit = 200) -> Graph:
        """Symbols this one calls."""
        from ..query import callees

        return self._run(callees, symbol_id, limit=limit + skipped())

    def get_references(self, symbol_id: Handle, limit: GraphLimit = 200) -> Graph:
        """Everything that uses this symbol: calls, type references, imports, inheritance."""
        from ..query import references

        return self._run(references, symbol_id, limit=limit + skipped())

    def get_implementations(self, symbol_id: Handle, limit: GraphLimit = 200) -> Graph:
        """Classes that implement or extend this interface or base class (and overrides)."""
        from ..query import implementations

        return self._run(implementations, symbol_id, limit=limit + skipped())

    def get_dependencies(self, symbol_id: Handle, edge_type: EdgeKind | None = None,
                         limit: GraphLimit = 200) -> Graph:
        """Outgoing edges: what this symbol depends on, optionally one edge type only."""
        from ..query import dependencies

        return self._run(dependencies, symbol_id, edge_type=edge_type, limit=limit + skipped())

    def get_dependents(self, symbol_id: Handle, edge_type: EdgeKind | None = None,
                       limit: GraphLimit = 200) -> Graph:
        """Incoming edges: what depends on this symbol, optionally one edge type only."""
        from ..query import dependents

        return self._run(dependents, symbol_id, edge_type=edge_type, limit=limit + skipped())

    async def code_research(
        self, query: Query, ctx: Context,
        depth: Annotated[int, Field(ge=1, le=5, description="Graph hops from the seed symbols")] = 2,
        focus: Literal["architecture", "dependencies", "patterns", "flow"] | None = None,
        max_nodes: Annotated[int, Field(ge=1, le=2000)] = 200,
    ) -> Research:
        """Multi-hop research: search for seed symbols, then follow the graph `depth` hops
        (calls for `flow`, imports/inheritance for `architecture`, implementers for
        `patterns`, every edge for `dependencies`). Sends a progress notification per hop."""
        from ..query import SearchRequest, search

        direction, kinds = FOCUS[focus]
        with self.state.view() as view:
            resp = await anyio.to_thread.run_sync(lambda: _deadlined(
                view, lambda: search(view, SearchRequest(query, limit=5))))
            seeds = hits(resp.results)
            await ctx.report_progress(0, depth, f"found {len(seeds)} seed results")
            frontier = [h.symbol_id for h in seeds if h.symbol_id]
            seen = set(frontier)
            hops, edges, truncated = [], [], False
            for hop in range(1, depth + 1):
                budget = max_nodes - len(seen)
                found, hop_edges, cut = await anyio.to_thread.run_sync(
                    lambda: _expand(view, frontier, direction, kinds, seen, budget))
                truncated = truncated or cut
                edges.extend(hop_edges)
                hops.append(ResearchHop(hop=hop, description=f"{direction} {'/'.join(kinds or ['all'])}",
                                        nodes=found))
                await ctx.report_progress(hop, depth, f"hop {hop}: {len(found)} new symbols")
                frontier = [n.symbol_id for n in found if n.symbol_id]
                if not frontier or truncated:
                    break
            completeness = "truncated" if truncated else "complete"
            return Research(query=query, focus=focus, seeds=seeds, hops=hops, edges=edges,
                            truncated=truncated, metadata=metadata_of(view, completeness))


def _deadlined(view, fn):
    with view.deadline(QUERY_TIMEOUT):
        return fn()


def _expand(view, frontier: list[str], direction: str, kinds: list[str] | None,
            seen: set[str], budget: int) -> tuple[list[Node], list[Edge], bool]:
    """One hop from every frontier symbol: (new nodes, edges, whether the budget cut it)."""
    from ..query import neighbors

    found: list[Node] = []
    edges: list[Edge] = []
    for sid in frontier:
        resp = _deadlined(view, lambda: neighbors(view, sid, direction=direction, edge_types=kinds))
        edges.extend(Edge.model_validate(e.to_dict()) for e in resp.edges)
        for n in resp.nodes:
            key = n.symbol_id or f"{n.path}:{n.line_start}"
            if key in seen:
                continue
            if len(found) >= budget:
                return found, edges, True
            seen.add(key)
            found.append(Node.model_validate(n.to_dict()))
    return found, edges, False
