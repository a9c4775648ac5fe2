"""Conditional-compilation branches (`#if/#elif/#else/#endif`, `#ifdef`, Swift's `#if os(...)`
/ `#elseif`) for the languages that have them.

Tree-sitter parses each branch as if the others were not there only when every branch is a
whole construct; a branch that opens a brace the `#else` opens again (two headers of one
method, two base lists of one class) or a grammar that accepts no directive inside a type
body (Swift) leaves ERROR nodes, and every member after them loses its enclosing type.
The fix, one for every such language: when the tree has errors, parse the file again with
the directive lines blanked to spaces (byte offsets and line numbers unchanged) and, of a
conditional whose branches do not each close the brackets they open, only one branch kept,
as a compiler would see it (the first, or the first whose condition is not a literal
`0`/`false`), the others blanked too; if that still has errors, once more with one branch
of every conditional; keep the tree with the fewest errors. Definitions in dropped
branches are not indexed (ctags does the same); a file that parses cleanly is never
touched, so both branches of a clean file stay.
"""

from __future__ import annotations

import re

from collections.abc import Callable

from tree_sitter import Node, Query, QueryCursor, Tree

# Languages whose sources carry conditional-compilation directives at the start of a line.
LANGUAGES = frozenset({"c", "cpp", "csharp", "swift", "objc", "cuda"})

# A conditional directive line (with its backslash continuations), its keyword and condition.
_DIRECTIVE = re.compile(
    rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elifdef|elifndef|elif|elseif|else|endif)\b((?:[^\n\\]|\\\r?\n|\\)*)",
    re.M)
_OPENS = frozenset({b"if", b"ifdef", b"ifndef"})
_ENDS = frozenset({b"endif"})
_FALSE = frozenset({b"0", b"false", b"(0)", b"(false)"})


class _Group:
    """One `#if ... #endif`: its directive lines and the byte range of each branch's body."""

    def __init__(self) -> None:
        self.directives: list[tuple[int, int]] = []
        self.branches: list[tuple[int, int, bytes]] = []   # (body start, body end, condition)
        self.closed = False

    def kept(self) -> int:
        """Index of the branch a compiler would most likely see: the first not `#if 0`."""
        for i, (_, _, cond) in enumerate(self.branches):
            if cond.strip() not in _FALSE:
                return i
        return len(self.branches)


def _groups(source: bytes) -> list[_Group]:
    groups: list[_Group] = []
    stack: list[_Group] = []
    for m in _DIRECTIVE.finditer(source):
        keyword, start, end = m.group(1), m.start(), m.end()
        if keyword in _OPENS:
            group = _Group()
            groups.append(group)
            stack.append(group)
        elif not stack:
            continue   # an `#else`/`#endif` without its `#if`: left as it is
        group = stack[-1]
        if group.branches:
            body_start, _, cond = group.branches[-1]
            group.branches[-1] = (body_start, start, cond)
        group.directives.append((start, end))
        if keyword in _ENDS:
            group.closed = True
            stack.pop()
        else:
            cond = m.group(2) if keyword not in (b"else",) else b""
            group.branches.append((end, end, cond))
    return groups


def _balanced(source: bytes, group: _Group) -> bool:
    """Whether each branch closes every bracket it opens (then all of them can stay)."""
    for a, b, _ in group.branches:
        body = source[a:b]
        if body.count(b"{") != body.count(b"}") or body.count(b"(") != body.count(b")") \
                or body.count(b"[") != body.count(b"]"):
            return False
    return True


# A line that is code, not a directive, a comment or the continuation of a directive.
_CODE_LINE = re.compile(rb"^[ \t]*[^#\s/*]", re.M)


def _directives_only(source: bytes, group: _Group) -> bool:
    """Whether the branches hold nothing but directives (`#define`s): each branch can stay."""
    return not any(_CODE_LINE.search(source, a, b) for a, b, _ in group.branches)


def _blank(source: bytes, groups: list[_Group], reduced: set[int]) -> bytes:
    """`source` with every group's directive lines blanked (newlines kept), and all but one
    branch of the groups in `reduced`."""
    buf = bytearray(source)
    for i, group in enumerate(groups):
        ranges = list(group.directives)
        if i in reduced:
            keep = group.kept()
            ranges += [(a, b) for k, (a, b, _) in enumerate(group.branches) if k != keep]
        for a, b in ranges:
            buf[a:b] = bytes(c if c in b"\r\n" else 32 for c in buf[a:b])
    return bytes(buf)


# Parses of one file at most (each round reduces the conditionals near the errors left).
_ROUNDS = 4


def resolve(tree: Tree, source: bytes, parse: Callable[[bytes], Tree | None]) -> tuple[Tree, bytes]:
    """The tree with the fewest errors among `tree` (of `source`) and those of `source` with
    conditionals resolved (see the module's docstring), and the bytes it is a tree of."""
    groups = [g for g in _groups(source) if g.closed]
    best = (error_weight(tree), tree, source)
    if not groups or not best[0]:
        return tree, source
    reduced = {i for i, g in enumerate(groups) if not _balanced(source, g)}
    for _ in range(_ROUNDS):
        blanked = _blank(source, groups, reduced)
        other = parse(blanked)
        if other is None:
            break
        weight = error_weight(other)
        if weight < best[0]:
            best = (weight, other, blanked)
        if not weight:
            break
        errors = _error_ranges(other)
        more = reduced | {i for i, g in enumerate(groups) if not _directives_only(source, g)
                          and any(a <= g.directives[-1][1] and g.directives[0][0] <= b for a, b in errors)}
        if more == reduced:   # the errors left are not near a conditional
            break
        reduced = more
    return best[1], best[2]


_ERROR_QUERIES: dict[object, Query] = {}


def _errors(tree: Tree) -> dict[str, list[Node]]:
    query = _ERROR_QUERIES.get(tree.language)
    if query is None:
        query = _ERROR_QUERIES[tree.language] = Query(tree.language, "(ERROR) @e (MISSING) @m")
    return QueryCursor(query).captures(tree.root_node)


def _error_ranges(tree: Tree) -> list[tuple[int, int]]:
    """Byte ranges of the ERROR nodes and of the parents of MISSING nodes."""
    found = _errors(tree)
    out = [n.byte_range for n in found.get("e", [])]
    out += [(n.parent or n).byte_range for n in found.get("m", [])]
    return out


def error_weight(tree: Tree) -> int:
    """How much of the tree error recovery took: bytes under ERROR nodes plus MISSING nodes."""
    if not tree.root_node.has_error:
        return 0
    found = _errors(tree)
    covered, reach = 0, -1
    for node in sorted(found.get("e", []), key=lambda n: n.start_byte):
        start, end = max(node.start_byte, reach), node.end_byte
        if end > start:
            covered += end - start
            reach = end
    return covered + len(found.get("m", [])) + 1
