"""Outlines, symbol detail, source spans and handle resolution."""

from __future__ import annotations

import pytest

from codeagent.errors import InvalidParameter, NotFound
from codeagent.query import file_outline, get_symbol, read_lines, resolve_symbol, source_spans

from .conftest import build_repo


def test_file_outline_in_line_order(poly):
    out = file_outline(poly, "app/server.py")
    assert out.language == "python" and out.line_count == 32
    assert [s.fq_name for s in out.symbols][:3] == [
        "app.server.RateLimiter", "app.server.RateLimiter.__init__", "app.server.RateLimiter.check_rate_limit"]
    assert [s.line_start for s in out.symbols] == sorted(s.line_start for s in out.symbols)
    assert file_outline(poly, "notes.txt").symbols == []
    with pytest.raises(NotFound):
        file_outline(poly, "missing.py")


def test_get_symbol_detail(poly, poly_repo):
    d = get_symbol(poly, "app.server.RateLimiter")
    assert (d.symbol.kind, d.symbol.path, d.symbol.line_start, d.symbol.line_end) == ("class", "app/server.py", 7, 15)
    assert d.symbol.doc.strip().strip('"') == "Token bucket rate limiter."
    assert {c.name for c in d.children} == {"__init__", "check_rate_limit"}
    assert d.reference_count >= 2  # inherited by SlidingWindowLimiter, called by handle_request
    text = (poly_repo.path / "app/server.py").read_text().split("\n")
    assert d.spans[0].is_primary and d.spans[0].text == "\n".join(text[6:15])
    again = get_symbol(poly, d.symbol.symbol_id)
    assert again.symbol == d.symbol
    assert get_symbol(poly, d.symbol.symbol_stable_id).symbol == d.symbol


def test_resolve_ambiguity_lists_candidates(poly):
    with pytest.raises(InvalidParameter) as err:
        resolve_symbol(poly, "check_rate_limit")
    assert "SlidingWindowLimiter.check_rate_limit" in str(err.value)
    assert resolve_symbol(poly, "SlidingWindowLimiter.check_rate_limit").line_start == 19


def test_source_spans_cover_every_definition_of_a_stable_id(tmp_path):
    files = {"a/mod.py": "def shared():\n    return 1\n", "b/mod.py": "def shared():\n    return 2\n"}
    repo = build_repo(tmp_path / "repo", files)
    from codeagent.query import open_index

    with open_index(repo.path, ref="main") as view:
        first = resolve_symbol(view, "a.mod.shared")
        spans = source_spans(view, first.symbol_id)
        if len(spans) == 2:  # same stable id in both files: both listed, primary first
            assert [s.path for s in spans] == ["a/mod.py", "b/mod.py"]
            assert [s.is_primary for s in spans] == [True, False]
        assert spans[0].text == "def shared():\n    return 1"


def test_read_lines(poly):
    assert read_lines(poly, "cmd/main.go", 1, 1) == "package main"
    with pytest.raises(InvalidParameter):
        read_lines(poly, "cmd/main.go", 3, 2)
