"""The runner end to end (real builds in a private clone) and the CI gate through the CLI."""

from __future__ import annotations

import copy
import json
import subprocess

import pytest

from codeagent.eval.cases import DocSpan, EvalCase, GoldSymbol, dump_jsonl
from codeagent.eval.gate import compare
from codeagent.eval.html import html_report
from codeagent.eval.report import markdown, report, summarize
from codeagent.eval.retrievers import BASELINE
from codeagent.eval.mine_descriptions import scrub_copies
from codeagent.eval.runner import RunOptions, plan_groups, run_cases

PARSER = 'def tokenize(text):\n    """Split the input text into words separated by blanks."""\n    return text.split()\n'
RENDER = "def render(rows):\n    return '\\n'.join(rows)\n"


@pytest.fixture
def project(git_repo):
    git_repo.write_many({"pkg/parser.py": PARSER, "pkg/render.py": RENDER, "README.md": "# tools\n",
                         "notes/quotes.md": "Quoted: Split the input text into words separated by blanks.\n"})
    git_repo.commit("Initial import")
    return git_repo


def _cases(head: str) -> list[EvalCase]:
    strip = (DocSpan("pkg/parser.py", 2, 2, "..."),)
    return [
        EvalCase("render rows join", head, ("pkg/render.py",), id="render"),
        EvalCase("blanks", head, ("pkg/parser.py",), id="blanks-visible"),
        EvalCase("blanks", head, ("pkg/parser.py",), kind="descriptions", id="blanks-stripped", strip_docs=strip),
        EvalCase("nothing matches zyzzyva", head, ("pkg/parser.py",), id="miss"),
        EvalCase("Split the input text into words separated by blanks.", head, ("pkg/parser.py",),
                 kind="descriptions", id="quoted", strip_docs=strip),
    ]


def test_runner_scores_the_baseline_and_strips_docs_in_a_variant(project, tmp_path):
    head = project.repo.head.commit.hexsha
    opts = RunOptions(repo=project.path, workdir=tmp_path / "work", modes=(BASELINE,))
    run = run_cases(_cases(head), opts)
    by_id = {r.case_id: r for r in run.records}
    assert by_id["render"].metrics["acc@1"] == 1.0 and by_id["render"].top_files[0] == "pkg/render.py"
    assert by_id["blanks-visible"].metrics["acc@5"] == 1.0
    assert by_id["blanks-stripped"].metrics["acc@10"] == 0.0  # the doc was not indexed
    assert by_id["miss"].metrics == {"acc@1": 0.0, "acc@5": 0.0, "acc@10": 0.0, "mrr@10": 0.0}
    assert "notes/quotes.md" not in by_id["quoted"].top_files  # the verbatim copy was scrubbed too
    assert run.builds == 2 and project.repo.head.commit.hexsha == head
    assert subprocess.run(["git", "-C", str(project.path), "status", "--porcelain"],
                          capture_output=True, text=True).stdout == ""
    section = summarize(run, seed=0, resamples=200)
    acc1 = section["modes"][BASELINE]["metrics"]["acc@1"]
    mean = sum(r.metrics["acc@1"] for r in run.records) / 5
    assert acc1["value"] == pytest.approx(mean) and acc1["low"] <= mean <= acc1["high"] and acc1["n"] == 5
    rep = report("project", {"mine": section}, 0, 200, 50, [BASELINE])
    table = markdown(rep)
    assert f"| bm25-file (baseline) | {mean:.3f} (" in table
    page = html_report(rep)
    assert page.count("<svg") == 2 and "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "")


def _write_dataset(project, tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(dump_jsonl(_cases(project.repo.head.commit.hexsha)[:1] + _cases("HEAD")[3:4]))
    return path


def test_gate_passes_on_equal_and_fails_on_a_drop(project, tmp_path, cli):
    dataset = _write_dataset(project, tmp_path)
    work = tmp_path / "work"
    base = ["eval", "--repo", project.path, "--dataset", dataset, "--modes", BASELINE, "--workdir", work,
            "--quiet", "--resamples", "200"]
    first = cli(*base, "--out", tmp_path / "old.json", "--html", tmp_path / "r.html", check=True)
    assert "| bm25-file (baseline) |" in first.stdout
    old = json.loads((tmp_path / "old.json").read_text())
    assert old["datasets"]["cases"]["modes"][BASELINE]["metrics"]["acc@1"]["value"] == 0.5
    assert "<svg" in (tmp_path / "r.html").read_text()

    same = cli(*base, "--compare", tmp_path / "old.json")
    assert same.returncode == 0, same.stdout + same.stderr
    assert "gate: passed" in same.stdout

    better = copy.deepcopy(old)
    entry = better["datasets"]["cases"]["modes"][BASELINE]["metrics"]["acc@1"]
    entry.update(value=1.0, low=0.9, high=1.0)
    (tmp_path / "better.json").write_text(json.dumps(better))
    worse = cli(*base, "--compare", tmp_path / "better.json")
    assert worse.returncode == 20, worse.stdout + worse.stderr
    assert "REGRESSION" in worse.stdout and "gate: FAILED" in worse.stdout


def test_bad_inputs_exit_2(project, tmp_path, cli):
    bad = cli("eval", "--repo", project.path, "--dataset", tmp_path / "missing.jsonl", "--workdir", tmp_path / "w")
    assert bad.returncode == 2 and "neither" in bad.stderr
    modes = cli("eval", "--repo", project.path, "--modes", "vectors", "--workdir", tmp_path / "w")
    assert modes.returncode == 2 and "unknown mode" in modes.stderr
    (tmp_path / "junk.json").write_text("{}")
    junk = cli("eval", "--repo", project.path, "--compare", tmp_path / "junk.json", "--workdir", tmp_path / "w")
    assert junk.returncode == 2 and "not a codeagent eval report" in junk.stderr


def _report(modes: dict, requested: list[str]) -> dict:
    section = {"fingerprint": "f", "modes": {m: {"metrics": {"acc@1": {"value": v, "low": v - 0.1, "high": v + 0.1}}}
                                             for m, v in modes.items()}, "unavailable": {}}
    return {"format": "codeagent-eval", "modes": requested, "datasets": {"d": section}}


def test_compare_rules():
    old = _report({"text": 0.5, "symbol": 0.4}, ["text", "symbol"])
    assert not compare(_report({"text": 0.45, "symbol": 0.4}, ["text", "symbol"]), old).failed  # inside the CI
    dropped = compare(_report({"text": 0.35, "symbol": 0.4}, ["text", "symbol"]), old)
    assert dropped.failed and [d.metric for d in dropped.deltas if d.regression] == ["acc@1"]
    vanished = compare(_report({"text": 0.5}, ["text", "symbol"]), old)
    assert vanished.failed and "symbol" in vanished.problems[0]
    skipped = compare(_report({"text": 0.5}, ["text"]), old)
    assert not skipped.failed and "not requested" in skipped.notes[0]


@pytest.mark.parametrize("embedder", [None, "hash"])
def test_engine_modes_score_symbols_and_report_missing_vectors(project, tmp_path, embedder):
    head = project.repo.head.commit.hexsha
    case = EvalCase("tokenize", head, ("pkg/parser.py",), (GoldSymbol("pkg/parser.py", "tokenize", 1),),
                    kind="definitions", id="def-tokenize")
    opts = RunOptions(repo=project.path, workdir=tmp_path / "work", modes=("symbol", "semantic"), embedder=embedder)
    run = run_cases([case], opts)
    by_mode = {r.mode: r for r in run.records}
    assert by_mode["symbol"].metrics["recall@1"] == 1.0 and by_mode["symbol"].metrics["acc@1"] == 1.0
    assert by_mode["symbol"].latency_ms > 0 and not by_mode["symbol"].error
    if embedder is None:
        assert "semantic" not in by_mode and "vectors" in run.unavailable["semantic"]
    else:
        assert by_mode["semantic"].metrics["acc@10"] == 1.0 and run.unavailable == {}


def test_plan_groups_oldest_first_with_one_variant_per_ref():
    span = DocSpan("a.py", 2, 2, "...")
    cases = [EvalCase("q1", "new", ("a.py",)), EvalCase("q2", "old", ("a.py",)),
             EvalCase("q3", "new", ("a.py",), strip_docs=(span,)),
             EvalCase("q4", "new", ("a.py",), strip_docs=(DocSpan("a.py", 5, 6, ""), span))]
    groups = plan_groups(cases, {"new": "s2", "old": "s1"}.get, lambda shas: {"s1": 10, "s2": 20})
    assert [(g.sha, g.strip, [c.query for c in g.cases]) for g in groups] == [
        ("s1", (), ["q2"]), ("s2", (), ["q1"]), ("s2", (span, DocSpan("a.py", 5, 6, "")), ["q3", "q4"])]


def test_scrub_copies_only_long_verbatim_queries():
    text = "see: Split the input text into words. and blanks"
    assert scrub_copies(text, ["Split the input text into words.", "blanks"]) == "see:  and blanks"


def test_the_feature_dump_keeps_the_graph_edges_between_candidates(git_repo, tmp_path):
    """`--features-out` (train_ranker dump): each case's candidates with their features, and
    the symbol-graph edges between two candidates by their index (the raw material of the
    graph features eval/try_features tries)."""
    git_repo.write_many({"pkg/rows.py": "def render_rows(rows):\n    return '\\n'.join(rows)\n",
                         "pkg/table.py": "from pkg.rows import render_rows\n\n\ndef render_table(rows):\n"
                                         "    return render_rows(rows)\n"})
    head = git_repo.commit("Render tables")
    out = tmp_path / "features.jsonl"
    opts = RunOptions(repo=git_repo.path, workdir=tmp_path / "work", modes=("auto",), features_out=out)
    run_cases([EvalCase("render rows table", head, ("pkg/table.py",), id="table")], opts)
    (case,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert case["id"] == "table" and case["gold"] == ["pkg/table.py"]
    assert set(case["paths"]) == {"pkg/rows.py", "pkg/table.py"} and len(case["rows"]) == 2
    at = {p: i for i, p in enumerate(case["paths"])}
    kinds = {kind for src, dst, kind, _exact, n in case["edges"] if (src, dst) == (at["pkg/table.py"], at["pkg/rows.py"])}
    assert "calls" in kinds
    assert all(src != dst for src, dst, *_ in case["edges"])
