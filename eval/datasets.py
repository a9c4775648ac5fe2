"""Named datasets: mine `commits`, `definitions` or `descriptions` from a repository, or load
a JSONL file. Mining reads git and runs ctags; the selection logic is in the pure miners."""

from __future__ import annotations

import random
import tempfile
from dataclasses import replace
from pathlib import Path

from ..errors import InvalidParameter
from .cases import EvalCase, load_jsonl
from .gitdata import changed_lines, export_tree, read_commits, rev_parse, toplevel
from .mine_commits import CommitFilter, commit_cases
from .mine_definitions import candidate_tags, definition_cases, run_ctags
from .mine_descriptions import description_cases

MINED = ("commits", "definitions", "descriptions")
COMMIT_SCAN = 5000  # newest commits looked at when mining the commits dataset


def sample(cases: list[EvalCase], limit: int | None, seed: int) -> list[EvalCase]:
    """A seeded sample of `limit` cases, in their original order."""
    if limit is None or len(cases) <= limit:
        return cases
    keep = set(random.Random(seed).sample(range(len(cases)), limit))
    return [c for n, c in enumerate(cases) if n in keep]


def mine_commits(repo: Path, ref: str, limit: int | None, seed: int,
                 flt: CommitFilter = CommitFilter(), skip: int = 0, newest: bool = False) -> list[EvalCase]:
    """The commit cases, newest first: the first `skip` left out, then the newest `limit` of
    the rest (`newest`) or a seeded sample of them."""
    cases = commit_cases(read_commits(repo, ref, COMMIT_SCAN), flt)[skip:]
    cases = cases[:limit] if newest else sample(cases, limit, seed)
    return [replace(c, gold_lines=changed_lines(repo, c.ref, c.id.removeprefix("commit-"), c.gold_files))
            for c in cases]


def _tree_tags(repo: Path, sha: str, tmp: Path):
    tree = export_tree(repo, sha, tmp / "tree")
    return tree, run_ctags(tree)


def mine_definitions(repo: Path, ref: str, limit: int | None, seed: int) -> list[EvalCase]:
    sha = rev_parse(repo, ref)
    with tempfile.TemporaryDirectory(prefix="codeagent-eval-") as tmp:
        _, tags = _tree_tags(repo, sha, Path(tmp))
    return definition_cases(tags, sha, limit, seed)


def mine_descriptions(repo: Path, ref: str, limit: int | None, seed: int) -> list[EvalCase]:
    sha = rev_parse(repo, ref)
    with tempfile.TemporaryDirectory(prefix="codeagent-eval-") as tmp:
        tree, tags = _tree_tags(repo, sha, Path(tmp))
        sources = {}
        for path in sorted({t.path for t in candidate_tags(tags)}):
            try:
                sources[path] = (tree / path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
    return description_cases(tags, sources, sha, limit, seed)


def load_dataset(spec: str, repo: Path, ref: str, limit: int | None, seed: int,
                 skip: int = 0, newest: bool = False) -> tuple[str, list[EvalCase]]:
    """(dataset name, cases) for a mined dataset's name or a JSONL path; `skip` and `newest`
    (mine_commits') are for the commits dataset only."""
    if (skip or newest) and spec != "commits":
        raise InvalidParameter(f"--skip and --newest select commits by age; the {spec} dataset has none",
                               hint="use them with --dataset commits only")
    if spec in MINED:
        top = toplevel(repo)
        if spec == "commits":
            cases = mine_commits(top, ref, limit, seed, skip=skip, newest=newest)
        else:
            cases = {"definitions": mine_definitions, "descriptions": mine_descriptions}[spec](top, ref, limit, seed)
        if not cases:
            raise InvalidParameter(f"the {spec} dataset of {top} at {ref} is empty",
                                   hint="too little history or code passed the filters; bring a JSONL dataset")
        return spec, cases
    path = Path(spec)
    if not path.exists():
        raise InvalidParameter(f"--dataset {spec!r} is neither {', '.join(MINED)} nor an existing JSONL file")
    return path.stem, sample(load_jsonl(path, default_ref=ref), limit, seed)
