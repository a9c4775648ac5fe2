"""Iterative tree walk that applies a language's `Rules` to a parsed tree.

Pre-order, with an explicit stack (deeply nested code cannot exhaust Python's recursion).
Symbols come out in source order; each reference's `source` is the innermost enclosing symbol.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import chain, repeat

import numpy as np
from tree_sitter import Language, Node, Query, QueryCursor

from ...types import NO_PARENT, Reference, Span, Symbol
from .rules import SEP, SOURCE, Def, Rules, callee_name, callee_node, node_bytes

_new = tuple.__new__  # a value type from a full row of its fields, without a Python call


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


def _range_span(node: Node, start: int, end: int) -> Span:
    """`node_span` of the byte range start..end of `node`'s tree, whose ends are node ends."""
    root = node
    while root.parent is not None:
        root = root.parent
    first, last = root.descendant_for_byte_range(start, start), node_span(root.descendant_for_byte_range(end - 1, end))
    return Span(first.start_point.row + 1, first.start_point.column, last.end_line, last.end_col, start, last.end_byte)


class _SpanOf:
    """`node_span` from byte offsets and the source's line starts (a node's points cost two
    allocations each, its bytes none)."""

    def __init__(self, source: bytes | None) -> None:
        self.source = source
        if source is not None:
            newlines = np.flatnonzero(np.frombuffer(source, np.uint8) == 10) + 1
            self.line_array = np.concatenate(([0], newlines))
            self.line_starts = self.line_array.tolist()

    def of(self, start: int, end: int) -> Span:
        starts = self.line_starts
        s_row = bisect_right(starts, start) - 1
        e_row = bisect_right(starts, end) - 1
        s_col, e_col = start - starts[s_row], end - starts[e_row]
        if e_col == 0 and e_row > s_row:
            body = self.source[start:end].rstrip(b"\r\n")
            last_nl = body.rfind(b"\n")
            end_col = len(body) - last_nl - 1 if last_nl >= 0 else s_col + len(body)
            return Span(s_row + 1, s_col, s_row + 1 + body.count(b"\n"), end_col, start, start + len(body))
        return Span(s_row + 1, s_col, e_row + 1, e_col, start, end)

    def many(self, ranges: list[tuple[int, int]]) -> list[Span]:
        """`of` for each (start, end), with the lines looked up in one go."""
        if not ranges:
            return []
        r = np.fromiter(chain.from_iterable(ranges), np.int64, 2 * len(ranges)).reshape(-1, 2)
        rows = np.searchsorted(self.line_array, r, "right") - 1
        cols = r - self.line_array[rows]
        out = list(map(_new, repeat(Span), zip((rows[:, 0] + 1).tolist(), cols[:, 0].tolist(),
                                               (rows[:, 1] + 1).tolist(), cols[:, 1].tolist(),
                                               r[:, 0].tolist(), r[:, 1].tolist())))
        for k in np.flatnonzero((cols[:, 1] == 0) & (rows[:, 1] > rows[:, 0])).tolist():
            out[k] = self.of(*ranges[k])
        return out


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
    """`prefix`, the qualifier and the name, the empty ones left out, joined by SEP."""
    name = d.name
    if d.qualifier:
        return SEP.join([p for p in (prefix, d.qualifier, name) if p])
    return f"{prefix}{SEP}{name}" if prefix and name else prefix or name


def _modifiers(rules: Rules, node: Node, d: Def) -> tuple[str, ...]:
    mods = rules.modifiers(node, d)
    return mods + tuple(m for m in d.extra if m not in mods) if d.extra else mods


def _within(rng: tuple[int, int], ranges: list[tuple[int, int]]) -> bool:
    start, end = rng
    return any(a <= start and end <= b for a, b in ranges)


class _Walker:
    """Per-file state of one walk: what was emitted and what must not be emitted twice."""

    def __init__(self, rules: Rules) -> None:
        self.rules = rules
        self.out = Walked()
        self.span_of = _SpanOf(SOURCE.get())
        self.name_ranges: set[tuple[int, int]] = set()
        self.claimed: list[tuple[int, int]] = []   # inherit/implement clauses: no type_ref inside
        # callee range -> pre-order position of its first call: a callee is not also a
        # type_ref (`new Foo()`) from then on
        self.callees: dict[tuple[int, int], int] = {}
        # references as (kind, target, source, module, alias), their byte ranges, the pre-order
        # position of the node that made them and, without the source, their spans: spans from
        # ranges are looked up for all at the end
        self.refs: list[tuple[str, str, int, str, str]] = []
        self.ref_ranges: list[tuple[int, int]] = []
        self.ref_pos: list[int] = []
        self.ref_spans: list[Span] = []
        # symbols likewise: their fields but the spans, and (span, name span) ranges or spans
        self.symbols: list[tuple] = []
        self.symbol_ranges: list[tuple[int, int]] = []
        self.symbol_spans: list[Span] = []
        self.last_span_range: tuple[int, int] | None = None

    def finish(self) -> Walked:
        out, span_of = self.out, self.span_of
        spans = self.symbol_spans if span_of.source is None else span_of.many(self.symbol_ranges)
        out.symbols = [_new(Symbol, (kind, name, qname, span, name_span, parent, sig, doc, vis, mods, ""))
                       for (kind, name, qname, parent, sig, doc, vis, mods), span, name_span
                       in zip(self.symbols, spans[0::2], spans[1::2])]
        spans = self.ref_spans if span_of.source is None else span_of.many(self.ref_ranges)
        out.references = [_new(Reference, (kind, target, span, source, module, alias))
                          for (kind, target, source, module, alias), span in zip(self.refs, spans)]
        _attach_qualified_parents(out)
        return out

    def _add_symbol(self, node: Node, d: Def, scope: _Scope) -> str:
        """Record the symbol `d` defines at `node`; returns its qualified name."""
        rules, name_node = self.rules, d.name_node
        span_node = rules.outer(node, d)
        qname = _qualify(scope.prefix, d)
        name_range = (name_node.start_byte, name_node.end_byte)
        self.name_ranges.add(name_range)
        self.last_span_range = d.span_range
        span_range = d.span_range or (span_node.start_byte, span_node.end_byte)
        self.symbol_ranges += (span_range, name_range)
        if self.span_of.source is None:
            self.symbol_spans += (_range_span(node, *span_range) if d.span_range else node_span(span_node),
                                  node_span(name_node))
        self.symbols.append((d.kind, d.name, qname, scope.symbol, rules.signature(node, d),
                             rules.doc(node, d), rules.visibility(node, d, scope.kind),
                             _modifiers(rules, node, d)))
        self.out.nodes.append(node)
        return qname

    def visit(self, node: Node, scope: _Scope, pos: int) -> _Scope:
        """Apply the hooks to one node, the `pos`-th in pre-order; returns the scope its
        descendants are in."""
        inner, rules = scope, self.rules
        for d in rules.definitions_at(node, scope.kind):
            qname = self._add_symbol(node, d, scope)
            if d.scope:
                inner = _Scope(len(self.symbols) - 1, qname, d.kind)
        for ref in rules.references(node):
            kind, ref_node = ref.kind, ref.node
            rng = (ref_node.start_byte, ref_node.end_byte)
            if kind == "call":
                self.callees[rng] = min(pos, self.callees.get(rng, pos))
            elif kind in ("inherit", "implement"):
                self.claimed.append(rng)
            elif kind == "type_ref" and (rng in self.name_ranges or self.callees.get(rng, pos + 1) <= pos
                                         or _within(rng, self.claimed)):
                continue
            if ref.target:
                self.refs.append((kind, ref.target, inner.symbol, ref.module, ref.alias))
                self.ref_ranges.append(rng)
                self.ref_pos.append(pos)
                if self.span_of.source is None:
                    self.ref_spans.append(node_span(ref_node))
        return inner

    def scope_range(self, start: int, end: int) -> tuple[int, int]:
        """The byte range of the scope the last symbol opened at a node spanning start..end:
        its own span when error recovery left it no node (Def.span_range)."""
        return self.last_span_range or (start, end)

    def add_calls(self, calls: _PlainCalls, sources: list[int]) -> None:
        """Merge the references of plain calls (made from `sources`) into the others, in pre-order."""
        n = len(self.refs)
        self.refs += zip(repeat("call"), calls.names, sources, repeat(""), repeat(""))
        self.ref_ranges += calls.ranges
        if n:
            pick = np.argsort(np.concatenate((np.array(self.ref_pos, np.int64), calls.pos)), kind="stable").tolist()
            self.refs = list(map(self.refs.__getitem__, pick))
            self.ref_ranges = list(map(self.ref_ranges.__getitem__, pick))


_CALLEE_NAMES: dict[bytes, str] = {}


def _callee_name(raw: bytes) -> str:
    """`callee_name` of a callee's source bytes, cached (the same callees recur)."""
    name = _CALLEE_NAMES.get(raw)
    if name is None:
        if len(_CALLEE_NAMES) >= 1 << 16:
            _CALLEE_NAMES.clear()
        name = _CALLEE_NAMES[raw] = callee_name(raw.decode("utf-8", "replace"))
    return name


@dataclass
class _PlainCalls:
    """The call references of the nodes in `Rules.plain_calls`, in pre-order: what `visit`
    would make of them, made in bulk."""

    pos: np.ndarray                 # pre-order position of each call node
    starts: np.ndarray              # and its byte range
    ends: np.ndarray
    names: list[str]                # callee names
    ranges: list[tuple[int, int]]   # callee byte ranges


def _plain_calls(calls: list[Node], fields: list[str], source: bytes, pos: np.ndarray,
                 starts: np.ndarray, ends: np.ndarray, language: Language) -> _PlainCalls:
    """The calls' references: `calls[i]`, whose callee is in `fields[i]`, is the node at
    pre-order position `pos[i]`, whose byte range is starts[i]..ends[i]."""
    field = fields[0] if calls else ""
    field_id = language.field_id_for_name(field) if field else None
    if field_id is not None and fields.count(field) == len(fields):
        # by id: by name, each call looks the name up among the grammar's fields again
        callees = list(map(Node.child_by_field_id, calls, repeat(field_id)))
    else:
        callees = list(map(callee_node, calls, fields))
    keep = None
    if None in callees:
        keep = [i for i, c in enumerate(callees) if c is not None]
        callees = list(map(callees.__getitem__, keep))
    ranges = [c.byte_range for c in callees]
    raws = [source[a:b] for a, b in ranges]
    names = list(map(_CALLEE_NAMES.get, raws))
    if None in names:
        names = [_callee_name(raw) if name is None else name for name, raw in zip(names, raws)]
    if "" in names:
        named = [i for i, name in enumerate(names) if name]
        names, ranges = list(map(names.__getitem__, named)), list(map(ranges.__getitem__, named))
        keep = named if keep is None else list(map(keep.__getitem__, named))
    if keep is None:
        return _PlainCalls(pos, starts, ends, names, ranges)
    return _PlainCalls(pos[keep], starts[keep], ends[keep], names, ranges)


def walk(root: Node, rules: Rules, language: Language | None = None) -> Walked:
    """Apply `rules` to every node under `root`. With the grammar's `language`, a query finds
    the node types the rules look at and the rest of the tree is never touched from Python."""
    walker = _Walker(rules)
    top = _Scope(NO_PARENT, "", "")
    types = rules.interesting()
    if language is None or types is None:
        return _walk_tree(root, walker, top, types)
    source = walker.span_of.source
    plain = {t: rules.calls[t] for t in rules.plain_calls} if source is not None else {}
    nodes, calls, fields = _matches(root, language, types, plain)
    found = nodes + calls
    order, starts, ends = _preorder(found)
    if calls and (starts == ends).any():
        # zero-width nodes (error recovery) can sit at a scope's end, where the ranges of
        # nodes no longer tell which scopes hold a call: the hooks take every node there
        found, calls = _matches(root, language, types, {})[0], []
        order, starts, ends = _preorder(found)
    at = np.arange(len(order))
    made = None
    if calls:
        is_call = order >= len(nodes)
        at, call_at = np.flatnonzero(~is_call), np.flatnonzero(is_call)
        picked = (order[call_at] - len(nodes)).tolist()
        made = _plain_calls(list(map(calls.__getitem__, picked)), list(map(fields.__getitem__, picked)),
                            source, call_at, starts[call_at], ends[call_at], language)
        for rng, p in zip(made.ranges, made.pos.tolist()):
            walker.callees.setdefault(rng, p)
    # open scopes as (start byte, end byte, scope, index in `opened`); `opened` holds every
    # scope opened, as (pre-order position, start, end, symbol, index of its parent)
    open_scopes: list[tuple[int, int, _Scope, int]] = [(-1, 1 << 62, top, 0)]
    opened: list[tuple[int, int, int, int, int]] = [(-1, -1, 1 << 62, NO_PARENT, 0)]
    visit = walker.visit
    for pos, start, end, node in zip(at.tolist(), starts[at].tolist(), ends[at].tolist(),
                                     map(found.__getitem__, order[at].tolist())):
        while not (open_scopes[-1][0] <= start and end <= open_scopes[-1][1]):
            open_scopes.pop()
        scope = open_scopes[-1][2]
        inner = visit(node, scope, pos)
        if inner is not scope:
            start, end = walker.scope_range(start, end)
            opened.append((pos, start, end, inner.symbol, open_scopes[-1][3]))
            open_scopes.append((start, end, inner, len(opened) - 1))
    if made is not None and made.names:
        walker.add_calls(made, _innermost(opened, made))
    return walker.finish()


def _walk_tree(root: Node, walker: _Walker, top: _Scope, types: frozenset[str] | None) -> Walked:
    """`walk` node by node through the tree (no query): every node of `types` (None: all)."""
    stack: list[tuple[Node, _Scope]] = [(root, top)]
    pos = 0
    # scopes opened over a byte range (Def.span_range): (start, end, scope, enclosing scope)
    ranged: list[tuple[int, int, _Scope, _Scope]] = []
    while stack:
        node, scope = stack.pop()
        for start, end, inner, outer in reversed(ranged):
            if outer is scope and start <= node.start_byte and node.end_byte <= end:
                scope = inner
                break
        if types is None or node.type in types:
            inner = walker.visit(node, scope, pos)
            if inner is not scope and walker.last_span_range:
                ranged.append((*walker.last_span_range, inner, scope))
            scope = inner
            pos += 1
        stack.extend((child, scope) for child in reversed(node.named_children))
    return walker.finish()


def _innermost(opened: list[tuple[int, int, int, int, int]], calls: _PlainCalls) -> list[int]:
    """The symbol of each call's innermost enclosing scope: the walk's scope stack as it
    stood at the call (the last scope opened before it, or the nearest of that one's
    ancestors whose range holds the call)."""
    pos, starts, ends, symbols, parents = map(np.array, zip(*opened))
    at = np.searchsorted(pos, calls.pos) - 1
    while True:
        out = (starts[at] > calls.starts) | (calls.ends > ends[at])
        if not out.any():
            return symbols[at].tolist()
        at = np.where(out, parents[at], at)


_QUERIES: dict[tuple[Language, frozenset[str], frozenset[tuple[str, str]]], tuple[Query, dict[str, str]]] = {}


def _matches(root: Node, language: Language, types: frozenset[str],
             plain: dict[str, str]) -> tuple[list[Node], list[Node], list[str]]:
    """The nodes of `types` under `root`: those of a type not in `plain`, then those of a type
    in `plain` (type -> callee field) and the callee field of each."""
    key = (language, types, frozenset(plain.items()))
    found = _QUERIES.get(key)
    if found is None:
        known = sorted(t for t in types if language.id_for_node_kind(t, True))
        by_field: dict[str, list[str]] = {}
        for t in known:
            if t in plain:
                by_field.setdefault(plain[t], []).append(t)
        others = [t for t in known if t not in plain]
        patterns = [f"[{' '.join(f'({t})' for t in others)}] @n"] if others else []
        fields = {f"call{i}": field for i, field in enumerate(by_field)}
        patterns += [f"[{' '.join(f'({t})' for t in by_field[field])}] @{name}" for name, field in fields.items()]
        found = _QUERIES[key] = (Query(language, " ".join(patterns)), fields)
    query, fields = found
    captured = QueryCursor(query).captures(root)
    calls: list[Node] = []
    call_fields: list[str] = []
    for name, field in fields.items():
        found = captured.get(name, [])
        calls += found
        call_fields += [field] * len(found)
    return captured.get("n", []), calls, call_fields


def _depth(node: Node) -> int:
    d, n = 0, node.parent
    while n is not None:
        d, n = d + 1, n.parent
    return d


def _preorder(nodes: list[Node]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The permutation that puts `nodes` in document pre-order (a parent before a child with
    the same range), and their start and end bytes in that order."""
    starts = np.fromiter([n.start_byte for n in nodes], np.int64, len(nodes))
    ends = np.fromiter([n.end_byte for n in nodes], np.int64, len(nodes))
    order = np.lexsort((-ends, starts))
    starts, ends = starts[order], ends[order]
    same = np.flatnonzero((starts[1:] == starts[:-1]) & (ends[1:] == ends[:-1]))
    i = 0
    for k in same.tolist():  # runs of one range: a parent before its child
        if k < i:
            continue
        i = k + 1
        while i < len(order) and starts[i] == starts[k] and ends[i] == ends[k]:
            i += 1
        order[k:i] = sorted(order[k:i].tolist(), key=lambda j: _depth(nodes[j]))
    return order, starts, ends


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
