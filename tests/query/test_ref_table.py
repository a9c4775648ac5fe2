"""Uses of a name from the in-memory reference table equal the SQL scan's, row for row."""

from __future__ import annotations

import pytest

from codeagent.query import find_symbols
from codeagent.query.filters import make_filter
from codeagent.query.ref_table import RefTable
from codeagent.query.symbols import _reference_rows

from .conftest import POLY, build_repo, sql_and_memory

FILTERS = [make_filter(), make_filter("python"), make_filter(None, "app/**"), make_filter(None, None, "ts,go")]


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("reftab") / "repo", POLY)
    with sql_and_memory(repo.path) as views:
        yield views


def test_uses_equal_the_sql_scan_for_every_name(views):
    sql, mem = views
    targets = [r[0] for r in sql.sql("SELECT DISTINCT target FROM refs ORDER BY target")]
    names = sorted({t.rsplit(".", 1)[-1] for t in targets}) + ["", "missing", "fetch"]
    assert len(names) > 10
    for name in names:
        for filt in FILTERS:
            for limit in (1, 3, 100):
                assert _reference_rows(mem, name, filt, limit) == _reference_rows(sql, name, filt, limit), \
                    (name, filt, limit)
    assert "ref_table" in mem.cache and "ref_table" not in sql.cache


def test_uses_carry_the_reference_rows(views):
    _, mem = views
    rows = _reference_rows(mem, "helper", make_filter(), 10)
    assert rows == [("app/server.py", "python", "import", "helper", 4, 4),
                    ("app/server.py", "python", "call", "helper", 15, 15),
                    ("app/util.py", "python", "call", "helper", 6, 6)]
    assert _reference_rows(mem, "helper", make_filter(None, "web/**"), 10) == []
    table = RefTable.load(mem)
    assert RefTable.load(mem) is table
    hits = find_symbols(mem, "parse_http_response", match="exact", limit=10)
    refs = [h for h in hits.results if h.result_type == "reference"]
    assert refs and all(h.qualified_name.endswith("parse_http_response") for h in refs)
    assert any(h.snippet.strip() == "return parse_http_response(request)" for h in refs)
