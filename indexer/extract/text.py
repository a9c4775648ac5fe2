"""Chunkers that need no grammar: line windows for plain text, sections for docs."""

from __future__ import annotations

import re

from ...types import Chunk, Span

WINDOW_LINES = 50


def _line_starts(text: str) -> list[int]:
    """Byte offset of each line start (UTF-8), plus the end."""
    starts = [0]
    pos = 0
    for line in text.splitlines(keepends=True):
        pos += len(line.encode("utf-8"))
        starts.append(pos)
    return starts


def span_of_lines(starts: list[int], lines: list[str], first: int, last: int) -> Span:
    """Span covering 0-based lines first..last inclusive."""
    end_col = len(lines[last].rstrip("\r\n").encode("utf-8")) if lines else 0
    return Span(first + 1, 0, last + 1, end_col, starts[first], starts[last + 1])


def line_chunks(text: str, window: int = WINDOW_LINES) -> list[Chunk]:
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    starts = _line_starts(text)
    chunks = []
    for first in range(0, len(lines), window):
        last = min(first + window, len(lines)) - 1
        body = "".join(lines[first:last + 1])
        if body.strip():
            chunks.append(Chunk("text", span_of_lines(starts, lines, first, last), body))
    return chunks


_MD_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+<>_:.])\1{2,}\s*$")


def _headings(lines: list[str], language: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of each heading."""
    found: list[tuple[int, int, str]] = []
    if language == "markdown":
        fence = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith(("```", "~~~")):
                fence = not fence
            m = None if fence else _MD_HEADING.match(line)
            if m:
                found.append((i, len(m.group(1)), m.group(2).strip()))
        return found
    levels: list[str] = []
    for i in range(1, len(lines)):
        m = _RST_UNDERLINE.match(lines[i])
        title = lines[i - 1].strip()
        if m and title and not _RST_UNDERLINE.match(lines[i - 1]) and len(lines[i].strip()) >= len(title):
            char = m.group(1)
            if char not in levels:
                levels.append(char)
            found.append((i - 1, levels.index(char) + 1, title))
    return found


def doc_sections(text: str, language: str) -> list[Chunk]:
    """One chunk per heading section, with the heading path (`A > B > C`)."""
    lines = text.splitlines(keepends=True)
    if not lines:
        return []
    starts = _line_starts(text)
    heads = _headings(lines, language)
    bounds = [h[0] for h in heads]
    if not bounds or bounds[0] != 0:
        bounds.insert(0, 0)
        heads.insert(0, (0, 0, ""))
    chunks = []
    path: list[tuple[int, str]] = []
    for n, (line_no, level, title) in enumerate(heads):
        if level:
            path = [p for p in path if p[0] < level] + [(level, title)]
        last = (heads[n + 1][0] - 1) if n + 1 < len(heads) else len(lines) - 1
        if last < line_no:
            continue
        body = "".join(lines[line_no:last + 1])
        if body.strip():
            heading = " > ".join(t for _, t in path)
            chunks.append(Chunk("doc_section", span_of_lines(starts, lines, line_no, last), body, heading))
    return chunks
