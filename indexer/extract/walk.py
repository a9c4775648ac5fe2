"""Iterative tree walk that applies a language's `Rules` to a parsed tree.

Pre-order, with an explicit stack (deeply nested code cannot exhaust Python's recursion).
Symbols come out in source order; each reference's `source` is the innermost enclosing symbol.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from ...types import NO_PARENT, Reference, Span, Symbol
from .rules import SEP, Def, Rules


def node_span(node: Node) -> Span:
    """The node's span; one that ends with its newline (preprocessor lines, `//` comments in
    some grammars) ends on its last line instead of column 0 of the next."""
    s, e = node.start_point, node.end_point
    if e.column == 0 and e.row > s.row:
        body = node.text.rstrip(b"\r\n")
        last_nl = body.rfind(b"\n")
        end_col = len(body) - last_nl - 1 if last_nl >= 0 else s.column + len(body)
        return Span(s.row + 1, s.column, s.row + 1 + body.count(b"\n"), end_col,
                    node.start_byte, node.start_byte + len(body))
    return Span(s.row + 1, s.column, e.row + 1, e.column, node.start_byte, node.end_byte)


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


def walk(root: Node, rules: Rules) -> Walked:
    """Apply `rules` to every node under `root`."""
    out = Walked()
    name_ranges: set[tuple[int, int]] = set()
    claimed: list[tuple[int, int]] = []   # inherit/implement clauses: no type_ref inside them
    callees: set[tuple[int, int]] = set()  # a callee is not also a type_ref (`new Foo()`)
    stack: list[tuple[Node, _Scope]] = [(root, _Scope(NO_PARENT, "", ""))]
    while stack:
        node, scope = stack.pop()
        inner = scope
        for d in rules.definitions_at(node, scope.kind):
            name_ranges.add((d.name_node.start_byte, d.name_node.end_byte))
            sym = _make_symbol(rules, node, d, scope)
            out.symbols.append(sym)
            out.nodes.append(node)
            if d.scope:
                inner = _Scope(len(out.symbols) - 1, sym.qualified_name, d.kind)
        for ref in rules.references(node):
            if ref.kind in ("inherit", "implement"):
                claimed.append((ref.node.start_byte, ref.node.end_byte))
            elif ref.kind == "call":
                callees.add((ref.node.start_byte, ref.node.end_byte))
            elif ref.kind == "type_ref" and (
                    (ref.node.start_byte, ref.node.end_byte) in name_ranges
                    or (ref.node.start_byte, ref.node.end_byte) in callees or _within(ref.node, claimed)):
                continue
            if not ref.target:
                continue
            out.references.append(Reference(ref.kind, ref.target, node_span(ref.node), inner.symbol,
                                            ref.module, ref.alias))
        children = node.named_children
        for child in reversed(children):
            stack.append((child, inner))
    _attach_qualified_parents(out)
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
