"""Graph tools (callers, callees, references, implementations, dependencies, dependents) and
`code_research`, the multi-hop walk that reports progress after each seed's walk."""

from __future__ import annotations

import re

from typing import Annotated, Literal

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from ...query import (SearchRequest, callees, callers, dependencies, dependents, implementations,
                      references, search, traverse)
from .search import QUERY_TIMEOUT, Handle, Query, Ref, hits, scored
from ..budget import skipped
from ..schemas import Edge, Graph, Node, Research, ResearchHop, symbol_of
from ..state import ServerState, metadata_of

CALLERS_OF = re.compile(r"\b(?:who|what|which\s+\w+)\s+(?:calls|uses|invokes)\s+(?P<name>[\w.:]+)"
                        r"|\bcall(?:er)?s\s+(?:of|to)\s+(?P<name2>[\w.:]+)", re.I)
CALLEES_OF = re.compile(r"\bwhat\s+does\s+(?P<name>[\w.:]+)\s+call\b", re.I)
IMPLEMENTATIONS_OF = re.compile(r"\b(?:implementations?|implementers|implementors|subclasses|"
                                r"subtypes|conformances?|conforming\s+types)\s+(?:of|to)\s+"
                                r"(?P<name>[\w.:]+)", re.I)
EdgeKind = Literal["calls", "references", "imports", "inherits", "implements", "overrides", "contains",
                   "extends", "accepts"]
# Seed 000's edge names: `extends` is our `inherits`; `accepts` (a parameter's type) is one
# kind of type reference, answered by `references`.
EDGE_ALIASES = {"extends": "inherits", "accepts": "references"}
GraphLimit = Annotated[int, Field(ge=1, le=1000, description="Most neighbours returned")]
IncludeTests = Annotated[bool, Field(description="False: no symbols of test, mock or fixture files")]

# focus -> (direction, edge kinds) followed from the seeds; no focus walks callers.
FOCUS = {
    "flow": ("out", ["calls"]),
    "dependencies": ("out", None),
    "architecture": ("out", ["imports", "inherits", "implements", "contains"]),
    "patterns": ("in", ["inherits", "implements", "overrides"]),
}


def graph_out(resp, view) -> Graph:
    root = symbol_of(resp.root) if resp.root else None
    if root is not None:  # get_symbol has it whole; here it names what the nodes are of
        root.doc = first_line(root.doc)
        root.signature = first_line(root.signature, 160)
    return Graph(root=root,
                 direction=resp.direction,
                 nodes=[Node.model_validate(n.to_dict()) for n in resp.nodes],
                 edges=[Edge.model_validate(e.to_dict()) for e in resp.edges],
                 truncated=resp.truncated,
                 metadata=metadata_of(view, "truncated" if resp.truncated else resp.metadata.completeness))


def first_line(text: str, limit: int = 120) -> str:
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= limit else line[:limit - 1] + "…"


class GraphTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def _run(self, fn, ref: str | None, symbol_id: str, **kwargs) -> Graph:
        self.state.wait_for_graph(ref)
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            return graph_out(fn(view, symbol_id, **kwargs), view)

    def get_callers(self, symbol_id: Handle, limit: GraphLimit = 200, ref: Ref = None,
                    include_tests: IncludeTests = True) -> Graph:
        """Who calls this symbol; each edge says how sure it is (exact or name-matched).
        Use it for impact analysis before changing a function."""
        return self._run(callers, ref, symbol_id, limit=limit + skipped(), include_tests=include_tests)

    def get_callees(self, symbol_id: Handle, limit: GraphLimit = 200, ref: Ref = None,
                    include_tests: IncludeTests = True) -> Graph:
        """What this symbol calls. Use it to follow what a function does."""
        return self._run(callees, ref, symbol_id, limit=limit + skipped(), include_tests=include_tests)

    def get_references(self, symbol_id: Handle, limit: GraphLimit = 200, ref: Ref = None) -> Graph:
        """Everything that uses this symbol: calls, type references, imports,
        inheritance. Use it to find all usages."""
        return self._run(references, ref, symbol_id, limit=limit + skipped())

    def get_implementations(self, symbol_id: Handle, limit: GraphLimit = 200,
                            ref: Ref = None) -> Graph:
        """Classes that implement or extend this interface or base class, and
        overrides. Use it for polymorphic code."""
        return self._run(implementations, ref, symbol_id, limit=limit + skipped())

    def get_dependencies(self, symbol_id: Handle, edge_type: EdgeKind | None = None,
                         limit: GraphLimit = 200, ref: Ref = None) -> Graph:
        """Outgoing edges of a symbol (optionally one edge type). Use it for what a
        symbol depends on."""
        return self._run(dependencies, ref, symbol_id, edge_type=EDGE_ALIASES.get(edge_type, edge_type),
                         limit=limit + skipped())

    def get_dependents(self, symbol_id: Handle, edge_type: EdgeKind | None = None,
                       limit: GraphLimit = 200, ref: Ref = None) -> Graph:
        """Incoming edges of a symbol (optionally one edge type). Use it for what
        depends on a symbol."""
        return self._run(dependents, ref, symbol_id, edge_type=EDGE_ALIASES.get(edge_type, edge_type),
                         limit=limit + skipped())

    async def code_research(
        self, query: Query, ctx: Context,
        depth: Annotated[int, Field(ge=1, le=5, description="Graph hops from the seed symbols")] = 2,
        focus: Literal["architecture", "dependencies", "patterns", "flow"] | None = None,
        max_nodes: Annotated[int, Field(ge=1, le=2000)] = 200, ref: Ref = None,
        path_filter: Annotated[str | None, Field(description="Seed symbols only from paths "
                                                 "matching this glob")] = None,
    ) -> Research:
        """A search's symbols, then `depth` graph hops: callers (default),
        implementers (`patterns`), callees (`flow`), imports and bases (`architecture`), all
        edges (`dependencies`). Use it for questions that span several files."""
        direction, kinds, seed_query = research_plan(query, focus)
        await anyio.to_thread.run_sync(self.state.wait_for_graph, ref)
        with self.state.view(ref) as view:
            resp = await anyio.to_thread.run_sync(lambda: _deadlined(
                view, lambda: search(view, SearchRequest(seed_query, limit=5, path=path_filter))))
            seeds = scored(hits(resp.results))
            named = ([h for h in seeds if h.name == seed_query.rsplit(".", 1)[-1]]
                     if seed_query != query else [])  # "what calls X": start from X itself
            roots = list(dict.fromkeys(h.symbol_id for h in named or seeds if h.symbol_id))
            steps = len(roots) + 1
            await ctx.report_progress(1, steps, f"found {len(seeds)} seed results")
            nodes: dict[str, Node] = {}
            edges: list[Edge] = []
            truncated = False
            for step, root in enumerate(roots, 2):
                budget = max_nodes - len(nodes)
                if budget < 1:
                    truncated = True
                    break
                graph = await anyio.to_thread.run_sync(lambda: _deadlined(view, lambda: traverse(
                    view, root, direction=direction, edge_types=kinds, depth=depth,
                    max_nodes=budget)))
                truncated = truncated or graph.truncated
                edges += [Edge.model_validate(e.to_dict()) for e in graph.edges]
                for n in graph.nodes:
                    key = n.symbol_id or f"{n.path}:{n.line_start}"
                    if key not in nodes:
                        nodes[key] = Node.model_validate(n.to_dict())
                await ctx.report_progress(step, steps, f"walked {step - 1} of {len(roots)} seeds")
            walk = f"{direction} {'/'.join(kinds or ['all'])}"
            hops = [ResearchHop(hop=d, description=walk, nodes=level) for d in range(1, depth + 1)
                    if (level := [n for n in nodes.values() if n.depth == d])]
            completeness = "truncated" if truncated else "complete"
            return Research(query=query, focus=focus, seeds=seeds, hops=hops, edges=edges,
                            truncated=truncated, metadata=metadata_of(view, completeness))


def research_plan(query: str, focus: str | None) -> tuple[str, list[str] | None, str]:
    """(direction, edge kinds, seed query) for a research question: "what calls X" (and no
    focus) walks callers from X; "what does X call" walks callees; "implementations of X"
    walks the types that extend or implement X, and theirs."""
    if focus is None:
        if (m := CALLEES_OF.search(query)) is not None:
            return "out", ["calls"], m.group("name")
        if (m := IMPLEMENTATIONS_OF.search(query)) is not None:
            return "in", ["inherits", "implements"], m.group("name")
        m = CALLERS_OF.search(query)
        return "in", ["calls"], (m.group("name") or m.group("name2") if m else query)
    direction, kinds = FOCUS[focus]
    return direction, kinds, query


def _deadlined(view, fn):
    with view.deadline(QUERY_TIMEOUT):
        return fn()
