"""Chunk fields BM25 hits show (kind, heading, lines, language), by path and ordinal, held in
memory by long-lived views (symbols come from symbol_table.py).

Finding ten chunks by (path, ordinal) in DuckDB scans the whole `chunks` table joined to
`files`. A server loads the few shown columns once per manifest, ordered by path and
ordinal, and answers by offset: a path's documents are numbered 0..n-1 (checked on every
lookup; a row that does not carry the asked key is left out and read with SQL instead).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

from .index import IndexView

_lock = threading.Lock()


class DocTable:
    """One kind of document's rows (a pyarrow table whose first two columns are path and
    ordinal, ordered by them) and each path's first row."""

    def __init__(self, table) -> None:
        self.table = table
        self.paths = table.column(0).to_pylist()
        self.ordinals = table.column(1).to_pylist()
        self.first: dict[str, int] = {}
        for i, path in enumerate(self.paths):
            self.first.setdefault(path, i)

    def rows(self, keys: list[tuple[str, int]]) -> tuple[dict[tuple[str, int], tuple], list]:
        """(key -> row tuple for the keys found, keys not found)."""
        found, missing = [], []
        for path, ordinal in keys:
            i = self.first.get(path, -1) + ordinal
            if 0 <= i < len(self.paths) and self.paths[i] == path and self.ordinals[i] == ordinal:
                found.append(i)
            else:
                missing.append((path, ordinal))
        if not found:
            return {}, missing
        taken = self.table.take(found)
        tuples = list(zip(*(col.to_pylist() for col in taken.columns)))
        return {(r[0], r[1]): r for r in tuples}, missing


def doc_table(view: IndexView, sql: str) -> DocTable:
    """The view's DocTable of `sql` (ordered by path, ordinal), loaded on first use."""
    key = ("doc_table", sql)
    got = view.cache.get(key)
    if got is None:
        with _lock:
            got = view.cache.get(key)
            if got is None:
                got = DocTable(view.cursor().sql(sql).to_arrow_table())
                view.cache[key] = got
                view.loaded(partial(doc_table, sql=sql))
    return got


CHUNK_DOCS_SQL = """
SELECT c.path, c.ordinal, c.kind, coalesce(c.heading, ''), c.start_line, c.end_line, f.language
FROM chunks c JOIN files f USING (path) WHERE {where} ORDER BY c.path, c.ordinal
"""
KEYS_WHERE = ("{t}.path IN (SELECT unnest(?::VARCHAR[])) "
              "AND {t}.ordinal IN (SELECT unnest(?::INTEGER[]))")


class ChunkDoc(NamedTuple):
    """A chunk's row as CHUNK_DOCS_SQL selects it: storage's start/end lines by name."""

    path: str
    ordinal: int
    kind: str
    heading: str
    line_start: int
    line_end: int
    language: str


def chunk_docs(view: IndexView, keys: list[tuple[str, int]]) -> dict[tuple[str, int], ChunkDoc]:
    """The row of each chunk key found."""
    return docs_by_key(view, CHUNK_DOCS_SQL, "c", keys, _resident_chunks, ChunkDoc)


def _resident_chunks(view: IndexView, keys: list[tuple[str, int]]) -> tuple[dict, list]:
    if not view.keep_text_in_memory:
        return {}, keys
    return doc_table(view, CHUNK_DOCS_SQL.format(where="TRUE")).rows(keys)


def docs_by_key(view: IndexView, sql: str, alias: str, keys: list[tuple[str, int]],
                resident, row: Callable[..., tuple]) -> dict[tuple[str, int], tuple]:
    """Rows of `sql` (keyed by path, ordinal) for `keys`, each made a `row` (a NamedTuple of
    the selected columns, in order): from memory when the view is long-lived (`resident`),
    else (and for keys it lacks) with SQL."""
    if not keys:
        return {}
    found, keys = resident(view, keys)
    out = {k: row(*r) for k, r in found.items()}
    if keys:
        rows = view.sql(sql.format(where=KEYS_WHERE.format(t=alias)),
                        [[k[0] for k in keys], [k[1] for k in keys]])
        out.update(((r[0], r[1]), row(*r)) for r in rows)
    return out
