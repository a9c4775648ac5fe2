"""Folded key indexes (format/folded.py): an index that holds only row numbers, its keys folded
from the rows' column by the reader, answers as the index that holds DuckDB's keys; and an
index whose keys DuckDB folded otherwise than Python keeps its keys."""

from __future__ import annotations

import duckdb
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.format import folded as folded_module
from codeagent.format import resident
from codeagent.format.folded import fold_array, fold_key, folds_exactly
from codeagent.format.resident import KeyIndex

# Names as a symbol's qualified name may be written: separators, case, a few non-ASCII letters
# (among them U+0130, which DuckDB lower-cases to 'i' and Python to 'i' and a combining dot).
NAMES = st.lists(st.one_of(st.none(), st.sampled_from(["a", "A", "b::c", "B.C"]),
                           st.text(alphabet="aBc:->#/\\.é\u0130\u4e2dZ", max_size=8)), max_size=40)


def _duckdb_fold(values: list[str | None]) -> list[str | None]:
    """The keys the assembly stores: format/resident._FOLD run by DuckDB."""
    sql = f"SELECT {resident._FOLD.format('v')} FROM (SELECT unnest(?::VARCHAR[]) AS v, generate_subscripts(?::VARCHAR[], 1) AS i) ORDER BY i"
    return [r[0] for r in duckdb.execute(sql, [values, values]).fetchall()]


@settings(max_examples=150, deadline=None)
@given(NAMES)
def test_fold_array_is_fold_key(values):
    assert fold_array(pa.array(values, pa.string())).to_pylist() == [
        None if v is None else fold_key(v) for v in values]


@settings(max_examples=100, deadline=None)
@given(NAMES)
def test_folds_exactly_where_python_agrees_with_duckdb(values):
    keys = _duckdb_fold(values)
    agree = all(k is None or fold_key(v) == k for v, k in zip(values, keys))
    assert folds_exactly(pa.array(keys, pa.string()), pa.array(values, pa.string())) is agree
    if any(v is not None and v.isascii() for v in values):  # ASCII always folds exactly
        ascii_ = [v if v is None or v.isascii() else None for v in values]
        assert folds_exactly(pa.array(_duckdb_fold(ascii_), pa.string()), pa.array(ascii_, pa.string()))


def test_a_key_duckdb_folds_otherwise_is_kept():
    values = ["Foo.Bar", "\u0130stanbul::Load"]
    keys = _duckdb_fold(values)
    assert keys == ["foo.bar", "istanbul.load"] and fold_key(values[1]) != keys[1]
    assert not folds_exactly(pa.array(keys), pa.array(values))
    assert folds_exactly(pa.array(keys[:1]), pa.array(values[:1]))


@settings(max_examples=150, deadline=None)
@given(NAMES, st.lists(st.text(alphabet="abc.é:", max_size=5), max_size=5))
def test_folded_index_answers_as_the_keyed_one(values, probes):
    keys = [None if v is None else fold_key(v) for v in values]
    column = pa.array(values, pa.string())
    keyed = KeyIndex(KeyIndex.build(keys))
    table = KeyIndex.build(keys, permuted=True)
    assert table.column_names == ["row"]
    saved = folded_module.STRIDE, folded_module.WALK
    try:  # the sampled search at strides and walks small enough for these few keys
        for folded_module.STRIDE, folded_module.WALK in ((64, 4), (1, 1), (2, 1), (3, 2), (5, 3)):
            folded = KeyIndex(table, column, folded=True)
            assert list(folded.keys) == list(keyed.keys)
            assert folded.key_array.to_pylist() == keyed.key_array.to_pylist()
            for probe in [*probes, *(k for k in keys if k is not None)]:
                assert folded.rows_of(probe) == keyed.rows_of(probe)
                assert folded.first(probe) == keyed.first(probe)
    finally:
        folded_module.STRIDE, folded_module.WALK = saved


def test_symbol_arrays_store_folded_indexes_without_keys_only_when_exact():
    """The in-memory builder (the one definition of the arrays, which the streamed writer
    matches byte for byte): ASCII qualified names give row-only qualified_key and fq_key
    indexes; one DuckDB folds otherwise keeps the keys of the index that holds it."""
    con = duckdb.connect()
    con.execute(resident_tables_sql())
    con.execute("INSERT INTO symbols (path, language, ordinal, symbol_id, kind, name, qualified_name, "
                "start_line, end_line) VALUES ('a.py', 'python', 0, 's0', 'class', 'Foo', 'Foo', 1, 2), "
                "('a.py', 'python', 1, 's1', 'method', 'run', 'Foo.run', 2, 2)")
    con.execute("INSERT INTO symbol_names (symbol_id, fq_name, fq_key) VALUES ('s0', 'a.Foo', 'a.Foo'), "
                "('s1', 'a.Foo.run', 'a.Foo.run')")
    parts = resident.symbol_arrays(con.sql(resident.symbols_sql()).to_arrow_table())
    assert parts["qualified_key"].column_names == ["row"] and parts["fq_key"].column_names == ["row"]
    con.execute("UPDATE symbol_names SET fq_name = 'a.\u0130Foo' WHERE symbol_id = 's0'")
    parts = resident.symbol_arrays(con.sql(resident.symbols_sql()).to_arrow_table())
    assert parts["qualified_key"].column_names == ["row"]
    assert parts["fq_key"].column_names == ["key", "row"]
    assert parts["fq_key"].column("key").to_pylist() == ["a.foo.run", "a.ifoo"]  # sorted


def resident_tables_sql() -> str:
    from codeagent.format.assembly import GRAPH_TABLES_SQL, TABLES_SQL  # the assembly's own DDL

    return TABLES_SQL + GRAPH_TABLES_SQL
