"""`search`: modes, intent-steered ranking, and the invariant that every hit's span holds
what it claims (hypothesis over queries drawn from the repository's own words)."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.errors import IndexMissing, InvalidParameter
from codeagent.query import SearchRequest, search
from codeagent.query.globs import escape_re2

from .conftest import POLY


def run(view, query, **kw):
    return search(view, SearchRequest(query, **kw))


def test_symbol_intent_puts_the_definition_first(poly):
    resp = run(poly, "parse_http_response")
    assert resp.query_intent == "symbol"
    top = resp.results[0]
    assert (top.result_type, top.path, top.name) == ("symbol", "app/server.py", "parse_http_response")


def test_path_intent_puts_the_file_first(poly):
    resp = run(poly, "client.ts")
    assert resp.query_intent == "path"
    assert (resp.results[0].result_type, resp.results[0].path) == ("file", "web/client.ts")


def test_error_intent_finds_the_text(poly):
    """The source that raises it first; a note about it stays in the answer, below the code."""
    resp = run(poly, "ConnectionResetError: peer closed", limit=20)
    assert resp.query_intent == "error"
    paths = list(dict.fromkeys(h.path for h in resp.results))
    assert paths[0] == "app/server.py" and "notes.txt" in paths


def test_natural_language_fuses_docs_and_code(poly):
    """The code that implements it first; the guide that explains it still in the answer."""
    resp = run(poly, "where is the token bucket rate limiter", limit=12)
    assert resp.query_intent == "natural_language"
    paths = [h.path for h in resp.results]
    assert paths[0] == "app/server.py" and "docs/guide.md" in paths
    assert [h.score for h in resp.results] == sorted((h.score for h in resp.results), reverse=True)


def test_modes_and_metadata(poly):
    for mode in ("symbol", "text", "regex", "path", "auto"):
        resp = run(poly, "server", mode=mode, limit=3)
        assert resp.results, mode
        assert len(resp.results) <= 3
        meta = resp.metadata
        assert meta.manifest_id == poly.manifest_id and meta.ref == "heads/main"
        assert meta.freshness in ("fresh", "stale", "unknown")
        assert meta.completeness in ("complete", "partial", "truncated")


def test_json_shape_is_the_documented_one(poly):
    d = run(poly, "helper").to_dict()
    assert set(d) == {"results", "query_intent", "total_count", "metadata"}
    assert set(d["metadata"]) == {"ref", "manifest_id", "freshness", "completeness"}
    assert set(d["results"][0]) == {"path", "line_start", "line_end", "kind", "name", "qualified_name",
                                    "symbol_id", "symbol_stable_id", "score", "snippet"}


def test_bad_requests(poly):
    with pytest.raises(InvalidParameter):
        run(poly, "  ")
    with pytest.raises(InvalidParameter):
        run(poly, "x", mode="telepathy")
    with pytest.raises(IndexMissing, match="no vectors"):
        run(poly, "x", mode="semantic")


def _words() -> list[str]:
    found = set()
    for text in POLY.values():
        found.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]{2,}", text))
    return sorted(found)


QUERIES = st.one_of(
    st.sampled_from(_words()),
    st.sampled_from(_words()).map(lambda w: w[:-1] if len(w) > 4 else w),  # typo / prefix
    st.lists(st.sampled_from(_words()), min_size=2, max_size=3).map(" ".join),
    st.sampled_from(sorted(POLY)),
)


def _check_hit(repo_path, hit):
    lines = (repo_path / hit.path).read_text(encoding="utf-8").split("\n")
    assert 1 <= hit.line_start <= hit.line_end <= max(len(lines), 1), hit
    span = lines[hit.line_start - 1:hit.line_end]
    snip = hit.snippet.split("\n")
    starts = [i for i in range(len(span) - len(snip) + 1) if span[i:i + len(snip)] == snip]
    assert starts, f"snippet of {hit.path}:{hit.line_start}-{hit.line_end} is not its text"
    if hit.result_type in ("symbol", "reference"):
        assert hit.name in "\n".join(span) or hit.name == "constructor", hit


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(query=QUERIES, mode=st.sampled_from(["auto", "symbol", "text", "path", "regex"]))
def test_every_hit_span_holds_what_it_claims(poly, poly_repo, query, mode):
    if mode == "regex":
        query = escape_re2(query)
    try:
        resp = run(poly, query, mode=mode, limit=8)
    except InvalidParameter:
        return
    for hit in resp.results:
        _check_hit(poly_repo.path, hit)


def test_path_mode_tiers_and_filters(poly):
    def paths(query, **kw):
        return [(h.path, h.score) for h in run(poly, query, mode="path", **kw).results]

    assert paths("web/client.ts")[0] == ("web/client.ts", 1.0)
    assert paths("client.ts")[0] == ("web/client.ts", 0.9)
    assert paths("app server") == [("app/server.py", 0.5)]
    assert paths("main", language="go") == [("cmd/main.go", 0.7)]
    assert paths("server", path="web/**") == []


def test_undecodable_query_bytes_are_an_invalid_argument(tmp_path):
    import os
    import subprocess
    import sys

    from .conftest import POLY, build_repo

    repo = build_repo(tmp_path / "repo", POLY)
    proc = subprocess.run([sys.executable, "-m", "codeagent", "search", os.fsdecode(b"\xff\xfe"),
                           "--repo", str(repo.path), "--ref", "main"], capture_output=True, text=True)
    assert proc.returncode == 2, proc.stderr
    assert "not valid UTF-8" in proc.stderr and "Traceback" not in proc.stderr
