"""assemble.pipeline._Beside: the full assembly's second cursor, on a real DuckDB file."""

from __future__ import annotations

import time

import duckdb
import pytest

from codeagent.indexer.assemble.pipeline import _Beside


def test_the_job_runs_on_its_own_cursor_and_its_rows_are_there_after_wait(tmp_path):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    con.execute("CREATE TABLE a(x INTEGER); CREATE TABLE b(x INTEGER)")
    beside = _Beside(con)
    beside(lambda cur: cur.execute("INSERT INTO b SELECT range FROM range(200000)"))
    con.execute("INSERT INTO a SELECT range FROM range(1000)")
    beside.wait()
    assert con.execute("SELECT count(*), sum(x) FROM b").fetchall() == [(200000, 19999900000)]
    assert con.execute("SELECT count(*) FROM a").fetchall() == [(1000,)]
    beside.wait()  # nothing left: a no-op
    con.close()


def test_the_jobs_error_is_raised_by_wait(tmp_path):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    beside = _Beside(con)
    beside(lambda cur: cur.execute("INSERT INTO missing VALUES (1)"))
    with pytest.raises(duckdb.CatalogException, match="missing"):
        beside.wait()
    con.close()


def test_when_the_caller_failed_the_job_is_stopped_and_its_error_dropped(tmp_path):
    con = duckdb.connect(str(tmp_path / "db.duckdb"))
    beside = _Beside(con)
    beside(lambda cur: cur.execute("SELECT sum(hash(range)) FROM range(100000000000)"))  # minutes
    started = time.monotonic()
    beside.wait(failed=True)
    assert beside.job is None and time.monotonic() - started < 10
    con.close()
