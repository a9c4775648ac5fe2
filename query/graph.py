"""Graph queries over the `edges` table: callers, callees, references, implementations,
dependencies, dependents, and bounded multi-hop traversal (BFS with a node budget).

An edge is src -> dst ("src calls dst", "src inherits dst"...). `in` follows edges into a
symbol (who calls / references / subclasses it), `out` follows edges out of it. Every edge
keeps its confidence: `exact` (resolved through scopes and imports) or `name` (matched by
name only). Exact edges come first.
"""

from __future__ import annotations

from ..errors import IndexIncompatible, InvalidParameter
from ..roles import FIXTURE, MOCK, TEST
from .edge_table import EDGE_ORDER, EdgeTable
from .index import IndexView
from .navigate import resolve_symbol
from ..model import COMPLETE, TRUNCATED, GraphEdge, GraphNode, GraphResponse, SymbolInfo
from .symbol_table import resident_table

EDGE_KINDS = ("calls", "references", "imports", "inherits", "implements", "overrides", "contains")
DIRECTIONS = ("in", "out", "both")
USE_KINDS = ["calls", "references", "imports", "inherits", "implements"]
MAX_DEPTH = 10
# File roles left out by include_tests=False (`--no-tests`).
TEST_ROLES = (TEST, MOCK, FIXTURE)
_NOT_TEST = "coalesce({path}, '') NOT IN (SELECT path FROM files WHERE role IN ('" + "', '".join(TEST_ROLES) + "'))"
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


# The first edge (in EDGE_ORDER) to each symbol one edge away that is not yet known.
_FIRST_EDGES_SQL = """
SELECT e.src_id, e.dst_id, e.kind, e.confidence, e.src_path, e.src_line, coalesce(e.target, ''),
       e.dst_path, '{dir}' AS dir
FROM edges e WHERE e.{key} IN (SELECT unnest(?::VARCHAR[])) AND {kinds}
    AND {far} NOT IN (SELECT unnest(?::VARCHAR[])) AND {tests}
QUALIFY row_number() OVER (PARTITION BY {far} ORDER BY """ + EDGE_ORDER + """) = 1
ORDER BY """ + EDGE_ORDER + """
LIMIT {limit}
"""
# the near end's column, the key _Walk.add gives the far end and the far end's path
_FAR = {"in": ("dst_id", "coalesce(e.src_id, 'in:' || e.src_path)", "e.src_path"),
        "out": ("src_id", "coalesce(e.dst_id, 'out:' || coalesce(e.dst_path, e.target, ''))", "e.dst_path")}


def _first_edges(view: IndexView, ids: list[str], direction: str, kinds: list[str] | None,
                 known: list[str], limit: int, include_tests: bool) -> list[tuple]:
    """One edge to each of up to `limit` symbols one edge away whose key is not in `known`:
    the nodes a cut list of edges (many call sites of few callers) left out."""
    kind_sql = ("e.kind IN (SELECT unnest(?::VARCHAR[]))" if kinds else "e.kind <> 'contains'")
    params: list = [ids] + ([kinds] if kinds else []) + [known]
    rows: list[tuple] = []
    for d, (key, far, far_path) in _FAR.items():
        if direction in (d, "both"):
            tests = "TRUE" if include_tests else _NOT_TEST.format(path=far_path)
            rows += view.sql(_FIRST_EDGES_SQL.format(dir=d, far=far, key=key, kinds=kind_sql, tests=tests,
                                                     limit=int(limit)), params)
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


def _test_paths(view: IndexView) -> set[str]:
    return {r[0] for r in view.sql(f"SELECT path FROM files WHERE role IN ({', '.join('?' for _ in TEST_ROLES)})",
                                   list(TEST_ROLES))}


def _far_path(row: tuple) -> str | None:
    return row[4] if row[8] == "in" else row[7]


def traverse(view: IndexView, symbol: str, *, direction: str = "out",
             edge_types: list[str] | None = None, depth: int = 2,
             max_nodes: int = 200, include_tests: bool = True) -> GraphResponse:
    """Breadth-first walk up to `depth` hops; truncated=True when `max_nodes` cut it.
    include_tests=False leaves out symbols in test, mock and fixture files (files.role)."""
    kinds = _check(direction, edge_types)
    if not 1 <= depth <= MAX_DEPTH:
        raise InvalidParameter(f"depth must be between 1 and {MAX_DEPTH}")
    if max_nodes < 1:
        raise InvalidParameter("max_nodes must be at least 1")
    _require_edges(view)
    root = resolve_symbol(view, symbol)
    walk = _Walk(root, max_nodes)
    excluded = set() if include_tests else _test_paths(view)
    frontier, seen = [root.symbol_id], {root.symbol_id}
    for level in range(1, depth + 1):
        if not frontier:
            break
        budget = (max_nodes - len(walk.nodes)) * 4 + 50
        rows = _edge_rows(view, frontier, direction, kinds, budget + 1)
        cut = len(rows) > budget
        rows = rows[:budget]
        if excluded:
            rows = [r for r in rows if _far_path(r) not in excluded]
        nxt = walk.add(view, rows, level)
        if cut and not walk.truncated:  # call sites were cut: add the nodes they hid
            known = [*walk.nodes, root.symbol_id]
            extra = _first_edges(view, frontier, direction, kinds, known, max_nodes - len(walk.nodes) + 1,
                                 include_tests)
            nxt += walk.add(view, extra, level)
        frontier = [n for n in dict.fromkeys(nxt) if n not in seen]
        seen.update(frontier)
        if walk.truncated:
            break
    return GraphResponse(root=root, direction=direction, nodes=list(walk.nodes.values()),
                         edges=walk.edges, truncated=walk.truncated,
                         metadata=view.metadata(TRUNCATED if walk.truncated else COMPLETE))


def tree_order(resp: GraphResponse) -> list[tuple[GraphNode, GraphEdge | None]]:
    """The nodes of a one-way traversal depth first, each under the node it was reached
    from, with the edge that reached it (None for a node no edge explains)."""
    if resp.direction == "both":
        return [(n, None) for n in resp.nodes]
    inward = resp.direction == "in"

    def far_key(e: GraphEdge) -> str:
        if inward:
            return e.src_id or f"in:{e.path}"
        return e.dst_id or f"out:{e.dst_path or e.target}"

    def node_key(n: GraphNode) -> str:
        return n.symbol_id or (f"in:{n.path}" if inward else f"out:{n.path or n.qualified_name}")

    first: dict[str, GraphEdge] = {}
    for e in resp.edges:
        first.setdefault(far_key(e), e)
    root_id = resp.root.symbol_id if resp.root else None
    children: dict[str | None, list[GraphNode]] = {}
    for n in resp.nodes:
        e = first.get(node_key(n))
        parent = (e.dst_id if inward else e.src_id) if e else root_id
        children.setdefault(parent, []).append(n)
    out: list[tuple[GraphNode, GraphEdge | None]] = []
    stack = list(reversed(children.pop(root_id, [])))
    while stack:
        n = stack.pop()
        out.append((n, first.get(node_key(n))))
        if n.symbol_id:
            stack.extend(reversed(children.pop(n.symbol_id, [])))
    listed = {id(n) for n, _ in out}
    out += [(n, first.get(node_key(n))) for n in resp.nodes if id(n) not in listed]
    return out


def neighbors(view: IndexView, symbol: str, *, direction: str = "in",
              edge_types: list[str] | None = None, limit: int = 200,
              include_tests: bool = True) -> GraphResponse:
    """Symbols one edge away from `symbol` (a handle, see navigate.resolve_symbol)."""
    return traverse(view, symbol, direction=direction, edge_types=edge_types, depth=1,
                    max_nodes=limit, include_tests=include_tests)


def callers(view: IndexView, symbol: str, *, limit: int = 200, include_tests: bool = True) -> GraphResponse:
    return neighbors(view, symbol, direction="in", edge_types=["calls"], limit=limit,
                     include_tests=include_tests)


def callees(view: IndexView, symbol: str, *, limit: int = 200, include_tests: bool = True) -> GraphResponse:
    return neighbors(view, symbol, direction="out", edge_types=["calls"], limit=limit,
                     include_tests=include_tests)


def references(view: IndexView, symbol: str, *, limit: int = 200, include_tests: bool = True) -> GraphResponse:
    """Everything that uses `symbol`: calls, type references, imports, inheritance."""
    return neighbors(view, symbol, direction="in", edge_types=USE_KINDS, limit=limit,
                     include_tests=include_tests)


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
