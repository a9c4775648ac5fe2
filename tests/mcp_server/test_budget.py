"""The response budget and cursor (mcp_server.budget) as properties: every page fits its
budget, and following next_cursor returns every item once, in order."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.errors import ArgumentError
from codeagent.mcp_server.budget import Page, compact, fit

MANIFEST = "ab" * 32
METADATA = {"ref": "worktree", "manifest_id": MANIFEST, "completeness": "complete"}
# A 3,000-9,000 character snippet built by repetition: as large as a real one, without the
# entropy of that much random text (hypothesis' data_too_large health check failed on it).
_big_text = st.builds(lambda unit, size: (unit * (size // len(unit) + 1))[:size],
                      st.text(min_size=1, max_size=30), st.integers(3000, 9000))
item = st.fixed_dictionaries({"name": st.text(max_size=40), "line": st.integers(0, 10**6),
                              "snippet": st.text(max_size=400) | _big_text})


def answer(items: list[dict]) -> dict:
    return {"metadata": dict(METADATA), "results": items, "total_count": len(items),
            "truncated": False, "next_cursor": None}


@settings(max_examples=60, deadline=None)
@given(items=st.lists(item, max_size=40), tokens=st.integers(256, 2000))
def test_pages_fit_and_cover_every_item_once(items, tokens):
    args = {"query": "q", "max_tokens": tokens}
    got, cursor = [], None
    for _ in range(len(items) + 2):
        call = dict(args, **({"cursor": cursor} if cursor else {}))
        page = Page.take("search_code", call)
        body = fit(answer(items), page)
        assert len(compact(body)) <= tokens * 4, "a page is over its budget"
        got += body["results"]
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert body["truncated"] and body["metadata"]["completeness"] == "truncated"
    whole = [r for r in got if not r["snippet"].endswith("…[cut]")]
    assert [r["line"] for r in got] == [r["line"] for r in items]
    assert all(r in items for r in whole)


def test_long_file_content_is_cut_at_a_line():
    text = "".join(f"line {i} " + "x" * 60 + "\n" for i in range(1, 2001))
    body = {"metadata": dict(METADATA), "path": "a.txt", "content": text, "encoding": "utf-8",
            "line_start": 1, "line_end": 2000, "truncated": False, "next_cursor": None}
    out = fit(body, Page.take("read_file", {"path": "a.txt", "max_tokens": 1000}))
    assert len(compact(out)) <= 4000 and out["truncated"] is True
    assert out["content"].endswith("\n") and text.startswith(out["content"])
    assert out["line_end"] == out["content"].count("\n")


def test_cursor_is_bound_to_arguments_and_manifest():
    page = Page.take("search_code", {"query": "q", "max_tokens": 256})
    body = fit(answer([{"name": "n", "line": i, "snippet": "s" * 300} for i in range(20)]), page)
    cursor = body["next_cursor"]
    with pytest.raises(ArgumentError, match="same arguments"):
        Page.take("search_code", {"query": "other", "cursor": cursor})
    moved = answer([]) | {"metadata": dict(METADATA, manifest_id="cd" * 32)}
    with pytest.raises(ArgumentError, match="index changed"):
        fit(moved, Page.take("search_code", {"query": "q", "cursor": cursor}))
