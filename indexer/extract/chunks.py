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


def _rows(node: Node) -> tuple[int, int]:
    """The node's first row and the last row it has text on (a node ending at column 0 ends
    on the previous row)."""
    (start_row, _), (end_row, end_col) = node.start_point, node.end_point
    return start_row, (end_row - 1 if end_col == 0 and end_row > start_row else end_row)


def _lines(node: Node) -> int:
    start_row, end_row = _rows(node)
    return end_row - start_row + 1


def _members(node: Node, lines: int) -> list[Node] | None:
    """The member nodes of a big container (a class body...) of `lines` lines, or None if it
    has none: descend through children that dominate their parent (class -> body) to the
    first list of peers."""
    n = node
    while True:
        kids = n.named_children
        if not kids:
            return None
        sizes = [end - start + 1 for start, end in map(_rows, kids)]
        biggest = max(sizes)
        if biggest * 2 < lines:
            return kids if len(kids) >= 2 else None
        n = kids[sizes.index(biggest)]


def _groups(nodes: list[Node], depth: int = 0) -> list[tuple[int, int, list[Node]]]:
    """Group nodes into (first row, last row, nodes) runs of about MIN..MAX lines; a node over
    MAX lines with members is split by them (its header and closer join the first/last run)."""
    groups: list[tuple[int, int, list[Node]]] = []
    current: list[Node] = []
    rows: list[tuple[int, int]] = []   # `_rows` of each node in `current`

    def flush() -> None:
        if current:
            groups.append((rows[0][0], rows[-1][1], list(current)))
            current.clear()
            rows.clear()

    for n in nodes:
        start, end = _rows(n)
        lines = end - start + 1
        members = _members(n, lines) if lines > MAX_LINES and depth < MAX_SPLIT_DEPTH else None
        if members:
            flush()
            inner = _groups(members, depth + 1)
            first, last, _ = inner[0]
            inner[0] = (min(first, start), *inner[0][1:])
            inner[-1] = (inner[-1][0], max(inner[-1][1], end), inner[-1][2])
            groups.extend(inner)
            continue
        if current and start > rows[-1][1] and (
                end - rows[0][0] + 1 > MAX_LINES or rows[-1][1] - rows[0][0] + 1 >= MIN_LINES):
            carried = _leading_trivia(current)
            if len(carried) < len(current):
                kept = len(current) - len(carried)
                carried_rows = rows[kept:]
                del current[kept:], rows[kept:]
                flush()
                current.extend(carried)
                rows.extend(carried_rows)
        current.append(n)
        rows.append((start, end))
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
