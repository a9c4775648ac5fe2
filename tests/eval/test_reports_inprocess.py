"""eval/reports_inprocess.py's side-by-side table: per group figures and the reports each run
alone finds, read from per-instance results files like the ones it writes."""

from __future__ import annotations

import json
from pathlib import Path

from codeagent.eval.reports_inprocess import compare, metrics


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _row(i: int, repo: str, named: bool, rank: int | None, **extra) -> dict:
    return {"instance_id": f"r{i}", "repo": repo, "mentions_gold": named, "rank": rank, **extra}


def test_metrics_are_percent_of_all_reports_misses_included() -> None:
    assert metrics([0, 3, None, 7]) == (4, 25.0, 50.0, 100.0 * (1 + 1 / 4 + 1 / 8) / 4)


def test_compare_puts_two_runs_side_by_side_and_names_what_each_alone_finds(tmp_path: Path) -> None:
    first = _write(tmp_path / "main.jsonl", [_row(1, "o/a", False, 6), _row(2, "o/a", True, 0),
                                              _row(3, "o/b", False, 0), _row(4, "o/b", False, None)])
    second = _write(tmp_path / "new.jsonl", [_row(1, "o/a", False, 0), _row(2, "o/a", True, 0),
                                              _row(3, "o/b", False, 9), _row(4, "o/b", False, None, error="no index")])
    out = compare([first, second], None)
    assert "| naming none | 2 | 50.0 / 50.0 / 57.1 | 50.0 / 50.0 / 55.0 |" in out  # r4 unbuilt: left out
    assert "| o/a | 2 | 50.0 / 50.0 / 57.1 | 100.0 / 100.0 / 100.0 |" in out
    assert "top 5: second alone 1 {'a': 1}; first alone 1 {'b': 1}" in out
