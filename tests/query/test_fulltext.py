"""BM25 over symbols, chunks and doc sections, and its invariant under term removal."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.query import open_index, search_text
from codeagent.query.terms import STOPWORDS, chunk_terms

from .conftest import build_repo


def test_symbols_chunks_and_doc_sections_are_searched(poly):
    resp = search_text(poly, "token bucket rate limiter", limit=10)
    kinds = {(h.result_type, h.path) for h in resp.results}
    assert ("symbol", "app/server.py") in kinds
    assert ("doc", "docs/guide.md") in kinds
    doc = next(h for h in resp.results if h.result_type == "doc")
    assert doc.name == "Guide > Rate limiting"
    assert resp.total_count >= len(resp.results)


def test_identifier_aware_terms_match_sub_words(poly):
    resp = search_text(poly, "http response", limit=20)
    got = {h.name for h in resp.results if h.result_type == "symbol"}
    assert {"parse_http_response", "parseHttpResponse"} <= got


def test_doc_kind_and_path_filters(poly):
    only_chunks = search_text(poly, "ConnectionResetError", doc_kinds=("c",), limit=20)
    assert only_chunks.results and all(h.result_type in ("chunk", "doc") for h in only_chunks.results)
    assert {h.path for h in search_text(poly, "ConnectionResetError", path="*.txt").results} == {"notes.txt"}
    assert {h.path for h in search_text(poly, "ConnectionResetError", language="markdown").results} == {"docs/guide.md"}


def test_scores_descend(poly):
    scores = [h.score for h in search_text(poly, "rate limit request", limit=20).results]
    assert scores == sorted(scores, reverse=True)


def test_chunk_terms_drop_stop_words_unless_nothing_else():
    assert chunk_terms("where is the rate limiter") == ["rate", "limiter"]
    assert chunk_terms("the") == ["the"]
    assert chunk_terms("parseHTTPResponse") == ["parsehttpresponse", "parse", "http", "response"]


WORD = st.text(alphabet="bcdfghjklmnpqrstvwxz", min_size=3, max_size=7).filter(
    lambda w: w not in STOPWORDS)


@st.composite
def doc_pairs(draw):
    """Documents (word lists) with a query drawn from each and one query term to remove."""
    pairs = []
    for _ in range(draw(st.integers(1, 4))):
        words = draw(st.lists(WORD, min_size=2, max_size=40))
        query = draw(st.lists(st.sampled_from(words), min_size=2, max_size=4, unique=True))
        removed = draw(st.sampled_from(query))
        pairs.append((words, query, removed))
    filler = draw(st.lists(st.lists(WORD, min_size=1, max_size=30), max_size=4))
    return pairs, filler


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(doc_pairs())
def test_all_terms_rank_at_least_as_high_as_a_copy_missing_one(tmp_path_factory, case):
    pairs, filler = case
    files = {}
    for n, (words, _, removed) in enumerate(pairs):
        files[f"p{n}/a.txt"] = " ".join(words) + "\n"
        files[f"p{n}/b.txt"] = " ".join(w for w in words if w != removed) + "\n"
    for n, words in enumerate(filler):
        files[f"filler{n}.txt"] = " ".join(words) + "\n"
    repo = build_repo(tmp_path_factory.mktemp("bm25") / "repo", files)
    with open_index(repo.path, ref="main") as view:
        for n, (words, query, removed) in enumerate(pairs):
            resp = search_text(view, " ".join(query), path=f"p{n}/*", limit=10)
            score = {h.path: h.score for h in resp.results}
            a, b = f"p{n}/a.txt", f"p{n}/b.txt"
            assert a in score, (query, resp.results)
            assert score[a] >= score.get(b, float("-inf")), (query, removed, score)
            order = [h.path for h in resp.results]
            assert b not in order or order.index(a) < order.index(b)


def test_sorted_term_postings_give_the_same_ranking(tmp_path):
    """When the assembly provides `term_postings` (postings + document length, sorted by
    term), BM25 reads it instead of joining postings with docs, with identical results."""
    from codeagent.query.fulltext import bm25_rows

    from .conftest import POLY

    repo = build_repo(tmp_path / "repo", POLY)
    queries = [["rate", "limiter"], ["http", "response", "parse"], ["connectionreseterror"], ["token"]]
    with open_index(repo.path, ref="main") as view:
        assert "term_postings" in view.tables
        after = [bm25_rows(view, q, limit=20) for q in queries]
        sorted_table = view.tables.pop("term_postings")  # force the postings JOIN docs path
        try:
            before = [bm25_rows(view, q, limit=20) for q in queries]
        finally:
            view.tables["term_postings"] = sorted_table
    for b, a in zip(before, after):
        assert [r[:4] for r in a] == [r[:4] for r in b]
        assert [round(r[4], 9) for r in a] == [round(r[4], 9) for r in b]


def test_long_lived_view_answers_like_a_one_shot_view(poly_repo):
    """The resident symbol and chunk tables give the same hits as the SQL lookups."""
    with open_index(poly_repo.path, ref="main") as disk, open_index(poly_repo.path, ref="main") as mem:
        mem.keep_text_in_memory = True
        for query in ["token bucket rate limiter", "http response", "ConnectionResetError", "helper value"]:
            for kinds in (("s", "c"), ("s",), ("c",)):
                a = search_text(disk, query, doc_kinds=kinds, limit=20)
                b = search_text(mem, query, doc_kinds=kinds, limit=20)
                assert [h.to_dict() for h in a.results] == [h.to_dict() for h in b.results]
                assert a.total_count == b.total_count
        assert "symbol_table" in mem.cache
        assert sum(isinstance(k, tuple) and k[0] == "doc_table" for k in mem.cache) == 1


def test_doc_table_reads_keys_it_lacks_with_sql(poly_repo):
    from codeagent.query.doctable import doc_table
    from codeagent.query.doctable import chunk_docs

    with open_index(poly_repo.path, ref="main") as mem:
        mem.keep_text_in_memory = True
        table = doc_table(mem, "SELECT path, ordinal FROM chunks ORDER BY path, ordinal")
        found, missing = table.rows([("app/server.py", 0), ("app/server.py", 10_000), ("nope.py", 0)])
        assert list(found) == [("app/server.py", 0)]
        assert missing == [("app/server.py", 10_000), ("nope.py", 0)]
        assert chunk_docs(mem, [("nope.py", 0)]) == {}
