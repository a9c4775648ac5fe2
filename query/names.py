"""An in-memory name index over one manifest's symbols, built once per view.

A DuckDB scan costs milliseconds per query on a large repository; dictionaries keyed by
lower-cased name, qualified name and sub-token, a sorted name list (prefix via bisect) and
a trigram index (fuzzy candidates) answer in microseconds. The index is built with the
view's symbol table (`SymbolTable.load(view).names`) and lives as long as the view, so a
long-lived server pays for it once per manifest.
"""

from __future__ import annotations

import bisect
import heapq
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import NamedTuple

from ..format.resident import (KeyIndex, StringColumn, subtoken_table, trigram_key,
                               trigram_table, trigrams, whole)

__all__ = ["NameIndex", "SymbolRow", "fold_qualified", "trigrams", "damerau_levenshtein"]

MAX_FUZZY_GRAMS = 14


class SymbolRow(NamedTuple):
    """One symbol's hot fields (the symbol table fills them; the name index holds them)."""

    symbol_id: str
    stable_id: str
    path: str
    language: str
    kind: str
    name: str
    qualified_name: str
    fq_name: str
    signature: str
    line_start: int
    line_end: int
    top_level: bool
    in_tests: bool


def fold_qualified(name: str) -> str:
    """Qualified-name key: separators (`::`, `#`, `->`, `/`) folded to `.`, lower-cased."""
    out = name.strip().lower()
    for sep in ("::", "->", "#", "/", "\\"):
        out = out.replace(sep, ".")
    return out.removesuffix("()")


def damerau_levenshtein(a: str, b: str, limit: int) -> int:
    """Optimal string alignment distance (a transposition is one edit), computed only in the
    band |i - j| <= limit and stopping early; returns limit + 1 when above `limit`."""
    n, m = len(a), len(b)
    if abs(n - m) > limit:
        return limit + 1
    if a == b:
        return 0
    start = 0
    while start < n and start < m and a[start] == b[start]:
        start += 1
    end = 0
    while end < n - start and end < m - start and a[n - 1 - end] == b[m - 1 - end]:
        end += 1
    if start or end:  # shared ends cost nothing: align only the middles
        a, b = a[start:n - end], b[start:m - end]
        n, m = len(a), len(b)
        if not n or not m:
            return min(max(n, m), limit + 1)
    big = limit + 1
    prev2: list[int] = []
    prev = [j if j <= limit else big for j in range(m + 1)]
    for i in range(1, n + 1):
        cur = [big] * (m + 1)
        if i <= limit:
            cur[0] = i
        lo, hi = max(1, i - limit), min(m, i + limit)
        best = cur[0] if lo == 1 else big
        ai = a[i - 1]
        for j in range(lo, hi + 1):
            v = prev[j - 1] + (ai != b[j - 1])
            if prev[j] + 1 < v:
                v = prev[j] + 1
            if cur[j - 1] + 1 < v:
                v = cur[j - 1] + 1
            if i > 1 and j > 1 and ai == b[j - 2] and a[i - 2] == b[j - 1] and prev2[j - 2] + 1 < v:
                v = prev2[j - 2] + 1
            cur[j] = v
            if v < best:
                best = v
        if best > limit:
            return big
        prev2, prev = prev, cur
    return min(prev[m], big)


class _RowLists(Mapping):
    """key -> its rows (ascending), over KeyIndexes (the symbols' qualified_key and fq_key
    indexes: a row is in the second only under another key than in the first)."""

    def __init__(self, *indexes: KeyIndex) -> None:
        self.indexes = indexes

    def __getitem__(self, key: str) -> list[int]:
        rows = [r for index in self.indexes for r in index.rows_of(key)] if isinstance(key, str) else []
        if not rows:
            raise KeyError(key)
        return sorted(rows) if len(self.indexes) > 1 else rows

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys(heapq.merge(*(index.keys for index in self.indexes))))

    def __len__(self) -> int:
        return sum(len(index.keys) for index in self.indexes)


class NameIndex:
    """Lookups by name over every symbol of a manifest; rows are `SymbolRow`s."""

    def __init__(self, rows: Sequence[SymbolRow], keys: Iterable[tuple[str, str, str]] | None = None, *,
                 by_name: KeyIndex | None = None, by_qualified: tuple[KeyIndex, ...] | None = None,
                 by_written_name: KeyIndex | None = None,
                 name_tables: Callable[[], dict] | None = None) -> None:
        """`keys`: per row, lower(name) and the folded qualified and fq names (from SQL);
        or the resident indexes of those keys and of the names as written (`by_name`,
        `by_qualified`, `by_written_name`; `name_tables()`: the resident `names` structure,
        read on the first subtoken or fuzzy search)."""
        if by_name is None or by_qualified is None:
            names, qualified, fq = zip(*keys) if rows else ((), (), ())
            other = [i for i, (q, f) in enumerate(zip(qualified, fq)) if f != q]
            by_name = KeyIndex(KeyIndex.build(list(names)))
            by_qualified = (KeyIndex(KeyIndex.build([*qualified, *(fq[i] for i in other)],
                                                    [*range(len(qualified)), *other])),)
        self.rows = rows
        self.by_name: Mapping[str, list[int]] = _RowLists(by_name)
        self.by_qualified: Mapping[str, list[int]] = _RowLists(*by_qualified)
        self._name_keys = by_name
        self._written = by_written_name
        self._lengths: tuple[list[int], list[int], StringColumn] | None = None
        self._name_tables = name_tables
        self._subtokens: tuple[StringColumn, StringColumn] | None = None
        self._token_spans: dict[str, tuple[int, int]] = {}
        self._trigrams = None  # (keys, names) columns and the names' Arrow array

    @property
    def names(self) -> list[str]:
        """Every distinct lower-cased name, sorted."""
        import pyarrow.compute as pc

        return pc.unique(self._name_keys.key_array).to_pylist()

    def _by_length(self) -> tuple[list[int], list[int], StringColumn]:
        """(lengths, where each length's names start, the names sorted by length then name)."""
        if self._lengths is None:
            import numpy as np
            import pyarrow as pa
            import pyarrow.compute as pc

            distinct = pc.unique(self._name_keys.key_array)
            table = pa.table({"n": pc.utf8_length(distinct), "name": distinct})
            table = table.take(pc.sort_indices(table, [("n", "ascending"), ("name", "ascending")]))
            sizes = table.column("n").to_numpy()
            starts = np.flatnonzero(np.diff(sizes, prepend=-1)) if len(sizes) else np.zeros(0, int)
            self._lengths = (sizes[starts].tolist(), [*starts.tolist(), len(sizes)],
                             StringColumn(table.column("name")))
        return self._lengths

    def exact_qualified(self, query: str) -> list[int]:
        return list(self.by_qualified.get(fold_qualified(query), ()))

    def qualified_suffix(self, query: str) -> list[int]:
        """Symbols whose qualified name ends with the dotted `query` (`path.join`)."""
        key = fold_qualified(query)
        last = key.rsplit(".", 1)[-1]
        out = []
        for i in self.by_name.get(last, ()):
            r = self.rows[i]
            for q in (r.qualified_name, r.fq_name):
                if fold_qualified(q).endswith("." + key):
                    out.append(i)
                    break
        return out

    def exact_name(self, name: str) -> list[int]:
        return list(self.by_name.get(name.lower(), ()))

    def prefix(self, prefix: str, cap: int = 300) -> list[str]:
        """Distinct lower-cased names starting with `prefix`, shortest first, at most `cap`."""
        p = prefix.lower()
        out: list[str] = []
        keys = self._name_keys.keys  # sorted: the names starting with p follow bisect_left(p)
        first = bisect.bisect_left(keys, p)
        if first == len(keys) or not keys[first].startswith(p):
            return out  # none (a query in words): the by-length table is not built for it
        lengths, starts, names = self._by_length()
        for k, length in enumerate(lengths):
            if length < len(p):
                continue
            i, end = bisect.bisect_left(names, p, starts[k], starts[k + 1]), starts[k + 1]
            while i < end and (name := names[i]).startswith(p):
                out.append(name)
                if len(out) >= cap:
                    return out
                i += 1
        return out

    def subtoken_names(self, tokens: list[str]) -> list[str]:
        """Distinct names whose sub-tokens include every token (camelCase/snake_case parts)."""
        if self._subtokens is None:
            self._subtokens = self._pairs("subtokens", lambda: subtoken_table(self._original_names()))
        keys, names = self._subtokens
        spans = sorted((self._subtoken_span(t) for t in tokens), key=lambda s: s[1] - s[0])
        if not spans:
            return []
        lo, hi = spans[0]
        found = {names[i] for i in range(lo, hi)}
        for lo, hi in spans[1:]:  # the rarest token's names, kept when every other token has them
            if not found:
                break
            found = {n for n in found if (j := bisect.bisect_left(names, n, lo, hi)) < hi and names[j] == n}
        return sorted(found, key=lambda n: (len(n), n))

    def _pair_table(self, part: str, build: Callable):
        """A (key, name) table of the resident `names` structure (or `build()` without one)."""
        return self._name_tables()[part] if self._name_tables is not None else build()

    def _pairs(self, part: str, build: Callable) -> tuple[StringColumn, StringColumn]:
        table = self._pair_table(part, build)
        return StringColumn(table.column("key")), StringColumn(table.column("name"))

    def _subtoken_span(self, token: str) -> tuple[int, int]:
        """Where `token`'s names lie in the sub-token table (names sorted within it), memoised:
        a report-length query asks for a thousand tokens, most of them again."""
        span = self._token_spans.get(token)
        if span is None:
            span = self._subtokens[0].span(token)
            if len(self._token_spans) < 1 << 16:
                self._token_spans[token] = span
        return span

    def _original_names(self) -> set[str]:
        """Every distinct name as written (not lower-cased)."""
        if self._written is not None:
            import pyarrow.compute as pc

            return set(pc.unique(self._written.key_array).to_pylist())
        return {r.name for r in self.rows}

    def fuzzy_names(self, query: str, max_distance: int, cap: int = 50) -> list[tuple[str, int]]:
        """Distinct names within `max_distance` edits (transpositions count one), closest first.

        Candidates share enough padded trigrams with the query (one edit changes at most four,
        counting a transposition) and have a length within `max_distance`.
        """
        q = query.lower()
        if self._trigrams is None:
            table = self._pair_table("trigrams", lambda: trigram_table(set(self.names)))
            self._trigrams = (StringColumn(table.column("key")), whole(table.column("name")))
        keys, names = self._trigrams

        def span(key: str) -> range:
            return range(*keys.span(key))

        lengths = range(max(len(q) - max_distance, 1), len(q) + max_distance + 1)
        postings = {g: [span(trigram_key(g, n)) for n in lengths] for g in trigrams(q)}
        # The rarest grams only: the q-gram bound holds for any subset of the query's grams.
        grams = sorted(postings, key=lambda g: sum(map(len, postings[g])))[:MAX_FUZZY_GRAMS]
        need = max(1, len(grams) - 4 * max_distance)
        counts: Counter[str] = Counter()
        for g in grams:
            for rows in postings[g]:
                if rows:  # a slice read by Arrow at once: ~20x faster than name by name
                    counts.update(names.slice(rows.start, len(rows)).to_pylist())
        ranked = sorted((kv for kv in counts.items() if kv[1] >= need and kv[0] != q),
                        key=lambda kv: -kv[1])[:cap * 8]
        out = [(name, d) for name, _ in ranked
               if (d := damerau_levenshtein(q, name, max_distance)) <= max_distance]
        out.sort(key=lambda nd: (nd[1], len(nd[0]), nd[0]))
        return out[:cap]
