"""The one BM25: its constants, its idf, the Python scorer and the SQL that DuckDB runs.

Every BM25 of the read side is this one: the chunk and symbol retriever (`fulltext.py`, in
SQL: `bm25_sql`), the file ranker's body field (`files.py`), a function's own score
(`functions.py`), the history field (`history.py`) and the fleet-wide file score (`org.py`)
(in Python: `idf` and `bm25_term`). tests/query/test_bm25.py holds the SQL and the Python
scores equal on random corpora.

One term's contribution: idf(df) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)),
with Lucene's idf ln(1 + (N - df + 0.5) / (df + 0.5)) (always positive).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

K1 = 1.2
B = 0.75
# Less length normalisation for whole files than for chunks: a task's file is more often a
# long, central one (dev set: b 0.75 -> 0.5 with the name field, pooled MRR@10 0.614 -> 0.631
# on six repositories).
FILE_B = 0.5


def idf(n_docs: int, df: int) -> float:
    """BM25 idf, Lucene's form: always positive."""
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def bm25_term(tf: float, doc_len: float, avgdl: float, term_idf: float,
              k1: float = K1, b: float = B, weight: float = 1.0) -> float:
    """One term's BM25 contribution, times the term's query `weight` (applied first, so a
    weighted sum rounds as the file ranker's always has)."""
    if tf <= 0:
        return 0.0
    norm = k1 * (1.0 - b + b * doc_len / avgdl) if avgdl > 0 else k1
    return weight * term_idf * tf * (k1 + 1.0) / (tf + norm)


def score_postings(rows: Sequence[tuple[str, int, str, float, float]], weights: Mapping[str, float],
                   n_docs: int, avgdl: float) -> dict[tuple[str, int], float]:
    """(path, doc) -> weighted BM25 over postings rows (path, doc, term, tf, doc length) (pure);
    df counted over `rows` (one posting per document and term), as `bm25_sql` counts it."""
    df: dict[str, int] = {}
    for _, _, term, _, _ in rows:
        df[term] = df.get(term, 0) + 1
    out: dict[tuple[str, int], float] = {}
    for path, doc, term, tf, length in sorted(rows):
        score = weights.get(term, 0.0) * bm25_term(tf, length, avgdl or 1.0, idf(n_docs, df[term]))
        out[(path, doc)] = out.get((path, doc), 0.0) + score
    return out


# df comes from the same scan of the query terms' postings (one posting per document and
# term), so term_df may be a table or a view without costing a second scan. The corpus
# statistics (n_docs, avgdl) are the manifest's, inlined; the total is counted over the
# materialized scores (cheaper than a window over them). The per-term expression is
# `bm25_term` with `idf` inlined.
_BM25_SQL = """
WITH p AS ({postings}),
df AS (SELECT term, count(*) AS df FROM p GROUP BY term),
scored AS MATERIALIZED (
  SELECT p.path, p.doc_kind, p.doc, count(*) AS matched,
         sum(ln(1 + ({n_docs}::BIGINT - df.df + 0.5) / (df.df + 0.5)) * p.tf * ({k1} + 1)
             / (p.tf + {k1} * (1 - {b} + {b} * p.length / {avgdl}::DOUBLE))) AS bm25
  FROM p JOIN df USING (term)
  WHERE p.doc_kind IN ({kinds}) AND {where}
  GROUP BY ALL)
SELECT path, doc_kind, doc, matched, bm25, (SELECT count(*) FROM scored) AS total FROM scored
ORDER BY matched DESC, bm25 DESC, path, doc_kind, doc LIMIT {limit}
"""


def bm25_sql(postings: str, *, kinds: str, where: str, n_docs: int, avgdl: float, limit: int) -> str:
    """The SELECT of (path, doc_kind, doc, matched terms, bm25, total) rows, best first:
    `postings` a SELECT of (path, doc_kind, doc, term, tf, length), `kinds` the SQL list of
    document kinds, `where` a condition on `p.path`."""
    return _BM25_SQL.format(postings=postings, kinds=kinds, k1=K1, b=B, where=where, limit=int(limit),
                            n_docs=int(n_docs), avgdl=repr(float(avgdl)))
