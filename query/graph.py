"""Graph queries over the `edges` table: callers, callees, references, implementations,
dependencies, dependents, and bounded multi-hop traversal (BFS with a node budget).

An edge is src -> dst ("src calls dst", "src inherits dst"...). `in` follows edges into a
symbol (who calls / references / subclasses it), `out` follows edges out of it. Every edge
keeps its confidence: `exact` (resolved through scopes and imports) or `name` (matched by
name only). Exact edges come first.
"""

from __future__ import annotations

from ..errors import IndexIncompatible, InvalidParameter
from .edge_table import EDGE_ORDER, EdgeTable
from .index import IndexView
from .navigate import resolve_symbol
from .results import COMPLETE, TRUNCATED, GraphEdge, GraphNode, GraphResponse, SymbolInfo
from .symbol_table import resident_table

EDGE_KINDS = ("calls", "references", "imports", "inherits", "implements", "overrides", "contains")
DIRECTIONS = ("in", "out", "both")
USE_KINDS = ["calls", "references", "imports", "inherits", "implements"]
MAX_DEPTH = 10
# Named one-hop queries: (direction, edge kinds); multi-hop versions reuse them.
PRESETS: dict[str, tuple[str, list[str] | None]] = {
    "callers": ("in", ["calls"]), "callees": ("out", ["calls"]),
    "references": ("in", USE_KINDS), "implementations": ("in", ["inherits", "implements", "overrides"]),
    "dependencies": ("out", None), "dependents": ("in", None),
}

_EDGES_SQL = """
SELECT e.src_id, e.dst_id, e.kind, e.confidence, e.src_path, e.src_line, coalesce(e.target, ''),
       e.dst_path, '{dir}' AS dir
FROM edges e WHERE e.{key} IN (SELECT unnest(?::VARCHAR[])) AND {kinds}
ORDER BY """ + EDGE_ORDER + """
LIMIT {limit}
"""
_NODES_SQL = """
SELECT s.symbol_id, s.stable_id, s.name, {fq}, s.kind, s.path, s.start_line, s.end_line
FROM symbols s {join} WHERE s.symbol_id IN (SELECT unnest(?::VARCHAR[]))
"""


def _check(direction: str, edge_types: list[str] | None) -> list[str] | None:
    if direction not in DIRECTIONS:
        raise InvalidParameter(f"direction must be one of {', '.join(DIRECTIONS)}")
    if edge_types:
        bad = [k for k in edge_types if k not in EDGE_KINDS]
        if bad:
            raise InvalidParameter(f"unknown edge type {bad[0]!r}; choose from {', '.join(EDGE_KINDS)}")
    return list(edge_types) if edge_types else None


def _require_edges(view: IndexView) -> None:
    if not view.has_table("edges"):
        raise IndexIncompatible("this index has no symbol graph (edges table)",
                                hint="rebuild with a codeagent that builds the graph: `codeagent build`")


def _edge_rows(view: IndexView, ids: list[str], direction: str, kinds: list[str] | None,
               limit: int) -> list[tuple]:
    kind_sql = ("e.kind IN (SELECT unnest(?::VARCHAR[]))" if kinds else "e.kind <> 'contains'")
    params: list = [ids] + ([kinds] if kinds else [])
    table = EdgeTable.load(view) if view.keep_text_in_memory else None  # see edge_table.py
    rows: list[tuple] = []
    for d, key in (("in", "dst_id"), ("out", "src_id")):
        if direction not in (d, "both"):
            continue
        if table is not None:
            rows += [(*r, d) for r in table.rows(ids, key, kinds, limit)]
        else:
            rows += view.sql(_EDGES_SQL.format(dir=d, key=key, kinds=kind_sql, limit=int(limit)), params)
    return rows


def _nodes(view: IndexView, ids: set[str]) -> dict[str, tuple]:
    if not ids:
        return {}
    table = resident_table(view)
    if table is not None:
        found = (table.rows[i] for i in (table.by_id.get(s) for s in ids) if i is not None)
        return {r.symbol_id: (r.symbol_id, r.stable_id, r.name, r.fq_name, r.kind, r.path,
                              r.line_start, r.line_end) for r in found}
    named = view.has_table("symbol_names") and view.has_column("symbol_names", "fq_name")
    sql = _NODES_SQL.format(fq="coalesce(n.fq_name, s.qualified_name)" if named else "s.qualified_name",
                            join="LEFT JOIN symbol_names n USING (symbol_id)" if named else "")
    return {r[0]: r for r in view.sql(sql, [sorted(ids)])}


def _node_for(row: tuple | None, far_id: str | None, edge: tuple, depth: int) -> GraphNode:
    if row is not None:
        sid, stable, name, fq, kind, path, ls, le = row
        return GraphNode(sid, stable, name, fq, kind, path, ls, le, depth)
    src_id, dst_id, kind, conf, src_path, src_line, target, dst_path, d = edge
    if d == "in":  # a file-level use (module code, imports at top level)
        return GraphNode(None, None, src_path, src_path, "file", src_path, src_line, src_line, depth)
    name = target or (dst_path or "")
    return GraphNode(None, None, name.rsplit(".", 1)[-1], name, "file" if dst_path else "external",
                     dst_path or "", 0, 0, depth)


class _Walk:
    """Accumulates nodes and edges of a traversal, keyed so nothing is listed twice."""

    def __init__(self, root: SymbolInfo, max_nodes: int) -> None:
        self.root = root
        self.max_nodes = max_nodes
        self.nodes: dict[str, GraphNode] = {}
        self.edges: list[GraphEdge] = []
        self.truncated = False

    def add(self, view: IndexView, rows: list[tuple], depth: int) -> list[str]:
        far = {(r[0] if r[8] == "in" else r[1]) for r in rows} - {None}
        info = _nodes(view, far)
        frontier = []
        for r in rows:
            src_id, dst_id, kind, conf, src_path, src_line, target, dst_path, d = r
            far_id = src_id if d == "in" else dst_id
            key = far_id or f"{d}:{src_path if d == 'in' else (dst_path or target)}"
            if key == self.root.symbol_id:
                continue
            if key not in self.nodes:
                if len(self.nodes) >= self.max_nodes:
                    self.truncated = True
                    continue
                self.nodes[key] = _node_for(info.get(far_id) if far_id else None, far_id, r, depth)
                if far_id:
                    frontier.append(far_id)
            self.edges.append(GraphEdge(src_id, dst_id, kind, conf, src_path, src_line, target, dst_path))
        return frontier


def traverse(view: IndexView, symbol: str, *, direction: str = "out",
             edge_types: list[str] | None = None, depth: int = 2,
             max_nodes: int = 200) -> GraphResponse:
    """Breadth-first walk up to `depth` hops; truncated=True when `max_nodes` cut it."""
    kinds = _check(direction, edge_types)
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidParameter(f"depth must be between 1 and {MAX_DEPTH}")
    if max_nodes < 1:
        raise InvalidParameter("max_nodes must be at least 1")
    _require_edges(view)
    root = resolve_symbol(view, symbol)
    walk = _Walk(root, max_nodes)
    frontier, seen = [root.symbol_id], {root.symbol_id}
    for level in range(1, depth + 1):
        if not frontier:
            break
        budget = (max_nodes - len(walk.nodes)) * 4 + 50
        rows = _edge_rows(view, frontier, direction, kinds, budget + 1)
        if len(rows) > budget:
            walk.truncated = True
            rows = rows[:budget]
        nxt = walk.add(view, rows, level)
        frontier = [n for n in dict.fromkeys(nxt) if n not in seen]
        seen.update(frontier)
        if walk.truncated:
            break
    return GraphResponse(root=root, direction=direction, nodes=list(walk.nodes.values()),
                         edges=walk.edges, truncated=walk.truncated,
                         metadata=view.metadata(TRUNCATED if walk.truncated else COMPLETE))


def neighbors(view: IndexView, symbol: str, *, direction: str = "in",
              edge_types: list[str] | None = None, limit: int = 200) -> GraphResponse:
    """Symbols one edge away from `symbol` (a handle, see navigate.resolve_symbol)."""
    return traverse(view, symbol, direction=direction, edge_types=edge_types, depth=1,
                    max_nodes=limit)


def callers(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="in", edge_types=["calls"], limit=limit)


def callees(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    return neighbors(view, symbol, direction="out", edge_types=["calls"], limit=limit)


def references(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    """Everything that uses `symbol`: calls, type references, imports, inheritance."""
    return neighbors(view, symbol, direction="in", edge_types=USE_KINDS, limit=limit)


def implementations(view: IndexView, symbol: str, *, limit: int = 200) -> GraphResponse:
    """Subclasses / implementers of a class or interface, and overriding methods."""
    return neighbors(view, symbol, direction="in", edge_types=["inherits", "implements", "overrides"],
                     limit=limit)


def dependencies(view: IndexView, symbol: str, *, edge_type: str | None = None,
                 limit: int = 200) -> GraphResponse:
    """What `symbol` depends on (every outgoing edge but `contains`, or one edge type)."""
    return neighbors(view, symbol, direction="out", edge_types=[edge_type] if edge_type else None,
                     limit=limit)


def dependents(view: IndexView, symbol: str, *, edge_type: str | None = None,
               limit: int = 200) -> GraphResponse:
    """What depends on `symbol` (every incoming edge but `contains`, or one edge type)."""
    return neighbors(view, symbol, direction="in", edge_types=[edge_type] if edge_type else None,
                     limit=limit)
