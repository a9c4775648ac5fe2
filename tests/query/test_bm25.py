"""The one BM25 (query/ranking/bm25.py): the SQL DuckDB runs for the chunk retriever and the
Python scorer the file, function and history rankings use give the same scores."""

from __future__ import annotations

import math

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.query.ranking.bm25 import FILE_B, bm25_sql, bm25_term, idf, score_postings

TERMS = ["alpha", "beta", "gamma", "delta", "eps"]


@st.composite
def corpora(draw):
    """Documents as {term: tf} (each also holding words that are not query terms), and a query."""
    docs = []
    for _ in range(draw(st.integers(1, 12))):
        tf = draw(st.dictionaries(st.sampled_from(TERMS), st.integers(1, 9), max_size=len(TERMS)))
        docs.append((tf, sum(tf.values()) + draw(st.integers(0, 40))))
    query = draw(st.lists(st.sampled_from(TERMS), min_size=1, max_size=4, unique=True))
    return docs, query


def _sql_scores(docs: list[tuple[dict[str, int], int]], query: list[str]) -> dict[tuple[str, int], tuple[int, float]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE term_postings (path VARCHAR, doc_kind VARCHAR, doc INTEGER, term VARCHAR, "
                "tf INTEGER, length INTEGER)")
    rows = [(f"f{n % 3}.py", "c", n, term, tf, length) for n, (tfs, length) in enumerate(docs)
            for term, tf in tfs.items()]
    if rows:
        con.executemany("INSERT INTO term_postings VALUES (?, ?, ?, ?, ?, ?)", rows)
    terms = ", ".join(f"'{t}'" for t in query)
    postings = f"SELECT path, doc_kind, doc, term, tf, length FROM term_postings WHERE term IN ({terms})"
    avgdl = sum(length for _, length in docs) / len(docs)
    sql = bm25_sql(postings, kinds="'c'", where="true", n_docs=len(docs), avgdl=avgdl, limit=1000)
    return {(path, doc): (matched, bm25) for path, _, doc, matched, bm25, _ in con.execute(sql).fetchall()}


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(corpora())
def test_sql_and_python_bm25_agree(case):
    """Same documents, same terms and the same score (to rounding: DuckDB sums in its own
    order) from the SQL and from `score_postings`, df counted over the query's postings."""
    docs, query = case
    rows = [(f"f{n % 3}.py", n, term, float(tf), float(length)) for n, (tfs, length) in enumerate(docs)
            for term, tf in tfs.items() if term in query]
    avgdl = sum(length for _, length in docs) / len(docs)
    python = score_postings(rows, dict.fromkeys(query, 1.0), len(docs), avgdl)
    sql = _sql_scores(docs, query)
    assert set(sql) == set(python)
    for key, (matched, score) in sql.items():
        assert matched == sum(1 for t in query if t in docs[key[1]][0])
        assert math.isclose(score, python[key], rel_tol=1e-12, abs_tol=1e-12), (key, score, python[key])


def test_bm25_term_saturates_and_normalises():
    i = idf(100, 3)
    assert bm25_term(2, 10, 10, i) > bm25_term(1, 10, 10, i)
    assert bm25_term(1, 5, 10, i) > bm25_term(1, 20, 10, i)
    assert bm25_term(1000, 10, 10, i) < i * 2.2
    assert bm25_term(0, 10, 10, i) == 0.0 and idf(100, 100) > 0 and not math.isnan(idf(1, 1))


@given(st.floats(0.1, 50), st.floats(1, 500), st.floats(1, 300), st.integers(1, 1000), st.floats(0, 3))
def test_a_term_weight_scales_its_score_and_a_lower_b_normalises_less(tf, dl, avgdl, n_docs, weight):
    i = idf(n_docs + 1, n_docs)
    assert math.isclose(bm25_term(tf, dl, avgdl, i, weight=weight), weight * bm25_term(tf, dl, avgdl, i),
                        rel_tol=1e-12, abs_tol=1e-300)
    files, chunks = bm25_term(tf, dl, avgdl, i, b=FILE_B), bm25_term(tf, dl, avgdl, i)
    assert files >= chunks * (1 - 1e-12) if dl >= avgdl else files <= chunks * (1 + 1e-12)
