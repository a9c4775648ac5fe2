"""Iterative tree walk that applies a language's `Rules` to a parsed tree.

Pre-order, with an explicit stack (deeply nested code cannot exhaust Python's recursion).
Symbols come out in source order; each reference's `source` is the innermost enclosing symbol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Language, Node, Query, QueryCursor

from ...types import NO_PARENT, Reference, Span, Symbol
from .rules import SEP, Def, Rules, node_bytes


def node_span(node: Node) -> Span:
    """The node's span; one that ends with its newline (preprocessor lines, `//` comments in
    some grammars) ends on its last line instead of column 0 of the next."""
    (s_row, s_col), (e_row, e_col) = node.start_point, node.end_point
    if e_col == 0 and e_row > s_row:
        body = node_bytes(node).rstrip(b"\r\n")
        last_nl = body.rfind(b"\n")
        end_col = len(body) - last_nl - 1 if last_nl >= 0 else s_col + len(body)
        return Span(s_row + 1, s_col, s_row + 1 + body.count(b"\n"), end_col,
                    node.start_byte, node.start_byte + len(body))
    return Span(s_row + 1, s_col, e_row + 1, e_col, node.start_byte, node.end_byte)


@dataclass
class _Scope:
    symbol: int       # index of the enclosing symbol (NO_PARENT at top level)
    prefix: str       # qualified name children are qualified under ("" at top level)
    kind: str         # kind of the enclosing symbol ("" at top level)


@dataclass
class Walked:
    symbols: list[Symbol] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)   # the node of each symbol


def _qualify(prefix: str, d: Def) -> str:
    parts = [p for p in (prefix, d.qualifier, d.name) if p]
    return SEP.join(parts)


def _make_symbol(rules: Rules, node: Node, d: Def, scope: _Scope) -> Symbol:
    span_node = rules.outer(node, d)
    return Symbol(
        kind=d.kind, name=d.name, qualified_name=_qualify(scope.prefix, d),
        span=node_span(span_node), name_span=node_span(d.name_node), parent=scope.symbol,
        signature=rules.signature(node, d), doc=rules.doc(node, d),
        visibility=rules.visibility(node, d, scope.kind), modifiers=_modifiers(rules, node, d),
    )


def _modifiers(rules: Rules, node: Node, d: Def) -> tuple[str, ...]:
    mods = rules.modifiers(node, d)
    return mods + tuple(m for m in d.extra if m not in mods) if d.extra else mods


def _within(node: Node, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= node.start_byte and node.end_byte <= b for a, b in ranges)


class _Walker:
    """Per-file state of one walk: what was emitted and what must not be emitted twice."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.out = Walked()
        self.name_ranges: set[tuple[int, int]] = set()
        self.claimed: list[tuple[int, int]] = []   # inherit/implement clauses: no type_ref inside
        self.callees: set[tuple[int, int]] = set()  # a callee is not also a type_ref (`new Foo()`)

    def visit(self, node: Node, scope: _Scope) -> _Scope:
        """Apply the hooks to one node; returns the scope its descendants are in."""
        inner, out = scope, self.out
        for d in self.rules.definitions_at(node, scope.kind):
            self.name_ranges.add((d.name_node.start_byte, d.name_node.end_byte))
            sym = _make_symbol(self.rules, node, d, scope)
            out.symbols.append(sym)
            out.nodes.append(node)
            if d.scope:
                inner = _Scope(len(out.symbols) - 1, sym.qualified_name, d.kind)
        for ref in self.rules.references(node):
            kind, ref_node = ref.kind, ref.node
            rng = ref_node.byte_range
            if kind == "call":
                self.callees.add(rng)
            elif kind in ("inherit", "implement"):
                self.claimed.append(rng)
            elif kind == "type_ref" and (
                    rng in self.name_ranges or rng in self.callees or _within(ref_node, self.claimed)):
                continue
            if ref.target:
                out.references.append(Reference(kind, ref.target, node_span(ref_node),
                                                inner.symbol, ref.module, ref.alias))
        return inner


def walk(root: Node, rules: Rules, language: Language | None = None) -> Walked:
    """Apply `rules` to every node under `root`. With the grammar's `language`, a query finds
    the node types the rules look at and the rest of the tree is never touched from Python."""
    walker = _Walker(rules)
    top = _Scope(NO_PARENT, "", "")
    types = rules.interesting()
    if language is None or types is None:
        stack: list[tuple[Node, _Scope]] = [(root, top)]
        while stack:
            node, scope = stack.pop()
            if types is None or node.type in types:
                scope = walker.visit(node, scope)
            stack.extend((child, scope) for child in reversed(node.named_children))
    else:
        open_scopes: list[tuple[int, int, _Scope]] = [(-1, 1 << 62, top)]
        for node in _preorder(_matches(root, language, types)):
            while not (open_scopes[-1][0] <= node.start_byte and node.end_byte <= open_scopes[-1][1]):
                open_scopes.pop()
            scope = open_scopes[-1][2]
            inner = walker.visit(node, scope)
            if inner is not scope:
                open_scopes.append((node.start_byte, node.end_byte, inner))
    _attach_qualified_parents(walker.out)
    return walker.out


_QUERIES: dict[tuple[Language, frozenset[str]], Query] = {}


def _matches(root: Node, language: Language, types: frozenset[str]) -> list[Node]:
    key = (language, types)
    query = _QUERIES.get(key)
    if query is None:
        kinds = sorted(t for t in types if language.id_for_node_kind(t, True))
        query = _QUERIES[key] = Query(language, "[" + " ".join(f"({k})" for k in kinds) + "] @n")
    return QueryCursor(query).captures(root).get("n", [])


def _depth(node: Node) -> int:
    d, n = 0, node.parent
    while n is not None:
        d, n = d + 1, n.parent
    return d


def _preorder(nodes: list[Node]) -> list[Node]:
    """Nodes in document pre-order (a parent before a child with the same range)."""
    ranges = [n.byte_range for n in nodes]
    keyed = sorted([(s, -e, i) for i, (s, e) in enumerate(ranges)])
    out = [nodes[i] for _, _, i in keyed]
    if len(set(ranges)) == len(ranges):
        return out
    i = 0
    while i < len(keyed):
        j = i + 1
        while j < len(keyed) and keyed[j][:2] == keyed[i][:2]:
            j += 1
        if j - i > 1:
            out[i:j] = sorted(out[i:j], key=_depth)
        i = j
    return out


def _attach_qualified_parents(out: Walked) -> None:
    """Members defined outside their type (Go receivers, C++ `A::f`) get the type's symbol as
    parent when the type is defined in the same file."""
    by_qname: dict[str, int] = {}
    for i, s in enumerate(out.symbols):
        by_qname.setdefault(s.qualified_name, i)
    for i, s in enumerate(out.symbols):
        if SEP not in s.qualified_name:
            continue
        owner_name = s.qualified_name.rsplit(SEP, 1)[0]
        if s.parent != NO_PARENT and out.symbols[s.parent].qualified_name == owner_name:
            continue
        owner = by_qname.get(owner_name)
        if owner is not None and owner < i:
            out.symbols[i] = Symbol(s.kind, s.name, s.qualified_name, s.span, s.name_span, owner,
                                    s.signature, s.doc, s.visibility, s.modifiers, s.body_hash)
