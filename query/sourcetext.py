"""File text from the index (files.text), split into lines, and snippets cut from it.

Snippets are whole lines copied verbatim from the indexed text, so a result's snippet is
always found at its claimed lines.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ..errors import NotFound
from ..tokenize import tokenize
from .index import IndexView
from .memtext import text_copy, text_cursor

SNIPPET_LINES = 4
_CACHE_FILES = 64


_lock = threading.Lock()


def _cache(view: IndexView) -> OrderedDict:
    return view.cache.setdefault("file_lines", OrderedDict())


def file_lines(view: IndexView, paths: list[str]) -> dict[str, list[str]]:
    """Lines (without their newline) of each indexed path; absent or skipped paths left out.
    The most recently used files stay cached on the view."""
    cache = _cache(view)
    wanted = list(dict.fromkeys(paths))
    with _lock:
        out = {p: cache[p] for p in wanted if p in cache}
    missing = [p for p in wanted if p not in out]
    if missing and view.keep_text_in_memory:
        texts = text_copy(view).texts
        out.update((p, texts[p].split("\n")) for p in missing if p in texts)
    elif missing:
        rows = text_cursor(view).execute(
            "SELECT path, text FROM files WHERE path IN (SELECT unnest(?::VARCHAR[])) "
            "AND text IS NOT NULL", [missing]).fetchall()
        for path, text in rows:
            out[path] = text.split("\n")
    with _lock:
        for path in wanted:
            if path in out:
                cache[path] = out[path]
                cache.move_to_end(path)
        while len(cache) > _CACHE_FILES:
            cache.popitem(last=False)
    return out


def lines_of(view: IndexView, path: str) -> list[str]:
    got = file_lines(view, [path])
    if path not in got:
        raise NotFound(f"{path} is not an indexed text file in manifest {view.manifest_id[:12]}",
                       hint="check the path (repository-relative, '/'-separated) or rebuild")
    return got[path]


def span_text(lines: list[str], line_start: int, line_end: int) -> str:
    return "\n".join(lines[max(line_start, 1) - 1:max(line_end, 0)])


def best_window(lines: list[str], line_start: int, line_end: int, terms: set[str] | None,
                size: int = SNIPPET_LINES) -> tuple[int, int]:
    """The `size`-line window of [line_start, line_end] holding most query terms (first
    window on ties, or when there are no terms)."""
    line_end = min(line_end, len(lines))
    if line_end - line_start + 1 <= size or not terms:
        return line_start, min(line_end, line_start + size - 1)
    hits = [_line_hits(lines[i - 1], terms) for i in range(line_start, line_end + 1)]
    best, best_at = -1, line_start
    window = sum(hits[:size])
    for i in range(0, len(hits) - size + 1):
        if i:
            window += hits[i + size - 1] - hits[i - 1]
        if window > best:
            best, best_at = window, line_start + i
    return best_at, best_at + size - 1


def _line_hits(line: str, terms: set[str]) -> int:
    """How many of the query's terms the line holds: a substring test on the lowered line
    first (most lines hold none, and tokenising every line of a long span was most of a
    search's time), then the line's own tokens."""
    lowered = line.lower()
    if not any(t in lowered for t in terms):
        return 0
    return len(terms.intersection(tokenize(line)))


def snippet(lines: list[str], line_start: int, line_end: int, terms: set[str] | None = None,
            size: int = SNIPPET_LINES) -> str:
    a, b = best_window(lines, line_start, line_end, terms, size)
    return span_text(lines, a, b)
