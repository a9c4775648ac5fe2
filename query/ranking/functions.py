"""Functions, not only files: the functions and methods to look at for a task, ranked.

Agents edit functions. A task's functions are found inside the files the file ranking puts
first: each function or method of those files scores its file's share of the ranking plus
its own BM25 over the query (name, signature, doc and body, the symbol postings the index
keeps), so a strong function of the second file can pass a weak one of the first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...model import SearchHit
from ..fulltext import corpus_stats
from ..index import IndexView, sql_literals
from ..terms import query_terms
from .bm25 import score_postings

FUNCTION_KINDS = ("function", "method", "constructor", "destructor")
SYMBOL_WEIGHT = 0.6  # a function's own BM25 (the best of the query = 1) beside its file's score
PER_FILE = 3  # functions of one file at most, so the answer spans files

_POSTINGS_SQL = """SELECT path, doc, term, tf, length FROM term_postings
WHERE term IN ({terms}) AND doc_kind = 's' AND path IN (SELECT unnest(?::VARCHAR[]))"""
_FUNCTIONS_SQL = """SELECT path, ordinal, symbol_id, stable_id, kind, name, qualified_name, language,
       coalesce(signature, ''), start_line, end_line FROM symbols
WHERE path IN (SELECT unnest(?::VARCHAR[])) AND kind IN ({kinds})"""


def combine(files: Sequence[tuple[str, float]], functions: Sequence[tuple[str, int]],
            own: Mapping[tuple[str, int], float], per_file: int = PER_FILE) -> list[tuple[tuple[str, int], float]]:
    """Functions best first (pure): file score (the best file = 1) plus SYMBOL_WEIGHT times the
    function's own BM25 (the best function = 1); functions with no term of the query are left
    out; at most `per_file` of a file; ties by path and position."""
    ftop = max((s for _, s in files), default=0.0) or 1.0
    file_score = {p: s / ftop for p, s in files}
    stop = max(own.values(), default=0.0) or 1.0
    scored = sorted(((key, file_score.get(key[0], 0.0) + SYMBOL_WEIGHT * own[key] / stop)
                     for key in functions if own.get(key, 0.0) > 0), key=lambda kv: (-kv[1], kv[0]))
    taken: dict[str, int] = {}
    out = []
    for key, score in scored:
        if taken.get(key[0], 0) < per_file:
            taken[key[0]] = taken.get(key[0], 0) + 1
            out.append((key, score))
    return out


def rank_functions(view: IndexView, query: str, files: Sequence[tuple[str, float]], limit: int) -> list[SearchHit]:
    """The functions and methods of the ranked `files` for `query`, best first."""
    weights = query_terms(query).weights
    paths = [p for p, _ in files]
    if not weights or not paths or not view.has_table("symbols"):
        return []
    rows = view.sql(_POSTINGS_SQL.format(terms=sql_literals(weights)), [paths])
    n_docs, avgdl = corpus_stats(view)
    own = score_postings([(p, int(d), t, float(tf), float(n)) for p, d, t, tf, n in rows], weights, int(n_docs), float(avgdl))
    syms = {(r[0], int(r[1])): r for r in view.sql(_FUNCTIONS_SQL.format(kinds=sql_literals(FUNCTION_KINDS)), [paths])}
    hits = []
    for key, score in combine(files, list(syms), own)[:limit]:
        path, _, sid, stable, kind, name, fq, lang, sig, ls, le = syms[key]
        hits.append(SearchHit(path=path, line_start=ls, line_end=le, kind=kind, name=name, qualified_name=fq,
                              symbol_id=sid, symbol_stable_id=stable, score=score, snippet="",
                              result_type="symbol", result_id=sid, language=lang, signature=sig,
                              match="function_rank"))
    return hits
