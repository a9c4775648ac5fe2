"""postings_merge.PostingsRuns: term-sorted runs spooled to disk and merged into a real DuckDB
table come out as one stable sort by term of all their rows (ties in run order), however the
rounds cut them, in whole row groups."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.format.assembly import TABLES_SQL
from codeagent.indexer.assemble import postings_merge
from codeagent.indexer.assemble.postings_merge import PostingsRuns
from codeagent.indexer.assemble.term_postings import stable_order

ROW = st.tuples(st.sampled_from(["", "a", "ab", "b", "é", "z\u00e9", "self", "Self", "x" * 20]),
                st.sampled_from(["a.py", "b/c.py", "d.rs"]), st.sampled_from(["c", "s"]),
                st.integers(0, 5), st.integers(1, 9), st.integers(1, 99))


def _run(rows: list[tuple]) -> pa.Table:
    """A batch's term_postings rows as postings_rows gives them: sorted by term (stably),
    every string column dictionary-encoded."""
    rows = sorted(rows, key=lambda r: r[0].encode())
    names = ("term", "path", "doc_kind", "doc", "tf", "length")
    table = pa.table({n: pa.array([r[i] for r in rows], pa.string() if i < 3 else pa.int32())
                      for i, n in enumerate(names)})
    return pa.table({n: table[n].combine_chunks().dictionary_encode() if i < 3 else table[n]
                     for i, n in enumerate(names)})


def _merged(tmp_path, runs: list[list[tuple]], round_rows: int, memory: int = 0) -> list[tuple]:
    con = duckdb.connect(str(tmp_path / "t.duckdb"))
    con.execute(TABLES_SQL)
    merge = PostingsRuns(tmp_path / "runs", round_rows, memory)
    try:
        for rows in runs:
            merge.add(_run(rows))
        assert merge.insert_into(con) == sum(map(len, runs))
        return con.execute("SELECT * FROM term_postings ORDER BY rowid").fetchall()
    finally:
        merge.close()
        con.close()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(ROW, max_size=30), max_size=5), st.integers(1, 40), st.sampled_from([1, 4, 7, 1 << 16]),
       st.sampled_from([0, 2500, 1 << 20]))
def test_the_merge_is_a_stable_sort_of_the_runs_by_term(tmp_path_factory, monkeypatch, runs, round_rows, batch,
                                                        memory):
    """Whatever the rounds, the rows of a run file's compressed batches (`batch`), and the
    runs held in memory (all, some, or none: `memory`)."""
    monkeypatch.setattr(postings_merge, "RUN_BATCH_ROWS", batch)
    tmp_path = tmp_path_factory.mktemp("merge")
    want = sorted((r for rows in runs for r in sorted(rows, key=lambda r: r[0].encode())),
                  key=lambda r: r[0].encode())
    assert _merged(tmp_path, runs, round_rows, memory) == want
    assert not (tmp_path / "runs").exists()


def test_large_runs_fill_whole_row_groups(tmp_path):
    n = 300_000
    runs = [[(f"t{(i * 7919 + k) % 50_000:05d}", f"p{k}.py", "c", i % 3, 1, 2) for i in range(n // 3)]
            for k in range(3)]
    got = _merged(tmp_path, runs, round_rows=40_000)
    assert [r[0] for r in got] == sorted(r[0] for rows in runs for r in rows)
    con = duckdb.connect(str(tmp_path / "t.duckdb"), read_only=True)
    counts = [c for (c,) in con.execute(
        "SELECT max(count) FROM pragma_storage_info('term_postings') WHERE column_id = 0 "
        "GROUP BY row_group_id ORDER BY row_group_id").fetchall()]
    con.close()
    assert sum(counts) == n and all(c == 122_880 for c in counts[:-1])


def test_stable_order_is_numpys_stable_argsort():
    keys = np.random.default_rng(1).integers(0, 1 << 20, 5000).astype(np.uint32)
    assert (stable_order(keys) == np.argsort(keys, kind="stable")).all()
