"""BM25 full-text search over symbols, chunks and doc sections, computed in DuckDB SQL from
the per-shard postings and the per-manifest statistics (docs, term_df, corpus).

Ranking: documents matching more distinct query terms first (coordination), then BM25
(ranking/bm25.py). So a document holding every query term never ranks below a copy of
it lacking one, whatever the length normalisation does. The reported score is
`matched_terms + bm25 / (1 + bm25)`, monotonic in that order.
"""

from __future__ import annotations

from typing import NamedTuple

from ..errors import InvalidParameter
from .doctable import chunk_docs, docs_by_key
from .filters import FileFilter, make_filter
from .index import IndexView, sql_literals
from .intent import classify_intent
from .ranking.bm25 import bm25_sql
from ..model import COMPLETE, SearchHit, SearchResponse
from .retrieval import Candidates, SearchRequest
from .sourcetext import file_lines, snippet
from .symbol_table import resident_table
from .terms import chunk_terms

DOC_KINDS = ("s", "c")  # s: symbol, c: chunk (code/text window or doc section)

# The postings of the query's terms, which `bm25_sql` scores (df from this same scan). Terms are
# inlined as literals (tokenizer output: [a-z0-9_] only) so DuckDB prunes row groups when
# the postings are sorted by term: `term_postings(term, path, doc_kind, doc, tf, length)`
# ordered by term, when the assembly provides it, is read instead of postings JOIN docs.
_POSTINGS_SORTED = """SELECT path, doc_kind, doc, term, tf, length FROM term_postings
  WHERE term IN ({terms})"""
_POSTINGS_JOINED = """SELECT p.path, p.doc_kind, p.doc, p.term, p.tf, d.length
  FROM postings p JOIN docs d USING (path, doc_kind, doc) WHERE p.term IN ({terms})"""
_SORTED_COLUMNS = {"term", "path", "doc_kind", "doc", "tf", "length"}


_SYMBOL_DOCS_SQL = """
SELECT s.path, s.ordinal, s.symbol_id, s.stable_id, s.kind, s.name, {fq}, s.language,
       coalesce(s.signature, ''), s.start_line, s.end_line
FROM symbols s {join} WHERE {where} ORDER BY s.path, s.ordinal
"""
def bm25_rows(view: IndexView, terms: list[str], *, filt: FileFilter | None = None,
              doc_kinds: tuple[str, ...] = DOC_KINDS, limit: int = 10) -> list[tuple]:
    """(path, doc_kind, doc, matched_terms, bm25, total) rows, best first."""
    if not terms or not view.has_table("docs"):
        return []
    where, params = (filt or FileFilter()).where("p.path")
    sorted_ = _SORTED_COLUMNS <= view.tables.get("term_postings", set())
    postings = (_POSTINGS_SORTED if sorted_ else _POSTINGS_JOINED).format(terms=sql_literals(terms))
    n_docs, avgdl = corpus_stats(view)
    sql = bm25_sql(postings, kinds=sql_literals(doc_kinds), where=where, n_docs=n_docs, avgdl=avgdl, limit=limit)
    return view.sql(sql, params)


def corpus_stats(view: IndexView) -> tuple[int, float]:
    """(n_docs, avgdl) of the view's manifest, memoised on the view."""
    got = view.cache.get("bm25_corpus")
    if got is None:
        got = view.cache["bm25_corpus"] = tuple(view.sql("SELECT n_docs, avgdl FROM corpus")[0])
    return got


class SymbolDoc(NamedTuple):
    """A symbol's row as _SYMBOL_DOCS_SQL selects it: storage's start/end lines by name."""

    path: str
    ordinal: int
    symbol_id: str
    stable_id: str | None
    kind: str
    name: str
    fq_name: str
    language: str
    signature: str
    line_start: int
    line_end: int


def _symbol_docs(view: IndexView, keys: list[tuple[str, int]]) -> dict[tuple[str, int], SymbolDoc]:
    named = view.has_table("symbol_names") and view.has_column("symbol_names", "fq_name")
    sql = _SYMBOL_DOCS_SQL.replace("{fq}", "coalesce(n.fq_name, s.qualified_name)" if named
                                   else "s.qualified_name").replace(
        "{join}", "LEFT JOIN symbol_names n USING (symbol_id)" if named else "")
    return docs_by_key(view, sql, "s", keys, _resident_symbols, SymbolDoc)


def _resident_symbols(view: IndexView, keys: list[tuple[str, int]]) -> tuple[dict, list]:
    """Symbol rows from the view's resident symbol table (long-lived views), and keys left."""
    table = resident_table(view)
    if table is None:
        return {}, keys
    found, missing = {}, []
    rows = table.at_many(keys)
    for path, ordinal in keys:
        row = rows.get((path, ordinal))
        if row is None:
            missing.append((path, ordinal))
            continue
        r = table.rows[row]
        found[(path, ordinal)] = SymbolDoc(path, ordinal, r.symbol_id, r.stable_id, r.kind, r.name, r.fq_name,
                                           r.language, r.signature, r.line_start, r.line_end)
    return found, missing


def _hits(view: IndexView, rows: list[tuple], terms: list[str], windows: bool = True) -> list[SearchHit]:
    """Hits of BM25 rows; `windows` False: no snippets (`search` cuts them, for the few hits
    it shows, with `sourcetext.window_snippets`: reading the text of every candidate's file
    here was ~20% of a one-shot search)."""
    syms = _symbol_docs(view, [(r[0], r[2]) for r in rows if r[1] == "s"])
    chunks = chunk_docs(view, [(r[0], r[2]) for r in rows if r[1] == "c"])
    lines = file_lines(view, [r[0] for r in rows]) if windows else {}
    wanted = set(terms) if windows else None
    hits = []
    for path, kind, doc, matched, bm25, _ in rows:
        score = matched + bm25 / (1.0 + bm25)
        text = lines.get(path)
        if kind == "s" and (path, doc) in syms:
            sym = syms[(path, doc)]
            hits.append(SearchHit(
                path=path, line_start=sym.line_start, line_end=sym.line_end, kind=sym.kind, name=sym.name,
                qualified_name=sym.fq_name, symbol_id=sym.symbol_id, symbol_stable_id=sym.stable_id, score=score,
                snippet=snippet(text, sym.line_start, sym.line_end, wanted) if text else "",
                result_type="symbol", result_id=sym.symbol_id, language=sym.language, signature=sym.signature,
                match="bm25"))
        elif kind == "c" and (path, doc) in chunks:
            c = chunks[(path, doc)]
            hits.append(SearchHit(
                path=path, line_start=c.line_start, line_end=c.line_end, kind=c.kind, name=c.heading,
                qualified_name=c.heading, symbol_id=None, symbol_stable_id=None, score=score,
                snippet=snippet(text, c.line_start, c.line_end, wanted) if text else "",
                result_type="doc" if c.kind == "doc_section" else "chunk", result_id=f"{path}#c{doc}",
                language=c.language, match="bm25"))
    return hits


def text_candidates(view: IndexView, query: str, *, filt: FileFilter | None = None,
                    doc_kinds: tuple[str, ...] = DOC_KINDS, limit: int = 10,
                    windows: bool = True) -> Candidates:
    terms = chunk_terms(query)
    rows = bm25_rows(view, terms, filt=filt, doc_kinds=doc_kinds, limit=limit)
    return Candidates(_hits(view, rows, terms, windows), rows[0][5] if rows else 0, COMPLETE)


def search_text(view: IndexView, query: str, *, language: str | None = None,
                path: str | None = None, extension: str | None = None,
                doc_kinds: tuple[str, ...] = DOC_KINDS, limit: int = 10) -> SearchResponse:
    """BM25-ranked documents (symbols "s", chunks and doc sections "c") for `query`."""
    if not chunk_terms(query):
        raise InvalidParameter(f"no searchable words in {query!r}")
    bad = set(doc_kinds) - set(DOC_KINDS)
    if bad:
        raise InvalidParameter(f"unknown document kinds {sorted(bad)}; use 's' and/or 'c'")
    cand = text_candidates(view, query, filt=make_filter(language, path, extension),
                           doc_kinds=doc_kinds, limit=limit)
    return SearchResponse(cand.hits, classify_intent(query), cand.total,
                          view.metadata(cand.completeness), "text")


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    return text_candidates(view, req.query, filt=req.file_filter(), limit=req.limit, windows=False)
