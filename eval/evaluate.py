"""The eval pipeline behind `codeagent eval`: mine or load each dataset, run every mode on it,
and summarise the runs into one report (report.py's format)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from ..errors import InvalidParameter
from .cases import dump_jsonl
from .datasets import load_dataset
from .gate import check_report
from .gitdata import toplevel
from .report import report, summarize
from .retrievers import ALL_MODES, DEPTH
from .runner import RunOptions, run_cases, stderr_progress


def default_workdir(repo: Path) -> Path:
    """Where the private clone and eval index of `repo` live: ~/.cache/codeagent/eval/NAME-KEY."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "codeagent" / "eval"
    key = hashlib.blake2b(str(repo.resolve()).encode(), digest_size=8).hexdigest()
    return base / f"{repo.resolve().name}-{key}"


def parse_modes(text: str) -> tuple[str, ...]:
    """Comma-separated mode names, in order, each once; an unknown one is an argument error."""
    modes = tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
    unknown = [m for m in modes if m not in ALL_MODES]
    if unknown or not modes:
        raise InvalidParameter(f"unknown mode(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(ALL_MODES)}")
    return modes


def load_report(path: Path) -> dict:
    """A previous JSON report to compare with, checked."""
    try:
        return check_report(json.loads(path.read_text(encoding="utf-8")), str(path))
    except ValueError as exc:
        raise InvalidParameter(f"{path} is not JSON: {exc}") from None


def evaluate(repo: Path, datasets: tuple[str, ...], modes: tuple[str, ...], ref: str, limit: int | None,
             seed: int, workdir: Path, resamples: int, save_dir: Path | None, quiet: bool,
             embedder: str | None, per_query: bool = True, features_out: Path | None = None,
             skip: int = 0, newest: bool = False) -> dict:
    """Mine or load each dataset, run it, and return the report."""
    top = toplevel(repo)
    embedder = None if embedder in (None, "", "none") else embedder
    opts = RunOptions(repo=top, workdir=workdir, modes=modes, embedder=embedder,
                      progress=None if quiet else stderr_progress, features_out=features_out)
    sections = {}
    for spec in datasets:
        name, cases = load_dataset(spec, top, ref, limit, seed, skip, newest)
        if save_dir is not None:
            save_dir.mkdir(parents=True, exist_ok=True)
            (save_dir / f"{name}.jsonl").write_text(dump_jsonl(cases), encoding="utf-8")
        if not quiet:
            stderr_progress(f"dataset {name}: {len(cases)} cases")
        sections[name] = summarize(run_cases(cases, opts), seed, resamples, per_query)
    return report(top.name, sections, seed, resamples, DEPTH, list(modes), embedder)
