"""Grep for a long-lived reader: RE2 run over the resident texts.

A server's texts are the assembly's `texts` structure (format/texts.py, read through
memtext.resident_texts, decompressed into one array kept until the server is idle; an
overlay's are its base's with the masked paths' rows layered over them). The scan runs
pyarrow.compute's regex kernels on that array: the same
RE2 engine and options as DuckDB's `regexp_matches` (case folding with `ignore_case`, `.` not
matching a newline), so a `Scan` answers as grep.py's SQL conditions made from the same plan,
while nothing is copied but the texts once (~20 ms of zstd, 31.5 MB on the standard library)
and the lines of the files a pattern may match. Copying every text into an in-memory DuckDB
instead cost ~180 MiB per manifest on the standard library.

Files are scanned CHUNK_BYTES at a time, and the deadline is checked between chunks and
between batches of files split into lines: RE2 runs in linear time, so no chunk takes long.
`pyarrow.compute` is imported by the functions that use it: importing it costs a server ~8
MiB and tens of ms at start, and most servers never grep.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Iterator
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from ..errors import InvalidParameter
from ..format.columns import value_offsets
from ..format.resident import whole
from .globs import escape_re2
from .idle_memory import release_arrow
from .index import IndexView, _timeout
from .memtext import LayeredTexts, ResidentTexts, resident_texts

CHUNK_BYTES = 4 << 20
TEXT_BATCH = 64  # files given by the caller split into lines at a time (text_lines)
FIRST_BATCH = 16  # files split into lines first; each next batch is 4 times larger


class Scan(NamedTuple):
    """What grep matches. A file is worth splitting into lines when it holds every one of
    `literals` and then matches `file` (RE2 over the whole text, `^`/`$` anchoring lines;
    None: the literals decide); a line matches when it holds the literals and matches `line`
    (None: likewise). `by_match`: the file test is a match of the pattern itself, so a file
    passing it has a matching line (nearly always): unread files are counted as matched."""
    file: str | None
    line: str | None
    literals: tuple[str, ...]
    ignore_case: bool
    by_match: bool


class Segment(NamedTuple):
    """Texts sorted by path; `keep`: the rows that count (None: all)."""
    paths: pa.Array
    texts: pa.Array
    keep: np.ndarray | None


Candidate = tuple[str, int, int]  # (path, segment, row)


def segments(view: IndexView) -> list[Segment]:
    """The view's texts: its mapped array, or an overlay's base (masked rows dropped) and the
    masked paths' rows."""
    import pyarrow.compute as pc

    texts = resident_texts(view)
    if isinstance(texts, LayeredTexts):
        base = _segment(texts.base)
        masked = pa.array(sorted(texts.masked), pa.string())
        keep = ~pc.is_in(base.paths, value_set=masked).to_numpy(zero_copy_only=False)
        return [base._replace(keep=keep), _segment(texts.changed)]
    return [_segment(texts)]


def _segment(texts: ResidentTexts) -> Segment:
    return Segment(whole(texts.store.rows.column("path")), texts.store.texts(), None)


def pattern_error(pattern: str, message: str) -> InvalidParameter:
    """The error for a pattern RE2 rejects, `message` being RE2's reason."""
    for prefix in ("Invalid Input Error: ", "Invalid regular expression: "):
        message = message.removeprefix(prefix)
    return InvalidParameter(f"invalid regular expression {pattern!r}: {message}",
                            hint="the syntax is RE2's (no backreferences or lookaround); "
                                 "search literally to match it as text")


def check_pattern(scan: Scan, pattern: str) -> None:
    """`pattern_error` for a pattern RE2 rejects, before any text is read."""
    import pyarrow.compute as pc

    for expr in filter(None, (scan.file, scan.line)):
        try:
            pc.match_substring_regex(pa.array([""]), expr, ignore_case=scan.ignore_case)
        except pa.ArrowInvalid as exc:
            raise pattern_error(pattern, str(exc).split("\n")[0]) from exc


def _matches(values: pa.Array, scan: Scan, expr: str | None, where: np.ndarray) -> np.ndarray:
    """Which of `values` (among `where`) hold every literal and then match `expr`."""
    hit = where.copy()
    for lit in scan.literals:
        hit &= _regex(values, escape_re2(lit), False, hit)
    if expr is not None:
        hit &= _regex(values, expr, scan.ignore_case, hit)
    return hit


def _regex(values: pa.Array, expr: str, ignore_case: bool, where: np.ndarray) -> np.ndarray:
    """RE2 `expr` over `values`: over the rows of `where` alone when they are few."""
    import pyarrow.compute as pc

    n = int(where.sum())
    if n == 0:
        return where
    if n * 4 > len(values):
        return pc.match_substring_regex(values, expr, ignore_case=ignore_case).to_numpy(zero_copy_only=False)
    rows = np.flatnonzero(where)
    out = np.zeros(len(values), dtype=bool)
    out[rows] = pc.match_substring_regex(values.take(pa.array(rows)), expr,
                                         ignore_case=ignore_case).to_numpy(zero_copy_only=False)
    return out


def _spans(sizes: np.ndarray) -> Iterator[tuple[int, int]]:
    """[i, j) ranges of consecutive items of about CHUNK_BYTES (at least one item each)."""
    ends = np.concatenate(([0], np.cumsum(sizes)))
    i = 0
    while i < len(sizes):
        j = max(i + 1, int(np.searchsorted(ends, ends[i] + CHUNK_BYTES, side="right")) - 1)
        yield i, j
        i = j


def _chunks(seg: Segment, allowed: set[str] | None) -> Iterator[tuple[np.ndarray, pa.Array, np.ndarray]]:
    """(row numbers, their texts, which of them count) over the segment's non-empty texts that
    are kept and allowed: slices of the mapped array, or copies when few rows count."""
    import pyarrow.compute as pc

    sizes = np.diff(value_offsets(seg.texts))
    keep = sizes > 0
    if seg.keep is not None:
        keep &= seg.keep
    if allowed is not None:
        keep &= pc.is_in(seg.paths, value_set=pa.array(sorted(allowed), pa.string())).to_numpy(zero_copy_only=False)
    if keep.sum() * 2 < len(keep):
        rows = np.flatnonzero(keep)
        for i, j in _spans(sizes[rows]):
            yield rows[i:j], seg.texts.take(pa.array(rows[i:j])), np.ones(j - i, dtype=bool)
        return
    for i, j in _spans(sizes):
        yield np.arange(i, j), seg.texts.slice(i, j - i), keep[i:j]


def _in_time(deadline: float | None, timeout: float | None) -> None:
    if deadline is not None and time.monotonic() > deadline:
        raise _timeout(timeout or 0)


def candidates(segs: list[Segment], scan: Scan, allowed: set[str] | None,
               deadline: float | None = None, timeout: float | None = None) -> list[Candidate]:
    """The files passing the scan's file test, in path order."""
    found: list[list[Candidate]] = []
    for s, seg in enumerate(segs):
        out: list[Candidate] = []
        for rows, values, where in _chunks(seg, allowed):
            _in_time(deadline, timeout)
            hit = rows[_matches(values, scan, scan.file, where)]
            out += [(p, s, int(r)) for p, r in zip(seg.paths.take(pa.array(hit)).to_pylist(), hit)]
        found.append(out)
    return list(heapq.merge(*found))


def line_rows(segs: list[Segment], files: list[Candidate], scan: Scan) -> list[tuple[str, int, str]]:
    """(path, line number, line) of the matching lines of `files`, in path then line order.
    Files are split into lines about CHUNK_BYTES at a time, which bounds what is copied."""
    per_segment = []
    for s, seg in enumerate(segs):
        mine = [(p, r) for p, t, r in files if t == s]
        if not mine:
            continue
        rows = np.array([r for _, r in mine], dtype=np.int64)
        found: list[tuple[str, int, str]] = []
        if scan.literals:
            found = _literal_line_hits(seg.texts, rows, [p for p, _ in mine], scan)
        else:
            for i, j in _spans(np.diff(value_offsets(seg.texts))[rows]):
                found += _line_hits(seg.texts.take(pa.array(rows[i:j])), [p for p, _ in mine[i:j]], scan)
        per_segment.append(found)
    return list(heapq.merge(*per_segment, key=lambda row: row[0]))


def _literal_line_hits(texts: pa.Array, rows: np.ndarray, paths: list[str],
                       scan: Scan) -> list[tuple[str, int, str]]:
    """`_line_hits` for a scan with literals, without splitting files into lines: the lines
    holding the first (longest) literal are found by substring search over each file's bytes
    (RE2 costs about a microsecond per line, whatever the line), then the other literals and
    the pattern are tested on those lines alone. A literal holding a newline is in no line."""
    import pyarrow.compute as pc

    needles = [lit.encode() for lit in scan.literals]
    if any(b"\n" in n for n in needles):
        return []
    offsets, data = value_offsets(texts), texts.buffers()[2]
    found: list[tuple[str, int, bytes]] = []
    for path, r in zip(paths, rows):
        text = data[int(offsets[r]):int(offsets[r + 1])].to_pybytes()
        found += ((path, n, line) for n, line in _lines_with(text, needles[0])
                  if all(other in line for other in needles[1:]))
    if not found or scan.line is None:
        return [(p, n, line.decode()) for p, n, line in found]
    lines = pa.array([line.decode() for _, _, line in found], pa.string())
    hit = pc.match_substring_regex(lines, scan.line, ignore_case=scan.ignore_case).to_numpy(zero_copy_only=False)
    return [(p, n, line) for (p, n, _), line, ok in zip(found, lines.to_pylist(), hit) if ok]


def _lines_with(text: bytes, needle: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, line) of each line of `text` holding `needle` (no newline in it)."""
    pos, number, counted = text.find(needle), 1, 0
    while pos >= 0:
        number += text.count(b"\n", counted, pos)
        counted = pos
        end = text.find(b"\n", pos)
        end = len(text) if end < 0 else end
        yield number, text[text.rfind(b"\n", 0, pos) + 1:end]
        pos = text.find(needle, end)


def _line_hits(texts: pa.Array, paths: list[str], scan: Scan,
               every_line: bool = False) -> list[tuple[str, int, str]]:
    """The matching lines of `texts`; a text's last line is dropped when empty (its newline
    ends the line before: files.line_count's rule), unless `every_line`."""
    import pyarrow.compute as pc

    lists = pc.split_pattern(texts, "\n")
    offsets = lists.offsets.to_numpy()
    offsets = offsets - offsets[0]
    flat = lists.flatten()
    counts = np.diff(offsets)
    parents = np.repeat(np.arange(len(texts), dtype=np.int32), counts)
    numbers = np.arange(1, len(flat) + 1, dtype=np.int32) - offsets[:-1][parents]
    if every_line:
        counted = np.ones(len(flat), dtype=bool)
    else:
        line_count = counts - pc.ends_with(texts, "\n").to_numpy(zero_copy_only=False)
        counted = numbers <= line_count[parents]
    hit = np.flatnonzero(_matches(flat, scan, scan.line, counted))
    lines = flat.take(pa.array(hit, pa.int64())).to_pylist()
    return [(paths[parents[i]], int(numbers[i]), line) for i, line in zip(hit, lines)]


def text_lines(texts: list[tuple[str, str]], scan: Scan, limit: int, deadline: float | None,
               timeout: float) -> list[tuple[str, int, str]]:
    """The matching lines of (path, text) pairs the caller read (search_files' live files),
    TEXT_BATCH files at a time, each batch's in path then line order, until more than `limit`
    are found. Every line counts, the empty one after a text's last newline too. (The caller
    holds no view: the Arrow pool's freed pages are handed back here.)"""
    rows: list[tuple[str, int, str]] = []
    try:
        for i in range(0, len(texts), TEXT_BATCH):
            _in_time(deadline, timeout)
            batch = texts[i:i + TEXT_BATCH]
            found = _line_hits(pa.array([t for _, t in batch], pa.string()), [p for p, _ in batch],
                               scan, every_line=True)
            rows += sorted(found, key=lambda row: (row[0], row[1]))
            if len(rows) > limit:
                break
    finally:
        release_arrow()
    _in_time(deadline, timeout)
    return rows


def text_count(view: IndexView) -> int:
    """How many indexed files have a text (those the resident texts hold)."""
    texts = resident_texts(view)
    if isinstance(texts, LayeredTexts):
        return len(texts.changed.paths) + sum(p not in texts.masked for p in texts.base.paths)
    return len(texts.paths)


def matching_paths(view: IndexView, scan: Scan, allowed: set[str] | None, timeout: float) -> set[str]:
    """The paths passing the scan's file test."""
    return {c[0] for c in candidates(segments(view), scan, allowed, time.monotonic() + timeout, timeout)}


def grep_rows(view: IndexView, scan: Scan, allowed: set[str] | None, limit: int,
              timeout: float | None) -> tuple[list[tuple], int, int, bool]:
    """grep.grep_rows on the view's texts: (rows, matches counted, files matched, complete),
    reading candidate files' lines in the same batches, so the counts are the same too.
    (The Arrow pool's freed pages go back when the follower's request ends:
    idle_memory.release_arrow.)"""
    deadline = time.monotonic() + timeout if timeout else None
    segs = segments(view)
    files = candidates(segs, scan, allowed, deadline, timeout)
    rows: list[tuple] = []
    done, batch = 0, max(FIRST_BATCH, limit // 4)
    while done < len(files) and len(rows) <= limit:
        _in_time(deadline, timeout)
        rows += line_rows(segs, files[done:done + batch], scan)
        done += batch
        batch *= 4
    found, unread = len({r[0] for r in rows}), files[done:]
    if unread and not scan.by_match:
        found += len({r[0] for r in line_rows(segs, unread, scan)})
    elif unread:
        found += len(unread)
    _in_time(deadline, timeout)
    return rows, len(rows), found, done >= len(files)
