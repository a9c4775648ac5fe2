"""Symbol search on a real multi-language repository: tiers, filters, definitions first."""

from __future__ import annotations

import pytest

from codeagent.errors import InvalidParameter
from codeagent.query import find_symbols


def names(resp):
    return [(h.path, h.name, h.match) for h in resp.results]


def test_exact_qualified_name_ranks_first(poly):
    resp = find_symbols(poly, "app.server.RateLimiter.check_rate_limit")
    top = resp.results[0]
    assert (top.path, top.qualified_name, top.match) == (
        "app/server.py", "app.server.RateLimiter.check_rate_limit", "exact_qualified")
    assert top.symbol_id and top.symbol_stable_id
    assert top.line_start == 13 and top.line_end == 15


def test_qualified_suffix_and_rust_separator(poly):
    assert find_symbols(poly, "RateLimiter.check_rate_limit").results[0].qualified_name == \
        "app.server.RateLimiter.check_rate_limit"
    rust = find_symbols(poly, "crate::validate_token").results[0]
    assert (rust.path, rust.kind, rust.match) == ("src/lib.rs", "function", "exact_qualified")


def test_name_finds_every_language(poly):
    for query, path in [("HttpClient", "web/client.ts"), ("ParseConfig", "cmd/main.go"),
                        ("validate_token", "src/lib.rs"), ("helper", "app/util.py")]:
        top = find_symbols(poly, query).results[0]
        assert (top.path, top.name) == (path, query), query
        assert top.match in ("exact", "exact_qualified")


def test_same_name_definitions_all_listed(poly):
    got = [h.qualified_name for h in find_symbols(poly, "check_rate_limit", match="exact").results
           if h.result_type == "symbol"]
    assert got[:2] == ["app.server.RateLimiter.check_rate_limit",
                       "app.server.SlidingWindowLimiter.check_rate_limit"]


def test_prefix(poly):
    got = {h.name for h in find_symbols(poly, "parse", match="prefix").results}
    assert {"parse_http_response", "parseHttpResponse", "ParseConfig"} <= got


def test_fuzzy_typo_and_transposition(poly):
    assert find_symbols(poly, "valdate_token").results[0].name == "validate_token"
    top = find_symbols(poly, "HttpCleint").results[0]
    assert (top.name, top.match) == ("HttpClient", "fuzzy")


def test_subtokens_cross_naming_conventions(poly):
    got = [(h.path, h.name) for h in find_symbols(poly, "http response parse", match="fuzzy").results]
    assert ("app/server.py", "parse_http_response") in got
    assert ("web/client.ts", "parseHttpResponse") in got


def test_filters_language_kind_path_extension(poly):
    assert {h.path for h in find_symbols(poly, "parse", match="prefix", language="typescript").results} == {"web/client.ts"}
    assert {h.kind for h in find_symbols(poly, "Server", kind="struct").results} == {"struct"}
    assert {h.path for h in find_symbols(poly, "parse", match="prefix", path="cmd/**").results} == {"cmd/main.go"}
    assert {h.path for h in find_symbols(poly, "parse", match="prefix", extension="py").results} == {"app/server.py"}
    assert {h.kind for h in find_symbols(poly, "check_rate_limit", kind="fn").results} == {"method"}


def test_definitions_before_references(poly):
    resp = find_symbols(poly, "helper", match="exact", limit=20)
    types = [h.result_type for h in resp.results]
    assert types[0] == "symbol"
    assert "reference" in types
    assert types == sorted(types, key=lambda t: t != "symbol"), types
    refs = [h for h in resp.results if h.result_type == "reference"]
    assert {(h.path, h.line_start) for h in refs} >= {("app/util.py", 6), ("app/server.py", 15)}


def test_unknown_match_rejected(poly):
    with pytest.raises(InvalidParameter):
        find_symbols(poly, "x", match="bogus")
