"""`codeagent eval`: score retrieval quality on datasets mined from a repository or brought
as JSONL, print a Markdown table, write JSON/HTML, and gate on a previous report."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import run_command
from ..errors import QualityRegression

DATASETS_HELP = "commits | definitions | descriptions | PATH.jsonl"


@click.command("eval")
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=".",
              help="The git repository to mine and index (default: the current directory).")
@click.option("--dataset", "datasets", multiple=True, default=("commits",), metavar="NAME|PATH",
              help=f"Dataset(s) to score, repeatable: {DATASETS_HELP} (default: commits).")
@click.option("--modes", default="symbol,text,semantic,hybrid,auto,bm25-file", show_default=True,
              help="Comma-separated modes; unavailable ones (no vectors...) are reported and skipped.")
@click.option("--ref", default="HEAD", show_default=True,
              help="Where mined datasets come from (history below it; the tree at it); also the "
                   "ref of JSONL cases that name none.")
@click.option("--limit", type=click.IntRange(1), default=None, help="At most N cases per dataset (seeded sample).")
@click.option("--skip", type=click.IntRange(0), default=0,
              help="commits: leave out the newest N mined cases (e.g. to train on what is older than them).")
@click.option("--newest", is_flag=True, help="commits: the newest --limit cases rather than a seeded sample.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for sampling and bootstrap CIs.")
@click.option("--resamples", type=click.IntRange(100), default=1000, show_default=True, help="Bootstrap resamples.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write the JSON report here ('-' for stdout instead of the Markdown table).")
@click.option("--html", "html_out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write a self-contained HTML report (bar chart per mode) here.")
@click.option("--compare", "old", type=click.Path(path_type=Path, dir_okay=False, exists=True), default=None,
              help="An older JSON report: print deltas; exit 20 when a metric falls below its old CI.")
@click.option("--save-dataset", "save_dir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Also write the (mined) cases as JSONL into this directory, to replay them later.")
@click.option("--workdir", type=click.Path(path_type=Path, file_okay=False), default=None,
              help="Where the private clone and eval index live (default: ~/.cache/codeagent/eval/...).")
@click.option("--embedder", default="hash", show_default=True, metavar="NAME|none",
              help="Embedder for the eval indexes' vectors (semantic, hybrid); `none` builds none.")
@click.option("--brief", is_flag=True, help="Leave the per-query records out of the JSON report.")
@click.option("--features-out", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Append each case's candidate files with the file model's features (JSONL), the "
                   "training data of eval/train_ranker.py.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def eval_cmd(repo: Path, datasets: tuple[str, ...], modes: str, ref: str, limit: int | None, skip: int,
             newest: bool, seed: int,
             resamples: int, out: Path | None, html_out: Path | None, old: Path | None,
             save_dir: Path | None, workdir: Path | None, embedder: str | None, brief: bool,
             features_out: Path | None, quiet: bool) -> None:
    """Score retrieval quality: every mode side by side with a whole-file BM25 baseline.

    Datasets: `commits` (commit message -> files it modified, index at the parent),
    `definitions` (identifier -> its definition, ground truth from universal-ctags),
    `descriptions` (docstring -> its symbol, the doc stripped from the indexed tree), or a
    JSONL file of {"query", "gold_files"|"gold_symbols", "ref"}. Exit codes as for every
    command, plus 20 when --compare finds a regression.
    """
    from ..eval.evaluate import default_workdir, evaluate, load_report, parse_modes  # runner, miners, numpy: +~0.4 s on --help

    as_json = out is not None and str(out) == "-"
    mode_list = run_command(as_json, parse_modes, modes)
    old_report = run_command(as_json, load_report, old) if old is not None else None
    rep = run_command(as_json, evaluate, repo, datasets, mode_list, ref, limit, seed,
                      workdir or default_workdir(repo), resamples, save_dir, quiet, embedder, not brief,
                      features_out, skip, newest)
    _write(rep, out, html_out, as_json)
    if old_report is not None and _regressed(rep, old_report, as_json):
        sys.exit(QualityRegression.exit_code)


def _write(rep: dict, out: Path | None, html_out: Path | None, as_json: bool) -> None:
    """The report as JSON on stdout (`--out -`), else as a Markdown table, and into the files asked for."""
    from ..eval.html import html_report  # loaded by evaluate already; +~0.2 s on --help at the top
    from ..eval.report import markdown

    text = json.dumps(rep, indent=1, sort_keys=False) + "\n"
    if as_json:
        click.echo(text, nl=False)
    else:
        click.echo(markdown(rep), nl=False)
        if out is not None:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(text, encoding="utf-8")
    if html_out is not None:
        html_out.parent.mkdir(parents=True, exist_ok=True)
        html_out.write_text(html_report(rep), encoding="utf-8")


def _regressed(rep: dict, old_report: dict, as_json: bool) -> bool:
    """Print the deltas against `old_report`; True when a metric fell below its old CI."""
    from ..eval.gate import compare, format_comparison  # loaded by evaluate already; +~0.3 s on --help at the top

    cmp = compare(rep, old_report)
    click.echo(format_comparison(cmp), nl=False, err=as_json)
    return bool(cmp.failed)
