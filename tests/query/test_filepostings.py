"""Long-lived readers answer from memory what one-shot readers answer through SQL: the file
postings give the same rows, the ranking the same files, search the same hits and snippets;
a snippet's window is the one a per-line count of the query terms picks."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.query import IndexFollower, open_index
from codeagent.query.filepostings import FilePostings, body_rows
from codeagent.query.ranking.files import file_ranking
from codeagent.query.filters import allowed_paths, make_filter
from codeagent.query.search import SearchRequest, search
from codeagent.query.sourcetext import best_window
from codeagent.tokenize import tokenize
from .conftest import build_repo

FILES = {
    "net/http_client.py": "import socket\n\n\nclass HttpClient:\n    \"\"\"Send a request, parse the response headers.\"\"\"\n\n"
                          "    def send(self, request):\n        return self.parse_headers(socket.recv(request))\n\n"
                          "    def parse_headers(self, raw):\n        return dict(line.split(':') for line in raw)\n",
    "net/retry.go": "package net\n\n// Retry sends the request again after a timeout.\nfunc Retry(req Request, timeout int) error {\n"
                    "\treturn send(req, timeout)\n}\n",
    "net/retry_test.go": "package net\n\nfunc TestRetry(t *testing.T) {\n\tRetry(Request{}, 3) // timeout retry\n}\n",
    "docs/usage.md": "# Usage\n\nThe client parses response headers and retries after a timeout.\n",
    "src/cache.rs": "/// A cache of parsed headers.\npub struct HeaderCache { headers: Vec<String> }\n\n"
                    "impl HeaderCache {\n    pub fn parse(&self, raw: &str) -> usize { raw.len() }\n}\n",
}
TERMS = ["parse", "headers", "header", "request", "retry", "timeout", "cache", "socket", "usage", "nothing"]
FILTERS = [None, make_filter("go"), make_filter(None, "net/**"), make_filter(roles=("test",)), make_filter(None, None, "rs,md")]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    return build_repo(tmp_path_factory.mktemp("fp") / "r", FILES).path


def _normal(rows) -> list:
    return sorted((p, dl, sorted(zip(ts, tfs))) for p, dl, ts, tfs in rows)


@settings(max_examples=40, deadline=None)
@given(terms=st.lists(st.sampled_from(TERMS), min_size=1, max_size=5), filt=st.sampled_from(FILTERS))
def test_memory_and_sql_give_the_same_file_postings(repo: Path, terms: list[str], filt) -> None:
    with open_index(repo, ref="main") as view:
        where, params = (filt or make_filter()).where("path")
        allowed = allowed_paths(view, filt) if filt is not None else None
        by_sql = body_rows(view, terms, where, params, allowed)
        resident = FilePostings.load(view).rows(terms, allowed)
    assert _normal(resident) == _normal(by_sql)
    if "headers" in terms and filt is None:
        assert any(p == "net/http_client.py" for p, *_ in by_sql)


@pytest.mark.parametrize("query", ["parse the response headers", "retry after a timeout",
                                   "header cache usage docs", "HttpClient.parse_headers fails"])
def test_a_long_lived_reader_ranks_and_answers_like_a_one_shot_one(repo: Path, query: str) -> None:
    with open_index(repo, ref="main") as view:
        ranked = [file_ranking(view, query, f) for f in FILTERS]
        hits = search(view, SearchRequest(query, limit=10)).results
    follower = IndexFollower(repo, ref="main")
    try:
        with follower.view() as view:
            assert view.keep_text_in_memory
            assert [file_ranking(view, query, f) for f in FILTERS] == ranked
            assert "file_postings" in view.cache
            again = search(view, SearchRequest(query, limit=10)).results
    finally:
        follower.close()
    assert [(h.path, h.line_start, h.line_end, h.snippet, h.score) for h in again] == \
           [(h.path, h.line_start, h.line_end, h.snippet, h.score) for h in hits]
    assert ranked[0], query


def _per_line_window(lines: list[str], a: int, b: int, terms: set[str], size: int = 4) -> tuple[int, int]:
    """The window holding most terms, counted line by line (the obvious, slow way)."""
    b = min(b, len(lines))
    if b - a + 1 <= size or not terms:
        return a, min(b, a + size - 1)
    counts = [len(terms & set(tokenize(lines[i - 1]))) for i in range(a, b + 1)]
    sums = [sum(counts[i:i + size]) for i in range(len(counts) - size + 1)]
    at = sums.index(max(sums))
    return a + at, a + at + size - 1


WORDS = ["parse", "Parser", "http_response", "getHeaders", "x", "ResponseHeader", "the", "a.b",
         "parseHTTP", "", "zlib", "HEAD", "headers"]


@settings(max_examples=300, deadline=None)
@given(lines=st.lists(st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join), min_size=1, max_size=30),
       terms=st.sets(st.sampled_from(["parse", "http", "response", "headers", "header", "head", "zlib", "a"]),
                     min_size=1, max_size=4),
       a=st.integers(1, 30), extra=st.integers(0, 32))
def test_snippet_window_is_the_one_a_per_line_count_picks(lines, terms, a, extra) -> None:
    a = min(a, len(lines))
    assert best_window(lines, a, a + extra, terms) == _per_line_window(lines, a, a + extra, terms)
