"""Regex and literal search over file contents with RE2: linear time, so no user pattern can
backtrack catastrophically. Python's `re` never sees a user pattern.

Lines are matched one by one (like grep and ripgrep): a pattern does not span lines.
Files are first filtered by one match over their whole text, then only matching files
are split into lines. Every reader scans the resident texts with RE2 (textscan.py; an
overlay's are its base's with the masked paths' texts layered over them; the assembly keeps
no other copy of the texts). A pattern whose required literals RE2 cannot skip ahead to (one
starting with `^` or a class has no literal prefix, so RE2 would read every byte of every
file holding them) is not matched against whole files: files are filtered by the literals
alone, and RE2 only reads the lines that hold them (`_plan`).
"""

from __future__ import annotations

import time

from ..errors import InvalidParameter
from .filters import FileFilter, allowed_paths, make_filter
from .globs import escape_re2
from .index import IndexView, _timeout
from .literals import required_literals
from ..model import COMPLETE, TRUNCATED, GrepMatch, GrepResponse, SearchHit
from .retrieval import Candidates, SearchRequest
from .sourcetext import file_lines
from . import textscan
from .textscan import Scan

DEFAULT_MAX_RESULTS = 50
MAX_RESULTS_CAP = 10_000
DEFAULT_MAX_BYTES = 512 * 1024
DEFAULT_TIMEOUT = 10.0
MAX_CONTEXT = 10
MAX_PATTERN = 1000

_PREFIX_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ ")


def _plan(pattern: str, regex: bool, case_sensitive: bool, whole_text: bool = True) -> Scan:
    """RE2 runs only where the pattern's required literals are found. With `whole_text`
    False (lines are cheap to read) and no literal prefix for RE2 to skip ahead to, the file
    test is the literals alone."""
    if not regex and case_sensitive:
        return Scan(None, None, (pattern,), False, True)
    expr = pattern if regex else escape_re2(pattern)
    literals = tuple(sorted(required_literals(pattern), key=len, reverse=True)) if regex and case_sensitive else ()
    by_match = not literals or whole_text or pattern[0] in _PREFIX_START
    # (?m): `^` and `$` anchor lines in the whole-file pass too, which keeps it a superset.
    return Scan("(?m)" + expr if by_match else None, expr, literals, not case_sensitive, by_match)


def _check(pattern: str, context: int, max_results: int, max_bytes: int) -> None:
    if not pattern:
        raise InvalidParameter("empty pattern")
    if len(pattern) > MAX_PATTERN:
        raise InvalidParameter(f"pattern longer than {MAX_PATTERN} characters")
    if not 0 <= context <= MAX_CONTEXT:
        raise InvalidParameter(f"context must be between 0 and {MAX_CONTEXT} lines")
    if not 1 <= max_results <= MAX_RESULTS_CAP:
        raise InvalidParameter(f"max_results must be between 1 and {MAX_RESULTS_CAP}")
    if max_bytes < 1:
        raise InvalidParameter("max_bytes must be positive")


def grep_rows(view: IndexView, pattern: str, *, regex: bool, case_sensitive: bool,
              filt: FileFilter, limit: int, timeout: float | None) -> tuple[list[tuple], int, int, bool]:
    """(rows of (path, line_number, line), matches counted, files matched, complete).

    Candidate files are found first, then their lines are read in batches (in path order)
    until `limit` lines are found; `complete` is False when files were left unread, and then
    the count is a lower bound (and the files count may include files whose whole text
    matches in no single line).
    """
    scan = _plan(pattern, regex, case_sensitive, whole_text=False)
    textscan.check_pattern(scan, pattern)
    return textscan.grep_rows(view, scan, allowed_paths(view, filt), limit, timeout)


def grep(view: IndexView, pattern: str, *, regex: bool = True, case_sensitive: bool = True,
         glob: str | None = None, language: str | None = None, context: int = 2,
         max_results: int = DEFAULT_MAX_RESULTS, max_bytes: int = DEFAULT_MAX_BYTES,
         timeout: float | None = DEFAULT_TIMEOUT) -> GrepResponse:
    """Matching lines with `context` lines around them, in path then line order.

    `regex=False` searches `pattern` literally. Stops at `max_results` matches or
    `max_bytes` of output (truncated=True); raises Timeout after `timeout` seconds and
    InvalidParameter for a pattern RE2 rejects.
    """
    started = time.perf_counter()
    _check(pattern, context, max_results, max_bytes)
    filt = make_filter(language, glob, None)
    rows, total, files_matched, complete = grep_rows(
        view, pattern, regex=regex, case_sensitive=case_sensitive, filt=filt, limit=max_results,
        timeout=timeout)
    truncated = len(rows) > max_results or not complete
    rows = rows[:max_results]
    lines = file_lines(view, [r[0] for r in rows]) if context else {}
    matches: list[GrepMatch] = []
    used = 0
    for path, n, line in rows:
        if context:
            text = lines.get(path, [])
            before, after = text[max(n - 1 - context, 0):n - 1], text[n:n + context]
            used += sum(map(len, before)) + sum(map(len, after)) + len(before) + len(after)
        else:
            before, after = [], []
        used += len(path) + len(line) + 16
        if used > max_bytes and matches:
            truncated = True
            break
        matches.append(GrepMatch(path, n, line, before, after))
    files_searched = len(allowed) if (allowed := allowed_paths(view, filt)) is not None else \
        textscan.text_count(view)
    return GrepResponse(matches=matches, total_matches=total,
                        files_searched=files_searched, files_matched=files_matched,
                        truncated=truncated, metadata=view.metadata(TRUNCATED if truncated else COMPLETE),
                        duration_ms=(time.perf_counter() - started) * 1000)


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    rows, total, _, complete = grep_rows(
        view, req.query, regex=True, case_sensitive=req.case_sensitive,
        filt=req.file_filter(), limit=req.limit,
        timeout=DEFAULT_TIMEOUT)
    hits = [SearchHit(path=p, line_start=n, line_end=n, kind="match", name="", qualified_name="",
                      symbol_id=None, symbol_stable_id=None, score=1.0, snippet=line,
                      result_type="match", result_id=f"{p}#L{n}", match="regex")
            for p, n, line in rows[:req.limit]]
    return Candidates(hits, total, COMPLETE if complete and total <= req.limit else TRUNCATED)


def matching_files(view: IndexView, pattern: str, *, regex: bool, case_sensitive: bool,
                   glob: str | None = None) -> set[str]:
    """Indexed files whose indexed text may hold a matching line (a superset of those that do):
    what a search of the live files can skip the others by, for files unchanged since."""
    _check(pattern, 0, 1, 1)
    scan = _plan(pattern, regex, case_sensitive)
    textscan.check_pattern(scan, pattern)
    return textscan.matching_paths(view, scan, allowed_paths(view, make_filter(None, glob, None)),
                                   DEFAULT_TIMEOUT)


def grep_texts(texts: list[tuple[str, str]], pattern: str, *, regex: bool = True,
               case_sensitive: bool = True, context: int = 2,
               max_results: int = DEFAULT_MAX_RESULTS, deadline: float | None = None,
               timeout: float = DEFAULT_TIMEOUT) -> tuple[list[GrepMatch], int, int, bool]:
    """Matching lines of (path, text) pairs given by the caller (files read from the work
    tree), with RE2 like `grep`: (matches, matches counted, files matched, truncated).
    `deadline` (time.monotonic) raises Timeout once passed, checked between batches."""
    _check(pattern, context, max_results, 1)
    if not regex:  # a literal needs no regex engine: substring search, in Python
        rows = _literal_rows(texts, pattern, case_sensitive, max_results, deadline, timeout)
        return _grep_matches(texts, rows, context, max_results)
    scan = _plan(pattern, regex, case_sensitive)
    textscan.check_pattern(scan, pattern)
    rows = textscan.text_lines(texts, scan, max_results, deadline, timeout)
    return _grep_matches(texts, rows, context, max_results)


def _literal_rows(texts: list[tuple[str, str]], pattern: str, case_sensitive: bool,
                  max_results: int, deadline: float | None, timeout: float) -> list[tuple]:
    needle = pattern if case_sensitive else pattern.casefold()
    rows: list[tuple] = []
    for i, (path, text) in enumerate(texts):
        if deadline is not None and i % textscan.TEXT_BATCH == 0 and time.monotonic() > deadline:
            raise _timeout(timeout)
        if needle not in (text if case_sensitive else text.casefold()):
            continue
        for n, line in enumerate(text.split("\n"), 1):
            if needle in (line if case_sensitive else line.casefold()):
                rows.append((path, n, line))
        if len(rows) > max_results:
            break
    if deadline is not None and time.monotonic() > deadline:
        raise _timeout(timeout)
    return rows


def _grep_matches(texts: list[tuple[str, str]], rows: list[tuple], context: int,
                  max_results: int) -> tuple[list[GrepMatch], int, int, bool]:
    hit = {r[0] for r in rows}
    lines = {p: t.split("\n") for p, t in texts if context and p in hit}
    matches = [GrepMatch(path, n, line.rstrip("\r"),
                         [s.rstrip("\r") for s in lines[path][max(n - 1 - context, 0):n - 1]] if context else [],
                         [s.rstrip("\r") for s in lines[path][n:n + context]] if context else [])
               for path, n, line in rows[:max_results]]
    return matches, len(rows), len(hit), len(rows) > max_results
