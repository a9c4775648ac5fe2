"""File text from the index (the resident texts, or the files' shards), split into lines, and
snippets cut from it.

Snippets are whole lines copied verbatim from the indexed text, so a result's snippet is
always found at its claimed lines.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from itertools import accumulate

from ..errors import NotFound
from ..tokenize import tokenize
from .index import IndexView
from .memtext import LayeredTexts, ResidentTexts, mapped_texts, resident_texts

SNIPPET_LINES = 4
_CACHE_FILES = 64  # files whose lines were read from their shards
_CACHE_MAPPED = 1024  # files of the mapped texts (`Lines`: 8 bytes a line)


_lock = threading.Lock()


def _cache(view: IndexView) -> OrderedDict:
    return view.cache.setdefault("file_lines", OrderedDict())


class Lines(Sequence):
    """A file's lines (without their newline) cut on demand from its UTF-8 bytes in the mapped
    texts: a search shows a few lines of each of ~100 files, so no file is decoded or split
    whole (that was ~15% of a warm search_code). Reads as the list `text.split("\\n")` does:
    a newline byte never occurs inside a multi-byte UTF-8 character."""

    __slots__ = ("_data", "_ends")

    def __init__(self, data: memoryview | bytes) -> None:
        import numpy as np  # loaded already: the mapped texts this reads are numpy-backed

        self._data = data
        self._ends = np.append(np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == 10), len(data))

    def __len__(self) -> int:
        return len(self._ends)

    def _start(self, i: int) -> int:
        return int(self._ends[i - 1]) + 1 if i else 0

    def __getitem__(self, i):
        n = len(self._ends)
        if isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step != 1:
                return [self[k] for k in range(start, stop, step)]
            if start >= stop:
                return []
            return str(self._data[self._start(start):int(self._ends[stop - 1])], "utf-8").split("\n")
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise IndexError("line index out of range")
        return str(self._data[self._start(i):int(self._ends[i])], "utf-8")

    def __iter__(self):
        return iter(self[:])


def file_lines(view: IndexView, paths: list[str]) -> dict[str, Sequence[str]]:
    """Lines (without their newline) of each indexed path; absent or skipped paths left out.
    The most recently used files stay cached on the view."""
    cache = _cache(view)
    wanted = list(dict.fromkeys(paths))
    with _lock:
        out = {p: cache[p] for p in wanted if p in cache}
    missing = [p for p in wanted if p not in out]
    texts = _texts(view)
    if missing:
        out.update((p, Lines(t)) for p, t in _raw(view, texts, missing).items())
    with _lock:
        for path in wanted:
            if path in out:
                cache[path] = out[path]
                cache.move_to_end(path)
        while len(cache) > (_CACHE_FILES if texts is None else _CACHE_MAPPED):
            cache.popitem(last=False)
    return out


def _texts(view: IndexView) -> ResidentTexts | LayeredTexts | None:
    """The texts a reader cuts lines from: a long-lived reader's resident texts, a one-shot
    reader's mapped ones (an overlay's layered on its base's), or None (the arrays are
    missing or damaged: the files' shards are read instead)."""
    if view.keep_text_in_memory:
        return resident_texts(view)
    return mapped_texts(view) or (resident_texts(view) if view.base_id is not None else None)


def _raw(view: IndexView, texts: ResidentTexts | LayeredTexts | None, paths: list[str]) -> dict:
    """The UTF-8 text of each indexed path of `paths`, from `texts` or else their shards."""
    if texts is not None:
        return {p: t for p in paths if (t := texts.raw(p)) is not None}
    from ..format.shard import shard_text_pairs  # pyarrow.parquet: only when no resident texts

    rows = view.cursor().execute("SELECT path, shard FROM files WHERE path IN (SELECT unnest(?::VARCHAR[])) "
                                 "AND status = 'indexed'", [paths]).fetchall()
    return {p: t.encode("utf-8") for p, t in shard_text_pairs(rows, view.store.get)}


def chunk_slice(view: IndexView, path: str, start_byte: int, end_byte: int) -> str:
    """Bytes start_byte..end_byte of the path's indexed text, decoded (a chunk's text when the
    assembly keeps it NULL, format/shard.py)."""
    raw = _raw(view, _texts(view), [path]).get(path)
    return "" if raw is None else str(raw[start_byte:end_byte], "utf-8")


def lines_of(view: IndexView, path: str) -> Sequence[str]:
    got = file_lines(view, [path])
    if path not in got:
        raise NotFound(f"{path} is not an indexed text file in manifest {view.manifest_id[:12]}",
                       hint="check the path (repository-relative, '/'-separated) or rebuild")
    return got[path]


def span_text(lines: Sequence[str], line_start: int, line_end: int) -> str:
    return "\n".join(lines[max(line_start, 1) - 1:max(line_end, 0)])


def best_window(lines: Sequence[str], line_start: int, line_end: int, terms: set[str] | None,
                size: int = SNIPPET_LINES) -> tuple[int, int]:
    """The `size`-line window of [line_start, line_end] holding most query terms (first
    window on ties, or when there are no terms)."""
    line_end = min(line_end, len(lines))
    if line_end - line_start + 1 <= size or not terms:
        return line_start, min(line_end, line_start + size - 1)
    line_start = max(line_start, 1)
    hits = _line_hits(lines[line_start - 1:line_end], terms)
    best, best_at = -1, line_start
    window = sum(hits[:size])
    for i in range(0, len(hits) - size + 1):
        if i:
            window += hits[i + size - 1] - hits[i - 1]
        if window > best:
            best, best_at = window, line_start + i
    return best_at, best_at + size - 1


@lru_cache(maxsize=256)
def _terms_pattern(terms: frozenset[str]) -> re.Pattern:
    return re.compile("|".join(re.escape(t) for t in sorted(terms, key=lambda t: (-len(t), t))))


def _line_hits(lines: Sequence[str], terms: set[str]) -> list[int]:
    """How many of the query's terms each line holds (its own tokens). Most lines hold none:
    one scan of the lowered span for the terms as substrings finds the lines worth
    tokenising (tokenising every line of a long span was most of a search's time)."""
    text = "\n".join(lines).lower()
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    counts = [0] * len(lines)
    seen = -1
    for m in _terms_pattern(frozenset(terms)).finditer(text):
        i = bisect_right(starts, m.start()) - 1
        if i != seen:
            seen = i
            counts[i] = len(terms.intersection(tokenize(lines[i])))
    return counts


def window_snippets(view: IndexView, hits: list, terms: set[str], match: str = "bm25") -> list:
    """`hits` with the snippet of each `match` hit cut at the window of its span holding most
    of `terms`: retrievers asked for many candidates leave that to the few hits shown."""
    lines = file_lines(view, [h.path for h in hits if h.match == match])
    return [replace(h, snippet=snippet(lines[h.path], h.line_start, h.line_end, terms))
            if h.match == match and h.path in lines else h for h in hits]


def snippet(lines: Sequence[str], line_start: int, line_end: int, terms: set[str] | None = None,
            size: int = SNIPPET_LINES) -> str:
    a, b = best_window(lines, line_start, line_end, terms, size)
    return span_text(lines, a, b)
