"""`codeagent eval`: score retrieval quality on datasets mined from a repository or brought
as JSONL, print a Markdown table, write JSON/HTML, and gate on a previous report."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

import click

from ..cli import run_command

DATASETS_HELP = "commits | definitions | descriptions | PATH.jsonl"


def _default_workdir(repo: Path) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codeagent" / "eval"
    key = hashlib.blake2b(str(repo.resolve()).encode(), digest_size=8).hexdigest()
    return base / f"{repo.resolve().name}-{key}"


def _parse_modes(text: str) -> tuple[str, ...]:
    from ..errors import InvalidParameter
    from .retrievers import ALL_MODES

    modes = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    unknown = [m for m in modes if m not in ALL_MODES]
    if unknown or not modes:
        raise InvalidParameter(f"unknown mode(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(ALL_MODES)}")
    return modes


def evaluate(repo: Path, datasets: tuple[str, ...], modes: tuple[str, ...], ref: str, limit: int | None,
             seed: int, workdir: Path, resamples: int, save_dir: Path | None, quiet: bool,
             embedder: str | None, per_query: bool = True) -> dict:
    """Mine or load each dataset, run it, and return the report."""
    from .cases import dump_jsonl
    from .datasets import load_dataset
    from .gitdata import toplevel
    from .report import report, summarize
    from .retrievers import DEPTH
    from .runner import RunOptions, run_cases, stderr_progress

    top = toplevel(repo)
    embedder = None if embedder in (None, "", "none") else embedder
    opts = RunOptions(repo=top, workdir=workdir, modes=modes, embedder=embedder,
                      progress=None if quiet else stderr_progress)
    sections = {}
    for spec in datasets:
        name, cases = load_dataset(spec, top, ref, limit, seed)
        if save_dir is not None:
            save_dir.mkdir(parents=True, exist_ok=True)
            (save_dir / f"{name}.jsonl").write_text(dump_jsonl(cases), encoding="utf-8")
        if not quiet:
            stderr_progress(f"dataset {name}: {len(cases)} cases")
        sections[name] = summarize(run_cases(cases, opts), seed, resamples, per_query)
    return report(top.name, sections, seed, resamples, DEPTH, list(modes), embedder)


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
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
def eval_cmd(repo: Path, datasets: tuple[str, ...], modes: str, ref: str, limit: int | None, seed: int,
             resamples: int, out: Path | None, html_out: Path | None, old: Path | None,
             save_dir: Path | None, workdir: Path | None, embedder: str | None, brief: bool,
             quiet: bool) -> None:
    """Score retrieval quality: every mode side by side with a whole-file BM25 baseline.

    Datasets: `commits` (commit message -> files it modified, index at the parent),
    `definitions` (identifier -> its definition, ground truth from universal-ctags),
    `descriptions` (docstring -> its symbol, the doc stripped from the indexed tree), or a
    JSONL file of {"query", "gold_files"|"gold_symbols", "ref"}. Exit codes as for every
    command, plus 20 when --compare finds a regression.
    """
    from ..errors import QualityRegression
    from .gate import compare, format_comparison
    from .html import html_report
    from .report import markdown

    as_json = out is not None and str(out) == "-"
    mode_list = run_command(as_json, _parse_modes, modes)
    old_report = None
    if old is not None:
        old_report = run_command(as_json, _load_report, old)
    rep = run_command(as_json, evaluate, repo, datasets, mode_list, ref, limit, seed,
                      workdir or _default_workdir(repo), resamples, save_dir, quiet, embedder, not brief)
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
    if old_report is not None:
        cmp = compare(rep, old_report)
        click.echo(format_comparison(cmp), nl=False, err=as_json)
        if cmp.failed:
            sys.exit(QualityRegression.exit_code)


def _load_report(path: Path) -> dict:
    from ..errors import InvalidParameter
    from .gate import check_report

    try:
        return check_report(json.loads(path.read_text(encoding="utf-8")), str(path))
    except ValueError as exc:
        raise InvalidParameter(f"{path} is not JSON: {exc}") from None
