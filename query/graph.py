"""Graph queries over the `edges` table: callers, callees, references, implementations,
dependencies, dependents, and bounded multi-hop traversal (BFS with a node budget)."""

from __future__ import annotations

from .index import IndexView
from .results import GraphResponse

EDGE_KINDS = ("calls", "references", "imports", "inherits", "implements", "overrides", "contains")
DIRECTIONS = ("in", "out", "both")


def neighbors(view: IndexView, symbol: str, *, direction: str = "in",
              edge_types: list[str] | None = None, limit: int = 200) -> GraphResponse:
    """Symbols one edge away from `symbol` (a handle, see navigate.resolve_symbol)."""
    raise NotImplementedError


def callers(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="in", edge_types=["calls"], limit=limit)


def callees(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="out", edge_types=["calls"], limit=limit)


def references(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    """Everything that uses `symbol`: calls, type references, imports, inheritance."""
    return neighbors(view, symbol, direction="in",
                     edge_types=["calls", "references", "imports", "inherits", "implements"], limit=limit)


def implementations(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    """Subclasses / implementers of a class or interface (inherits, implements, overrides)."""
    return neighbors(view, symbol, direction="in", edge_types=["inherits", "implements", "overrides"],
                     limit=limit)


def dependencies(view: IndexView, symbol: str, *, edge_type: str | None = None,
                 limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="out", edge_types=[edge_type] if edge_type else None,
                     limit=limit)


def dependents(view: IndexView, symbol: str, *, edge_type: str | None = None,
               limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="in", edge_types=[edge_type] if edge_type else None,
                     limit=limit)


def traverse(view: IndexView, symbol: str, *, direction: str = "out",
             edge_types: list[str] | None = None, depth: int = 2,
             max_nodes: int = 200) -> GraphResponse:
    """Breadth-first walk up to `depth` hops; truncated=True when `max_nodes` cut it."""
    raise NotImplementedError
