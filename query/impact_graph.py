"""What depends on a set of changed symbols: a breadth-first walk over incoming edges from
all of them at once, remembering for every node the edge that reached it, how sure that
path is and which changed symbol it leads back to (query/impact.py's `dependents`).

An edge is src -> dst ("src calls dst"); the walk follows edges into the frontier, so a node
at depth 1 calls, references, imports, subclasses or overrides a changed symbol itself. A
file-level use (an import at the top of a module, module code) is a node of its own, keyed
`file:<path>`, and a leaf: nothing depends on a file through the graph's symbol edges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from .graph import _edge_rows, _nodes
from .index import IndexView

# Method names the standard types of most languages define (containers, strings, files,
# threads, promises, streams; and dunders): a call `x.flush()` on a receiver of unknown type,
# matched by name to the one `flush` the repository defines, is nearly always another
# object's (measured against SCIP, bench/impact_precision.py: 6 of 29 such depth-1 dependents
# were real). Such a dependent is walked through for tests, not listed.
UBIQUITOUS = frozenset("""
    add append apply bind call clear close copy count decode delete discard encode end endswith
    entries equals every extend filter find findall finditer flush format forEach fileno fullmatch
    get getvalue has hashCode includes index indexOf insert isatty items iter join keys lower map
    match next on once open parse pop popitem push put read readable readline readlines reduce
    remove render replace reset resolve reverse run search seek seekable send set setdefault shift
    size slice some sort split splice start startswith stop strip sub tell test then toString
    truncate update upper values wait writable write writelines
    """.split())
# Edges that make the source depend on the target (contains is structure, not use).
DEPENDENT_KINDS = ["calls", "references", "imports", "inherits", "implements", "overrides"]
_IMPORTERS_SQL = """
SELECT e.src_id, e.dst_id, e.kind, e.confidence, e.src_path, e.src_line, coalesce(e.target, ''),
       e.dst_path, 'in' AS dir
FROM edges e WHERE e.kind = 'imports' AND e.dst_path IN (SELECT unnest(?::VARCHAR[]))
    AND e.src_path NOT IN (SELECT unnest(?::VARCHAR[]))
ORDER BY e.confidence = 'exact' DESC, e.src_path, e.src_line
LIMIT {limit}
"""


@dataclass
class Reached:
    """One node of the walk: a symbol (or a file-level use) that depends on a changed one."""

    key: str  # symbol_id, or file:<path> for a file-level use
    symbol_id: str | None
    name: str  # qualified name (the path for a file-level use)
    kind: str
    path: str
    line: int
    depth: int
    edge: str  # the kind of the edge that reached it: how it depends on `via`
    confidence: str  # exact when every edge of its path back is exact, else name
    via: str  # the key it depends on: a node of the walk or a changed symbol (depth 1)
    root: str  # the key of the changed symbol its path leads back to
    roots: set[str] = field(default_factory=set)  # every changed symbol found to reach it
    at: int = 0  # the line of the use (of the edge that reached it)
    loose: bool = False  # its path back crosses a name-matched call of a method name every library has


@dataclass
class Walk:
    nodes: dict[str, Reached]
    truncated: bool


def walk_dependents(view: IndexView, seeds: Mapping[str, str], *, depth: int, max_nodes: int,
                    seed_files: Mapping[str, str] | None = None, skip: frozenset[str] = frozenset(),
                    named_depth: int | None = None, leaves: frozenset[str] = frozenset()) -> Walk:
    """Nodes up to `depth` edges into `seeds` (symbol_id -> the changed entry's key), at most
    `max_nodes`. `seed_files` (path -> key) adds, at depth 1, the files importing those
    modules. Nodes in `skip` (the changed symbols themselves) are walked through, not listed.
    Past `named_depth` only nodes in `leaves` (test files) get their names and kinds looked up
    (the rest are only walked through); nodes in `leaves` are not walked from."""
    nodes: dict[str, Reached] = {}
    conf: dict[str, str] = {s: "exact" for s in seeds}
    root_of: dict[str, str] = dict(seeds)
    frontier = list(dict.fromkeys(seeds))
    seen = set(frontier)
    truncated = False
    for level in range(1, depth + 1):
        if not frontier and not (level == 1 and seed_files):
            break
        budget = (max_nodes - len(nodes)) * 4 + 50
        rows = _edge_rows(view, frontier, "in", DEPENDENT_KINDS, budget + 1) if frontier else []
        if level == 1 and seed_files:
            rows += view.sql(_IMPORTERS_SQL.format(limit=int(budget)), [sorted(seed_files), sorted(seed_files)])
        truncated = truncated or len(rows) > budget
        named = named_depth is None or level <= named_depth
        info = _nodes(view, {r[0] for r in rows if r[0] and (named or r[4] in leaves)})
        nxt = []
        for src_id, dst_id, kind, confidence, src_path, src_line, _target, dst_path, _d in rows:
            near = dst_id if dst_id in root_of else f"file:{dst_path}"
            root = root_of.get(near) or (seed_files or {}).get(dst_path or "")
            if root is None:
                continue
            key = src_id or f"file:{src_path}"
            path_conf = "exact" if confidence == "exact" and conf.get(near, "exact") == "exact" else "name"
            loose = conf.get(near) == "loose" or (confidence != "exact" and _loose_call(_target))
            if key in seen and key not in nodes:  # a seed, or a skipped changed symbol
                continue
            if key in nodes:
                nodes[key].roots.add(root)
                if nodes[key].loose and not loose and nodes[key].depth == level:  # a surer edge
                    conf[key] = _upgrade(nodes[key], kind, path_conf, near, root, src_line)
                continue
            if len(nodes) >= max_nodes:
                truncated = True
                continue
            seen.add(key)
            row = info.get(src_id) if src_id else None
            name, kind_of, path, line = ((row[3] or row[2], row[4], row[5], row[6]) if row else
                                         (src_path, "file" if not src_id else "symbol", src_path, src_line))
            conf[key], root_of[key] = "loose" if loose else path_conf, root  # loose: name-matched too
            if src_id and src_path not in leaves:
                nxt.append(src_id)
            if key in skip:
                continue
            nodes[key] = Reached(key, src_id, name, kind_of, path, line, level, kind, path_conf,
                                 near, root, {root}, src_line, loose)
        frontier = nxt
        if truncated:
            break
    return Walk(nodes, truncated)


def _upgrade(n: Reached, edge: str, confidence: str, via: str, root: str, at: int) -> str:
    """The node is reached, at the same depth, by an edge that is not a loose call: that edge
    is the one it is listed by. Returns its confidence."""
    n.edge, n.confidence, n.via, n.root, n.at, n.loose = edge, confidence, via, root, at, False
    return confidence


def _loose_call(target: str) -> bool:
    """A call through a receiver (`x.flush`) of a method name every library has, or a dunder."""
    receiver, _, name = target.rpartition(".")
    return bool(receiver) and (name in UBIQUITOUS or (name.startswith("__") and name.endswith("__")))


def path_back(nodes: Mapping[str, Reached], key: str, names: Mapping[str, str]) -> list[str]:
    """The names from the node `key` back to its changed symbol (`names`: key -> name of the
    changed symbols and of skipped nodes)."""
    out = []
    cur = nodes.get(key)
    guard = 0
    while cur is not None and guard < 64:
        out.append(cur.name)
        nxt = cur.via
        if nxt not in nodes:
            out.append(names.get(nxt, nxt))
            break
        cur = nodes[nxt]
        guard += 1
    return out
