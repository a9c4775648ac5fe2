"""Running cases: build each ref they need in a private clone, ask every mode, score the hits.

Cases are grouped by the commit they are asked at (and, for descriptions, by the set of docs
to strip, which yields one doc-stripped variant commit per ref). Groups are visited oldest
first on one moving branch of the clone, so each build reuses the previous one's shards and
assembled database: hundreds of parent commits cost little more than their diffs.
"""

from __future__ import annotations

import json

import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ModeUnavailable
from ..indexer.build import BuildOptions, build
from .baseline import TermCountCache
from .cases import DocSpan, EvalCase
from ..sources import read_git_blobs
from .gitdata import (EVAL_BRANCH, git, list_tree, pin, private_clone, read_blob, rev_parse, toplevel,
                      variant_commit)
from .mine_descriptions import scrub_copies, strip_spans
from .retrievers import BASELINE, DEPTH, FUNCTIONS, IndexedRef
from .scoring import score_case

Progress = Callable[[str], None]


@dataclass
class RunOptions:
    repo: Path
    workdir: Path
    modes: tuple[str, ...]
    depth: int = DEPTH
    jobs: int = 0
    embedder: str | None = None
    progress: Progress | None = None
    features_out: Path | None = None  # append each case's file-model candidates here (JSONL)


@dataclass(frozen=True)
class QueryRecord:
    case_id: str
    kind: str
    mode: str
    metrics: dict[str, float]
    latency_ms: float
    top_files: tuple[str, ...] = ()
    error: str = ""

    def to_dict(self) -> dict:
        d = {"id": self.case_id, "kind": self.kind, "mode": self.mode,
             "metrics": {k: round(v, 6) for k, v in self.metrics.items()},
             "latency_ms": round(self.latency_ms, 3), "top_files": list(self.top_files)}
        if self.error:
            d["error"] = self.error
        return d


@dataclass
class RunResult:
    cases: list[EvalCase]
    records: list[QueryRecord] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)  # mode -> why
    builds: int = 0
    build_seconds: float = 0.0


@dataclass(frozen=True)
class Group:
    sha: str
    strip: tuple[DocSpan, ...]
    cases: tuple[EvalCase, ...]


def plan_groups(cases: list[EvalCase], resolve: Callable[[str], str],
                order: Callable[[list[str]], dict[str, int]]) -> list[Group]:
    """Cases grouped by (commit, docs to strip), oldest commit first (pure given its callables)."""
    by_sha: dict[str, list[EvalCase]] = defaultdict(list)
    for case in cases:
        by_sha[resolve(case.ref)].append(case)
    rank = order(sorted(by_sha))
    groups = []
    for sha in sorted(by_sha, key=lambda s: (rank.get(s, 0), s)):
        plain = tuple(c for c in by_sha[sha] if not c.strip_docs)
        stripped = tuple(c for c in by_sha[sha] if c.strip_docs)
        if plain:
            groups.append(Group(sha, (), plain))
        if stripped:
            spans = tuple(sorted({s for c in stripped for s in c.strip_docs}))
            groups.append(Group(sha, spans, stripped))
    return groups


def commit_times(repo: Path, shas: list[str]) -> dict[str, int]:
    if not shas:
        return {}
    out = git(repo, "show", "-s", "--format=%H %ct", *shas).decode().split()
    return {out[i]: int(out[i + 1]) for i in range(0, len(out) - 1, 2)}


def variant_of(clone: Path, sha: str, spans: tuple[DocSpan, ...], queries: tuple[str, ...] = ()) -> str:
    """The doc-stripped variant commit of `sha` (the same commit every run): the spans cut out,
    and verbatim copies of the queries elsewhere (a dataset file, a doc page) scrubbed too."""
    by_path: dict[str, list[DocSpan]] = defaultdict(list)
    for span in spans:
        by_path[span.path].append(span)
    edits = {}
    for path, path_spans in by_path.items():
        text = read_blob(clone, sha, path).decode("utf-8", "surrogateescape")
        edits[path] = strip_spans(text, path_spans).encode("utf-8", "surrogateescape")
    tree = {p: blob for p, (_, blob) in list_tree(clone, sha).items()}
    by_blob = defaultdict(list)
    for path, blob in tree.items():
        by_blob[blob].append(path)
    for blob, data in read_git_blobs(clone, sorted(by_blob)):
        for path in by_blob[blob]:
            text = edits.get(path, data).decode("utf-8", "surrogateescape")
            scrubbed = scrub_copies(text, queries)
            if scrubbed != text:
                edits[path] = scrubbed.encode("utf-8", "surrogateescape")
    return variant_commit(clone, sha, edits)


def _build(clone: Path, store_dir: Path, opts: RunOptions) -> float:
    result = build(BuildOptions(repo=clone, store_dir=store_dir, rev=EVAL_BRANCH, jobs=opts.jobs,
                                embedder=opts.embedder, lock_wait=30.0))
    return result.seconds


def _ask(indexed: IndexedRef, mode: str, case: EvalCase, depth: int) -> QueryRecord:
    try:
        answer = indexed.search(mode, case.query, depth)
    except ModeUnavailable:
        raise
    except Exception as exc:  # an engine failure on one query scores 0 and is reported
        return QueryRecord(case.case_id, case.kind, mode, score_case(case, [], mode != BASELINE),
                           0.0, error=f"{type(exc).__name__}: {exc}"[:300])
    metrics = score_case(case, answer.hits, mode != BASELINE)
    top = tuple(dict.fromkeys(h.path for h in answer.hits))[:5]
    return QueryRecord(case.case_id, case.kind, mode, metrics, answer.seconds * 1000, top)


def run_cases(cases: list[EvalCase], opts: RunOptions) -> RunResult:
    """Build what the cases need and score every requested mode on every case."""
    say = opts.progress or (lambda msg: None)
    repo = toplevel(opts.repo)
    clone = private_clone(repo, opts.workdir / "clone")
    store_dir = opts.workdir / "store"
    resolved: dict[str, str] = {}

    def resolve(ref: str) -> str:
        if ref not in resolved:
            resolved[ref] = rev_parse(repo, ref)
        return resolved[ref]

    groups = plan_groups(cases, resolve, lambda shas: commit_times(repo, shas))
    result = RunResult(cases=cases)
    cache = TermCountCache()
    modes = list(opts.modes)
    for n, group in enumerate(groups, 1):
        queries = tuple(c.query for c in group.cases)
        target = variant_of(clone, group.sha, group.strip, queries) if group.strip else group.sha
        pin(clone, target)
        seconds = _build(clone, store_dir, opts)
        result.builds += 1
        result.build_seconds += seconds
        say(f"[{n}/{len(groups)}] {group.sha[:12]}{' (docs stripped)' if group.strip else ''}: "
            f"built in {seconds:.2f}s, {len(group.cases)} queries")
        indexed = IndexedRef(store_dir, clone, f"heads/{EVAL_BRANCH}", cache)
        try:
            cases = [indexed.gold_functions(c) for c in group.cases] if FUNCTIONS in modes else group.cases
            for mode in list(modes):
                try:
                    indexed.prepare(mode)
                    result.records.extend(_ask(indexed, mode, case, opts.depth) for case in cases)
                except ModeUnavailable as exc:
                    modes.remove(mode)
                    result.unavailable[mode] = str(exc)
                    result.records = [r for r in result.records if r.mode != mode]
                    say(f"  mode {mode} unavailable: {exc}")
            if opts.features_out is not None:
                _dump_features(indexed, group.cases, opts.features_out)
        finally:
            indexed.close()
    return result


def _dump_features(indexed: IndexedRef, cases: list[EvalCase], out: Path) -> None:
    """Each case's candidate files with the file model's features and whether each is gold."""
    from ..query.ranking.learned import FEATURES, feature_rows  # only when training data is asked for

    with open(out, "a", encoding="utf-8") as fh:
        for case in cases:
            cands = indexed.features(case.query)
            if not cands:
                continue
            rows = feature_rows(cands)
            paths = [c.path for c in cands]
            fh.write(json.dumps({"id": case.case_id, "gold": list(case.gold_files), "features": FEATURES,
                                 "paths": paths, "rows": [[round(x, 6) for x in r] for r in rows],
                                 "edges": indexed.candidate_edges(paths)}) + "\n")


def stderr_progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
