"""The faster search paths answer exactly what the plain ones answer: the file postings grouped
with numpy, the file BM25 with its per-term parts hoisted, the history postings in memory,
the path retriever's skipped round trip and the query analysis kept for one search change no
row, no order and no bit of a score."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, SearchRequest, open_index, search
from codeagent.query.filepostings import FilePostings
from codeagent.query.paths import path_candidates
from codeagent.query.ranking.bm25 import FILE_B, K1, bm25_term, idf
from codeagent.query.ranking.files import NAME_WEIGHT, FileEvidence, bm25_file_scores, word_tokens_of_name
from codeagent.query.ranking.history import history_scores
from codeagent.query.terms import chunk_terms, query_terms
from repo_helpers import GitRepo

TERMS = ["alpha", "beta", "gamma", "delta", "parse", "header", "zeta"]
PATHS = ["a.py", "pkg/beta.py", "pkg/parse_header.py", "z/gamma_delta.go", "docs/alpha.md"]


def _reference_rows(fp: FilePostings, terms, allowed) -> list[tuple]:
    """FilePostings.rows as it was: a dict grouping, row by row."""
    per_path: dict[int, tuple[list, list, float]] = {}
    for term in dict.fromkeys(terms):
        for i in range(len(fp.terms)):
            if fp.terms[i] == term:
                got = per_path.setdefault(int(fp.path_ids[i]), ([], [], fp.length[i].item()))
                got[0].append(term)
                got[1].append(float(fp.tf[i]))
    return [(fp.paths[pid], float(dl), ts, tfs) for pid, (ts, tfs, dl) in per_path.items()
            if not np.isnan(dl) and (allowed is None or fp.paths[pid] in allowed)]


@settings(max_examples=200, deadline=None)
@given(cells=st.dictionaries(st.tuples(st.sampled_from(TERMS), st.sampled_from(PATHS)),
                             st.integers(1, 9), max_size=30),
       no_length=st.sets(st.sampled_from(PATHS), max_size=1),
       query=st.lists(st.sampled_from(TERMS + ["absent"]), min_size=1, max_size=6),
       allowed=st.none() | st.sets(st.sampled_from(PATHS)),
       encoding=st.sampled_from(["plain", "sorted dictionary", "unsorted dictionary"]))
def test_grouped_file_postings_are_the_row_by_row_ones(cells, no_length, query, allowed, encoding) -> None:
    keys = sorted(cells)  # by term, then path, as the resident array is
    lengths = {p: None if p in no_length else 10 * (i + 1) for i, p in enumerate(PATHS)}
    terms = pa.array([t for t, _ in keys], pa.string())
    if encoding == "sorted dictionary":  # as the assembly writes it: codes found by binary search
        terms = terms.dictionary_encode()
    elif encoding == "unsorted dictionary":  # another writer's order: the plain search
        order = sorted(set(terms.to_pylist()), reverse=True)
        terms = pa.DictionaryArray.from_arrays(pa.array([order.index(t) for t in terms.to_pylist()], pa.int32()),
                                               pa.array(order, pa.string()))
    table = pa.table({"term": terms,
                      "path": pa.array([p for _, p in keys], pa.string()).dictionary_encode(),
                      "tf": pa.array([cells[k] for k in keys], pa.int32()),
                      "dl": pa.array([lengths[p] for _, p in keys], pa.int32())})
    fp = FilePostings(parts={"rows": table})
    distinct = len(set(terms.to_pylist()))
    assert (fp._codes is not None) == (encoding == "sorted dictionary" or (encoding != "plain" and distinct < 2))
    got = fp.rows(query, allowed)
    assert got == _reference_rows(fp, query, allowed)
    assert all(type(dl) is float and all(type(tf) is float for tf in tfs) for _, dl, _, tfs in got)


def _reference_bm25(files, weights, n_docs, avgdl, df) -> dict[str, float]:
    """bm25_file_scores as it was: `bm25_term` and `idf` called for every (file, term)."""
    out = {}
    avgdl = avgdl or 1.0
    for f in files:
        s = 0.0
        name = set(word_tokens_of_name(f.path))
        for term, tf in sorted(f.tf.items()):
            term_idf = idf(n_docs, df.get(term, 1))
            s += bm25_term(tf, f.length, avgdl, term_idf, K1, FILE_B, weight=weights.get(term, 0.0))
            if term in name:
                s += NAME_WEIGHT * weights.get(term, 0.0) * term_idf
        out[f.path] = s
    return out


finite = st.floats(0.0, 500.0, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(files=st.lists(st.tuples(st.sampled_from(PATHS), finite,
                                st.dictionaries(st.sampled_from(TERMS), st.one_of(st.integers(0, 40).map(float), finite),
                                                max_size=6)), max_size=6, unique_by=lambda f: f[0]),
       weights=st.dictionaries(st.sampled_from(TERMS), st.sampled_from([0.0, 0.18, 0.3, 0.6, 1.0, 1.6])),
       n_docs=st.integers(1, 5000), avgdl=st.floats(0.0, 900.0), df=st.dictionaries(st.sampled_from(TERMS), st.integers(1, 50)))
def test_file_bm25_is_bit_for_bit_the_per_term_one(files, weights, n_docs, avgdl, df) -> None:
    evidence = [FileEvidence(p, length, dict(tf)) for p, length, tf in files]
    got = bm25_file_scores(evidence, weights, n_docs, avgdl, df)
    want = _reference_bm25(evidence, weights, n_docs, avgdl, df)
    assert list(got) == list(want)
    assert [v.hex() for v in got.values()] == [v.hex() for v in want.values()]


@pytest.fixture(scope="module")
def history_repo(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hist")
    g = GitRepo.create(root / "r")
    g.write("billing/gateway.py", "def charge(card):\n    return card.total\n")
    g.write("billing/retry.py", "def backoff(n):\n    return 2 ** n\n")
    g.write("docs/notes.md", "# Notes\n\nNothing about money.\n")
    g.write("naïve/ünicode.py", "def straße():\n    return 'ß'\n")
    g.commit("initial layout")
    for i in range(4):
        g.write("billing/retry.py", f"def backoff(n):\n    return 2 ** n + {i}\n")
        g.commit(f"retry throttling for the billing gateway, round {i}")
    g.write("billing/gateway.py", "def charge(card):\n    return card.total * 2\n")
    g.commit("charge twice: the gateway rounds down")
    build(BuildOptions(repo=g.path, store_dir=root / "store"))
    return g.path, root / "store"


QUERIES = ["billing gateway throttling", "retry round", "charge the card twice", "nothing here at all",
           "billing/retry.py", "gateway", "BILLING", "ünicode straße", "docs notes", "naïve"]


@pytest.mark.parametrize("query", QUERIES)
def test_a_long_lived_reader_answers_history_and_paths_like_a_one_shot_one(history_repo, query) -> None:
    repo, store = history_repo
    with open_index(repo, store) as view:
        assert not view.keep_text_in_memory
        weights = query_terms(query).weights
        hist = history_scores(view, weights)
        paths = path_candidates(view, query, SearchRequest(query, mode="path"))
        answer = search(view, SearchRequest(query, limit=10))
    follower = IndexFollower(repo, store)
    try:
        with follower.view() as view:
            assert view.keep_text_in_memory
            assert history_scores(view, weights) == hist
            assert "history_postings" in view.cache
            assert path_candidates(view, query, SearchRequest(query, mode="path")) == paths
            assert view.cache["path_text"] is None  # a non-ASCII path: always the SQL
            again = search(view, SearchRequest(query, limit=10))
    finally:
        follower.close()
    assert [(h.path, h.line_start, h.score.hex(), h.snippet) for h in again.results] == \
           [(h.path, h.line_start, h.score.hex(), h.snippet) for h in answer.results]
    if query == "billing gateway throttling":
        assert hist and max(hist, key=hist.get) == "billing/retry.py"
    if query == "billing/retry.py":
        assert paths.hits and paths.hits[0].path == "billing/retry.py"
    if query == "nothing here at all":
        assert paths.hits == [] and paths.total == 0


def test_a_query_is_analysed_once_per_search_and_shared_unchanged() -> None:
    report = "Traceback (most recent call last):\n  File \"pkg/parser.py\", line 3\n" + "parse headers " * 400
    first = query_terms(report)
    assert query_terms(report) is first
    assert query_terms.__wrapped__(report) == first
    assert chunk_terms(report) == list(chunk_terms(report)) and chunk_terms(report) is not chunk_terms(report)
    assert "parse" in first.weights and "pkg/parser.py" in first.mentions


ASCII_FILES = {"billing/gateway.py": "def charge(card):\n    return card.total\n",
               "billing/retry_policy.py": "def backoff(n):\n    return 2 ** n\n",
               "net/http/client.go": "package http\n\nfunc Get() {}\n", "README.md": "# Billing\n"}
PATH_QUERIES = ["billing gateway", "retry policy", "http client", "net/http", "client.go", "gateway.py",
                "BILLING", "readme", "policy billing", "nothing matches this", "a\nb", "./billing/", "billing/*",
                "http billing", "go", "ü"]


@settings(max_examples=60, deadline=None)
@given(query=st.sampled_from(PATH_QUERIES) | st.text(alphabet="abcdefghilnoprstuy/._ \n", min_size=1, max_size=12))
def test_the_path_retriever_skips_its_sql_only_when_no_path_can_match(ascii_repo, query) -> None:
    if not query.strip():
        return
    with open_index(ascii_repo) as view:
        want = path_candidates(view, query, SearchRequest(query, mode="path"))
    follower = IndexFollower(ascii_repo)
    try:
        with follower.view() as view:
            got = path_candidates(view, query, SearchRequest(query, mode="path"))
            assert view.cache["path_text"] is not None  # ASCII paths: the skip is in play
    finally:
        follower.close()
    assert got == want
    if query == "billing gateway":
        assert [h.path for h in got.hits] == ["billing/gateway.py"]


@pytest.fixture(scope="module")
def ascii_repo(tmp_path_factory) -> Path:
    g = GitRepo.create(tmp_path_factory.mktemp("ascii") / "r")
    g.write_many(ASCII_FILES)
    g.commit("files")
    build(BuildOptions(repo=g.path))
    return g.path
