"""Syntax-aware chunks: top-level nodes, small neighbours grouped, big containers split by
their members, so a chunk is roughly MIN_LINES..MAX_LINES lines."""

from __future__ import annotations

from bisect import bisect_left

import numpy as np
from tree_sitter import Node

from ...types import NO_PARENT, Chunk, Span

MIN_LINES = 20
MAX_LINES = 80
MAX_SPLIT_DEPTH = 4


def _end_row(node: Node) -> int:
    """Last row the node has text on (a node ending at column 0 ends on the previous row)."""
    end = node.end_point
    return end.row - 1 if end.column == 0 and end.row > node.start_point.row else end.row


def _lines(node: Node) -> int:
    (start_row, _), (end_row, end_col) = node.start_point, node.end_point
    return (end_row - 1 if end_col == 0 and end_row > start_row else end_row) - start_row + 1


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
            groups.append((current[0].start_point.row, _end_row(current[-1]), list(current)))
            current.clear()

    for n in nodes:
        members = _members(n) if _lines(n) > MAX_LINES and depth < MAX_SPLIT_DEPTH else None
        if members:
            flush()
            inner = _groups(members, depth + 1)
            first, last, _ = inner[0]
            inner[0] = (min(first, n.start_point.row), *inner[0][1:])
            inner[-1] = (inner[-1][0], max(inner[-1][1], _end_row(n)), inner[-1][2])
            groups.extend(inner)
            continue
        same_line = bool(current) and n.start_point.row <= _end_row(current[-1])
        if current and not same_line and (
                _end_row(n) - current[0].start_point.row + 1 > MAX_LINES
                or _span_lines(current) >= MIN_LINES):
            carried = _leading_trivia(current)
            if len(carried) < len(current):
                del current[len(current) - len(carried):]
                flush()
                current.extend(carried)
        current.append(n)
    flush()
    return groups


def _leading_trivia(nodes: list[Node]) -> list[Node]:
    """Trailing comments/attributes of a run: they belong to the node that follows."""
    i = len(nodes)
    while i > 0 and _is_trivia(nodes[i - 1]):
        i -= 1
    return nodes[i:]


def _is_trivia(node: Node) -> bool:
    t = node.type
    return "comment" in t or "attribute" in t or t in ("decorator", "annotation")


def _span_lines(nodes: list[Node]) -> int:
    return _end_row(nodes[-1]) - nodes[0].start_point.row + 1


def code_chunks(root: Node, source: bytes, symbol_at: dict[tuple[int, int], int]) -> list[Chunk]:
    """Chunks over the top-level nodes of `root`; `symbol_at` maps a node's byte range to the
    index of the symbol defined there."""
    newlines = np.flatnonzero(np.frombuffer(source, np.uint8) == 10) + 1
    line_starts = [0, *newlines.tolist(), len(source)]
    symbol_starts = sorted(start for start, _ in symbol_at)
    chunks = []
    for first, last, group in _groups(root.named_children):
        start = line_starts[first]
        end = line_starts[last + 1] if last + 1 < len(line_starts) else len(source)
        body = source[start:end].decode("utf-8", "replace")
        if not body.strip():
            continue
        end_col = len(body.rstrip("\r\n").rsplit("\n", 1)[-1].encode("utf-8"))
        span = Span(first + 1, 0, last + 1, end_col, start, end)
        chunks.append(Chunk("code", span, body, symbol=_main_symbol(group, symbol_at, symbol_starts)))
    return chunks


def _main_symbol(group: list[Node], symbol_at: dict[tuple[int, int], int],
                 symbol_starts: list[int]) -> int:
    """The biggest symbol among the group's nodes, or among the definitions they wrap; the
    search skips subtrees no symbol range starts in (sorted `symbol_starts`)."""
    best, best_lines = NO_PARENT, 0
    for n in group:
        stack = [n]
        while stack:  # the node itself, or a definition wrapped by it (export, decorators)
            m = stack.pop()
            idx = symbol_at.get(m.byte_range)
            lines = _lines(m)
            if idx is not None:
                if lines > best_lines:
                    best, best_lines = idx, lines
                break
            i = bisect_left(symbol_starts, m.start_byte)
            if i < len(symbol_starts) and symbol_starts[i] <= m.end_byte:
                stack.extend(k for k in m.named_children if _lines(k) * 2 >= lines)
    return best
