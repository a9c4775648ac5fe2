"""The in-memory symbol table answers navigation exactly like the SQL path (its lifetime and
the GC: test_symbol_table_gc.py)."""

from __future__ import annotations

import dataclasses

import pytest

from codeagent.errors import CodeagentError
from codeagent.query import (file_outline, find_symbols, get_symbol, open_index,
                             source_spans)
from codeagent.query.symbol_table import SymbolTable, resident_table

from .conftest import POLY, build_repo

EXTRA = {
    # same name in two modules, a class with methods, a nested function, a Rust `::` path
    "app/other.py": "def helper(value):\n    return value\n\n\nclass RateLimiter:\n"
                    "    def check_rate_limit(self, request):\n        def inner():\n"
                    "            return 1\n        return inner()\n",
}


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("symtab") / "repo", {**POLY, **EXTRA})
    with open_index(repo.path, ref="main") as sql, open_index(repo.path, ref="main") as mem:
        mem.keep_text_in_memory = True  # a long-lived reader: navigation from the table
        yield sql, mem


def _answer(view, fn, *args):
    try:
        return fn(view, *args).to_dict()
    except CodeagentError as exc:
        return (exc.code, exc.message, exc.hint)


def _handles(view) -> list[str]:
    rows = view.sql("SELECT symbol_id, stable_id, qualified_name, name FROM symbols ORDER BY path, ordinal")
    fq = [r[0] for r in view.sql("SELECT fq_name FROM symbol_names ORDER BY fq_name")]
    folded = ["crate.validate_token", "crate#Claims", "crate.Claims::sub"]  # fq_key, not fq_name
    return [h for r in rows for h in r] + fq + folded + ["missing_symbol", "app::server::RateLimiter", " "]


def test_memory_answers_like_sql_for_every_symbol(views):
    sql, mem = views
    handles = _handles(sql)
    paths = [r[0] for r in sql.sql("SELECT path FROM files ORDER BY path")] + ["nope.py"]
    for h in handles:
        assert _answer(mem, get_symbol, h) == _answer(sql, get_symbol, h), h
    for p in paths:
        assert _answer(mem, file_outline, p) == _answer(sql, file_outline, p), p
    assert get_symbol(mem, "crate.validate_token").symbol.fq_name == "crate::validate_token"
    for s in file_outline(mem, "app/server.py").symbols:
        assert s.to_dict() == dataclasses.asdict(s)
    assert resident_table(sql) is None, "the SQL view must not have loaded the table"
    assert "symbol_table" in mem.cache


def test_memory_answers_carry_real_content(views):
    _, mem = views
    d = get_symbol(mem, "app.server.RateLimiter")
    assert (d.symbol.kind, d.symbol.path, d.symbol.line_start, d.symbol.line_end) == ("class", "app/server.py", 7, 15)
    assert d.symbol.doc.strip().strip('"') == "Token bucket rate limiter."
    assert [c.name for c in d.children] == ["__init__", "check_rate_limit"]
    assert d.reference_count >= 2
    assert d.spans[0].is_primary and d.spans[0].text.startswith("class RateLimiter:")
    with pytest.raises(CodeagentError) as err:
        get_symbol(mem, "RateLimiter")  # defined in app/server.py and app/other.py
    assert err.value.code == "invalid_parameter" and "app/other.py" in err.value.message
    for h in find_symbols(mem, "check_rate_limit").results:
        assert h.to_dict(True) == {**dataclasses.asdict(h), "score": round(h.score, 6)}
    spans = source_spans(mem, "app.other.helper")
    assert [(s.path, s.line_start, s.is_primary) for s in spans][0] == ("app/other.py", 1, True)


def test_rows_by_path_and_ordinal_match_the_symbols_table(views):
    sql, mem = views
    table = SymbolTable.load(mem)
    rows = sql.sql("SELECT path, ordinal, symbol_id, start_line FROM symbols")
    assert len(table) == len(rows)
    for path, ordinal, symbol_id, line in rows:
        i = table.at(path, ordinal)
        assert (table.rows[i].symbol_id, table.rows[i].line_start) == (symbol_id, line)
    assert table.at("app/server.py", 10_000) is None and table.at("nope.py", 0) is None


def test_mapped_arrays_answer_like_arrays_built_from_sql(views):
    """A long-lived view maps the arrays the assembly wrote; an assembly without them builds
    the same arrays from SQL at load time: every look-up agrees."""
    from codeagent.format import resident
    from codeagent.query.edge_table import EdgeTable
    from codeagent.query.ref_table import RefTable
    from codeagent.query.symbol_table import COLUMNS, load_sql

    sql, mem = views
    mapped = SymbolTable.load(mem)
    assert resident.map_arrays(mem.path.parent, "symbols") is not None, "the assembly wrote no arrays"
    built = SymbolTable(sql.cursor().sql(load_sql(sql)).to_arrow_table())
    handles = _handles(sql) + [r[0] for r in sql.sql("SELECT DISTINCT path FROM symbols")]
    assert list(mapped.rows) == list(built.rows) and len(mapped.rows) > 20
    for h in handles:
        for column in COLUMNS:
            assert mapped.where(column, h) == built.where(column, h), (column, h)
        assert mapped.fq_matches(h) == built.fq_matches(h), h
        assert mapped.names.exact_qualified(h) == built.names.exact_qualified(h), h
        assert mapped.names.prefix(h[:3]) == built.names.prefix(h[:3]), h
    assert mapped.infos(list(range(len(mapped)))) == built.infos(list(range(len(built))))
    refs = (RefTable.load(mem), RefTable(sql.cursor().sql(resident.REFS_SQL).to_arrow_table()))
    edges = (EdgeTable.load(mem), EdgeTable(sql.cursor().sql(resident.EDGES_SQL).to_arrow_table()))
    ids = [r.symbol_id for r in mapped.rows]
    for name in {r.name for r in mapped.rows} | {"nope"}:
        assert refs[0].uses(name, None, 50) == refs[1].uses(name, None, 50), name
    for key in ("src_id", "dst_id"):
        assert edges[0].rows(ids, key, None, 10_000) == edges[1].rows(ids, key, None, 10_000)
        assert edges[0].rows(ids, key, None, 10_000), key
