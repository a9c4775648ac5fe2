"""Symbol search: exact qualified name, name, prefix, sub-token and fuzzy matches, definitions
ranked before references.

Tiers, best first (score): exact qualified name (1.0), qualified suffix `path.join` (0.95),
exact name (0.9, 0.88 ignoring case), prefix (0.7-0.8), sub-tokens `parse response` ->
`parseResponse` (0.55-0.65), fuzzy typos (0.5 - 0.1 per edit; only when nothing better
matched, or with match="fuzzy"), references (0.3).
Within a tier, top-level definitions, functions/classes, non-test paths and short
qualified names come first.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..errors import InvalidParameter
from ..tokenize import split_identifier
from .filters import FileFilter, allowed_paths, kinds_for, make_filter
from .index import IndexView
from .intent import SYMBOL
from .names import NameIndex, SymbolRow
from .ref_table import RefTable
from ..model import COMPLETE, PARTIAL, SearchHit, SearchResponse
from .retrieval import Candidates, SearchRequest
from .sourcetext import file_lines, snippet
from .symbol_table import SymbolTable

MATCHES = ("auto", "exact", "prefix", "fuzzy")
_PRIMARY_KINDS = {"function", "method", "class", "struct", "interface", "trait", "enum", "type",
                  "module", "constructor"}
_SPLIT_QUERY = re.compile(r"[\s,;]+")


def _bonus(row: SymbolRow) -> float:
    b = 0.0
    b += 0.02 if row.top_level else 0.0
    b += 0.015 if row.kind in _PRIMARY_KINDS else 0.0
    b += 0.0 if row.in_tests else 0.01
    b -= min(row.qualified_name.count("."), 5) * 0.002
    return b


def _fuzzy_budget(query: str) -> int:
    n = len(query)
    return 0 if n < 4 else 1 if n < 7 else 2


class _Collector:
    """Ranked, de-duplicated symbol rows passing the filters."""

    def __init__(self, index: NameIndex, allowed: set[str] | None, kinds: tuple[str, ...] | None,
                 language: str | None) -> None:
        self.index = index
        self.allowed = allowed
        self.kinds = kinds
        self.language = language.lower() if language else None
        self.scored: dict[int, tuple[float, str]] = {}

    def ok(self, row: SymbolRow) -> bool:
        return ((self.allowed is None or row.path in self.allowed)
                and (self.kinds is None or row.kind in self.kinds)
                and (self.language is None or row.language.lower() == self.language))

    def add(self, ids, score: float, how: str) -> None:
        for i in ids:
            row = self.index.rows[i]
            if i in self.scored or not self.ok(row):
                continue
            self.scored[i] = (score + _bonus(row), how)

    def add_names(self, names, score_of, how: str, stop_at: int | None = None) -> None:
        for name in names:
            if stop_at is not None and len(self.scored) >= stop_at:
                break
            self.add(self.index.by_name.get(name, ()), score_of(name), how)


def _collect(index: NameIndex, query: str, match: str, c: _Collector, limit: int) -> None:
    q = query.strip().removesuffix("()")
    qualified = index.exact_qualified(q)
    c.add([i for i in qualified if q in (index.rows[i].qualified_name, index.rows[i].fq_name)],
          1.0, "exact_qualified")
    c.add(qualified, 0.89, "exact_qualified_ignore_case")
    if any(sep in q for sep in (".", "::", "#", "->")):
        c.add(index.qualified_suffix(q), 0.95, "qualified_suffix")
        q = re.split(r"\.|::|#|->", q)[-1]
    exact = index.exact_name(q)
    c.add([i for i in exact if index.rows[i].name == q], 0.9, "exact")
    c.add(exact, 0.88, "exact_ignore_case")
    if match == "exact":
        return
    if len(q) >= 2:
        # shortest names first and they score highest: enough of them fill the page
        c.add_names(index.prefix(q), lambda n: 0.7 + 0.1 * len(q) / len(n), "prefix",
                    stop_at=len(c.scored) + 4 * limit)
    if match == "prefix":
        return
    tokens = [t for w in _SPLIT_QUERY.split(query) if w for t in split_identifier(w)]
    if len(tokens) > 1 or (tokens and match == "fuzzy"):
        c.add_names(index.subtoken_names(tokens),
                    lambda n: 0.55 + 0.1 * len(tokens) / max(len(split_identifier(n)), 1), "subtoken")
    budget = _fuzzy_budget(q) if not _SPLIT_QUERY.search(q) else 0
    if budget and (match == "fuzzy" or not c.scored):  # typos only when nothing else matched
        for name, dist in index.fuzzy_names(q, budget):
            c.add(index.by_name.get(name, ()), 0.5 - 0.1 * dist, "fuzzy")


def _hit(row: SymbolRow, score: float, how: str, lines: list[str] | None) -> SearchHit:
    snip = snippet(lines, row.line_start, row.line_end) if lines else ""
    return SearchHit(path=row.path, line_start=row.line_start, line_end=row.line_end, kind=row.kind,
                     name=row.name, qualified_name=row.fq_name or row.qualified_name,
                     symbol_id=row.symbol_id, symbol_stable_id=row.stable_id, score=score,
                     snippet=snip, result_type="symbol", result_id=row.symbol_id,
                     language=row.language, signature=row.signature, match=how)


def _reference_rows(view: IndexView, name: str, filt: FileFilter, limit: int) -> list[tuple]:
    """(path, language, kind, target, start_line, end_line) of uses of `name` (no dot)."""
    if view.keep_text_in_memory:  # a long-lived reader: see ref_table.py
        return RefTable.load(view).uses(name, allowed_paths(view, filt), limit)
    where, params = filt.where("r.path")
    return view.sql(f"""
        SELECT r.path, r.language, r.kind, r.target, r.start_line, r.end_line
        FROM refs r WHERE (r.target = ? OR ends_with(r.target, ?)) AND {where}
        ORDER BY r.path, r.start_line, r.ordinal LIMIT {int(limit)}""", [name, "." + name, *params])


def _reference_hits(view: IndexView, name: str, filt: FileFilter, limit: int) -> list[SearchHit]:
    """Uses of `name` (calls, imports, type references) from the refs table."""
    rows = _reference_rows(view, name, filt, limit)
    lines = file_lines(view, [r[0] for r in rows])
    return [SearchHit(path=p, line_start=ls, line_end=le, kind=kind, name=name, qualified_name=target,
                      symbol_id=None, symbol_stable_id=None, score=0.3,
                      snippet=snippet(lines[p], ls, le) if p in lines else "",
                      result_type="reference", result_id=f"{p}#ref:{ls}:{target}", language=lang,
                      match="reference")
            for p, lang, kind, target, ls, le in rows]


def symbol_candidates(view: IndexView, query: str, *, match: str = "auto", language: str | None = None,
                      kind: str | None = None, filt: FileFilter | None = None, limit: int = 10,
                      include_references: bool = True) -> Candidates:
    if match not in MATCHES:
        raise InvalidParameter(f"unknown match {match!r}; choose one of {', '.join(MATCHES)}")
    # Every file filter (roles too) through `allowed_paths`, but the language on each symbol
    # row: a file's language is not always its symbols' (embedded languages).
    filt = replace(filt or FileFilter(), language=None)
    index = SymbolTable.load(view).names
    c = _Collector(index, allowed_paths(view, filt), kinds_for(kind), language)
    _collect(index, query, match, c, limit)
    ranked = sorted(c.scored.items(), key=lambda kv: (-kv[1][0], index.rows[kv[0]].path,
                                                      index.rows[kv[0]].line_start))
    top = ranked[:limit]
    lines = file_lines(view, [index.rows[i].path for i, _ in top])
    hits = [_hit(index.rows[i], s, how, lines.get(index.rows[i].path)) for i, (s, how) in top]
    total = len(ranked)
    if include_references and len(hits) < limit and not kind:
        name = re.split(r"\.|::|#|->", query.strip().removesuffix("()"))[-1]
        refs = _reference_hits(view, name, replace(filt, language=language), limit - len(hits))
        hits.extend(refs)
        total += len(refs)
    completeness = COMPLETE if index.rows or view.count("files") == 0 else PARTIAL
    return Candidates(hits, total, completeness)


def find_symbols(view: IndexView, name: str, *, match: str = "auto", language: str | None = None,
                 kind: str | None = None, path: str | None = None, extension: str | None = None,
                 limit: int = 10, include_references: bool = True) -> SearchResponse:
    """Definitions (then references) whose name fits `name`.

    match: exact (qualified name or name), prefix, fuzzy (typos, sub-tokens), or auto (all,
    fuzzy only when the better tiers leave room). Filters: language, kind, path glob, extension.
    """
    if not name.strip():
        raise InvalidParameter("empty symbol name")
    cand = symbol_candidates(view, name, match=match, language=language, kind=kind,
                             filt=make_filter(None, path, extension), limit=limit,
                             include_references=include_references)
    return SearchResponse(cand.hits, SYMBOL, cand.total, view.metadata(cand.completeness), "symbol")


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    """Definitions only: in fused modes, uses of a name come through the text retriever, and
    the refs scan would cost more than the whole name lookup."""
    return symbol_candidates(view, req.query, language=req.language, kind=req.kind,
                             filt=req.file_filter(), limit=req.limit,
                             include_references=req.mode == "symbol")
