"""Syntax-aware chunks: top-level nodes, small neighbours grouped, big containers split by
their members, so a chunk is roughly MIN_LINES..MAX_LINES lines."""

from __future__ import annotations

from tree_sitter import Node

from ...types import NO_PARENT, Chunk, Span

MIN_LINES = 20
MAX_LINES = 80
MAX_SPLIT_DEPTH = 4


def _lines(node: Node) -> int:
    return node.end_point.row - node.start_point.row + 1


def _members(node: Node) -> list[Node] | None:
    """The member nodes of a big container (a class body...), or None if it has none: descend
    through children that dominate their parent (class -> body) to the first list of peers."""
    n = node
    while True:
        kids = n.named_children
        if not kids:
            return None
        top = max(kids, key=_lines)
        if _lines(top) * 2 < _lines(node):
            return kids if len(kids) >= 2 else None
        n = top


def _groups(nodes: list[Node], depth: int = 0) -> list[tuple[int, int, list[Node]]]:
    """Group nodes into (first row, last row, nodes) runs of about MIN..MAX lines; a node over
    MAX lines with members is split by them (its header and closer join the first/last run)."""
    groups: list[tuple[int, int, list[Node]]] = []
    current: list[Node] = []

    def flush() -> None:
        if current:
            groups.append((current[0].start_point.row, current[-1].end_point.row, list(current)))
            current.clear()

    for n in nodes:
        members = _members(n) if _lines(n) > MAX_LINES and depth < MAX_SPLIT_DEPTH else None
        if members:
            flush()
            inner = _groups(members, depth + 1)
            first, last, _ = inner[0]
            inner[0] = (min(first, n.start_point.row), *inner[0][1:])
            inner[-1] = (inner[-1][0], max(inner[-1][1], n.end_point.row), inner[-1][2])
            groups.extend(inner)
            continue
        if current and (_span_lines(current + [n]) > MAX_LINES or _span_lines(current) >= MIN_LINES):
            flush()
        current.append(n)
    flush()
    return groups


def _span_lines(nodes: list[Node]) -> int:
    return nodes[-1].end_point.row - nodes[0].start_point.row + 1


def code_chunks(root: Node, source: bytes, symbol_at: dict[tuple[int, int], int]) -> list[Chunk]:
    """Chunks over the top-level nodes of `root`; `symbol_at` maps a node's byte range to the
    index of the symbol defined there."""
    line_starts = [0]
    for i, b in enumerate(source):
        if b == 10:
            line_starts.append(i + 1)
    line_starts.append(len(source))
    chunks = []
    for first, last, group in _groups(root.named_children):
        start = line_starts[first]
        end = line_starts[last + 1] if last + 1 < len(line_starts) else len(source)
        body = source[start:end].decode("utf-8", "replace")
        if not body.strip():
            continue
        end_col = len(body.rstrip("\r\n").rsplit("\n", 1)[-1].encode("utf-8"))
        span = Span(first + 1, 0, last + 1, end_col, start, end)
        chunks.append(Chunk("code", span, body, symbol=_main_symbol(group, symbol_at)))
    return chunks


def _main_symbol(group: list[Node], symbol_at: dict[tuple[int, int], int]) -> int:
    best, best_lines = NO_PARENT, 0
    for n in group:
        stack = [n]
        while stack:  # the node itself, or a definition wrapped by it (export, decorators)
            m = stack.pop()
            idx = symbol_at.get((m.start_byte, m.end_byte))
            if idx is not None:
                if _lines(m) > best_lines:
                    best, best_lines = idx, _lines(m)
                break
            stack.extend(k for k in m.named_children if _lines(k) * 2 >= _lines(m))
    return best
