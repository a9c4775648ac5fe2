"""The `tests` and `risk` parts of an impact answer.

A test file is ranked by five signals, each in [0, 1]:
  graph     its symbols reach changed symbols through the graph (nearer, surer and rarer
            reaches count more: see graph_scores);
  focus     the same evidence summed over all its test functions (graph ties every file that
            calls a changed symbol directly; the one written for it has many such tests);
  cochange  it changed together with the changed files in the history (query/cochange.py);
  naming    its name is the changed file's stem or module with a test prefix or suffix (1),
            or merely contains it (0.5);
  proximity its directory against the changed files' (see `proximity`);
graph, focus and cochange divided by their best value among this change's candidates (how
strong a signal is depends on the change: a large repository's co-change scores run lower),
and score = the WEIGHTS sum (fit on a 0.1 grid to bench/impact.py's 72 development-set
commits, the same weights in 11 of 12 leave-one-repository-out folds; proximity weighs 0 there,
and is reported for the reader). A test file the change itself edits comes first (score 1 + ...):
it is the test the author meant to run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from .cochange import CoChange
from .impact_changes import Changed
from .impact_graph import Reached

WEIGHTS = {"graph": 0.2, "focus": 0.1, "cochange": 0.3, "naming": 0.4, "proximity": 0.0}
_PREFIX = re.compile(r"^(?:(?:tests?|spec)[_.-]|Tests?(?=[A-Z]))", re.I)
_SUFFIX = re.compile(r"(?:[_.-](?:tests?|specs?)|(?<=[a-z0-9])(?:Tests?|Spec))$")
_WORD = re.compile(r"[^a-z0-9]")
# Stems that name no module of their own: the package's directory names it instead.
_GENERIC = frozenset("__init__ index mod lib main init package".split())
# Directory names that are layout, not topic: they say nothing about what a test is near.
_GENERIC_DIRS = frozenset("""src lib main test tests spec specs testing java kotlin scala python go js ts
    internal pkg app source sources unit integration commontest commonmain jvmtest jvmmain
    androidtest testfixtures""".split())


@dataclass
class PickedTest:
    path: str
    score: float
    reason: str
    signals: dict[str, float]
    functions: list[dict] = field(default_factory=list)


def _norm(s: str) -> str:
    return _WORD.sub("", s.lower())


def stem_names(path: str, module: str | None = None) -> set[str]:
    """The names a test of `path` would carry: the file's stem (or, for __init__.py, index.js,
    mod.rs..., its directory's name) and the last part of its module name."""
    parts = path.split("/")
    stem = parts[-1].split(".")[0]
    names = {stem} if stem.lower() not in _GENERIC else ({parts[-2]} if len(parts) > 1 else set())
    if module:
        last = re.split(r"[.:/\\]", module)[-1]
        if last and last.lower() not in _GENERIC:
            names.add(last)
    return {_norm(n) for n in names if len(_norm(n)) >= 2}


def stem_of_test(path: str) -> str:
    """A test file's stem without its test prefix or suffix: test_foo.py, foo_test.go,
    FooTest.java, foo.spec.ts -> foo."""
    stem = path.rsplit("/", 1)[-1].split(".")[0]
    return _norm(_SUFFIX.sub("", _PREFIX.sub("", stem)))


@lru_cache(maxsize=1 << 16)
def _test_stems(test_path: str) -> tuple[str, str]:
    return stem_of_test(test_path), _norm(test_path.rsplit("/", 1)[-1].split(".")[0])


def naming_score(test_path: str, names: Iterable[str]) -> float:
    own, whole = _test_stems(test_path)  # every test file is tried against every change
    best = 0.0
    for n in names:
        if n == own:
            return 1.0
        if len(n) >= 3 and n in whole:
            best = 0.5
    return best


def graph_scores(nodes: Iterable[Reached], test_paths: set[str]) -> dict[str, tuple[float, float, list[dict]]]:
    """Per test file reached by the walk: (its graph signal, its focus, the test functions
    that reach).

    A changed symbol that nearly every test reaches (a decorator every test class uses) says
    little about which test to run; one that few tests reach says much. So each changed symbol
    r weighs w(r) = log(1 + T/n(r)) / log(1 + T) (T test files, n(r) of them reaching r), a
    node's evidence for r is w(r) / depth (x0.6 through a name-matched edge, x0.5 when only
    its imports reach r); a file's graph signal combines its best evidence per r as a
    noisy-or, 1 - prod(1 - e), and its focus sums the evidence of all its test functions
    (the file most of whose tests exercise the change is the one written for it: the graph
    signal alone ties every file that calls a changed symbol directly)."""
    by_file: dict[str, list[Reached]] = {}
    for n in nodes:
        if n.path in test_paths:
            by_file.setdefault(n.path, []).append(n)
    best: dict[str, dict[str, float]] = {}
    for path, found in by_file.items():
        ev: dict[str, float] = {}
        for n in found:
            for r in n.roots:
                ev[r] = max(ev.get(r, 0.0), _evidence(n))
        best[path] = ev
    reach: dict[str, int] = {}
    for ev in best.values():
        for r in ev:
            reach[r] = reach.get(r, 0) + 1
    total = max(len(test_paths), 1)
    weight = {r: math.log1p(total / k) / math.log1p(total) for r, k in reach.items()}
    out = {}
    for path, found in by_file.items():
        miss = 1.0
        for r, e in best[path].items():
            miss *= 1 - min(1.0, weight[r]) * e
        focus = sum(max(weight[r] for r in n.roots) * _evidence(n) for n in found if n.kind != "file")
        funcs = sorted(({"name": n.name, "line": n.line, "depth": n.depth, "confidence": n.confidence}
                        for n in found if n.kind != "file"),
                       key=lambda d: (d["depth"], d["confidence"] != "exact", d["line"]))
        out[path] = (1 - miss, focus, funcs)
    return out


def _evidence(n: Reached) -> float:
    return (0.6 if n.confidence == "name" else 1.0) * (0.5 if n.kind == "file" else 1.0) / n.depth


def _dirs(path: str) -> set[str]:
    return {p.lower() for p in path.split("/")[:-1] if p.lower() not in _GENERIC_DIRS}


def proximity(test_path: str, sources: Iterable[str]) -> float:
    """How near the test file lies to the changed source files: 1 in the same directory (a
    Go package, a Java package's mirror under src/test), else the overlap of the directory
    names that are not layout (src, main, test, java...): okhttp3/internal/dns is near
    okhttp3/internal/dns under another source set."""
    here, mine, best = test_path.rpartition("/")[0], _dirs(test_path), 0.0
    for s in sources:
        if s.rpartition("/")[0] == here:
            return 1.0
        theirs = _dirs(s)
        if mine | theirs:
            best = max(best, len(mine & theirs) / len(mine | theirs))
    return round(best, 4)


def combined(signals: Mapping[str, float], edited: bool = False) -> float:
    """The ranking score of a test file's signals (bench/impact.py --rescore uses it too)."""
    return sum(WEIGHTS[k] * signals.get(k, 0.0) for k in WEIGHTS) + (1.0 if edited else 0.0)


def rank_tests(changed: Sequence[Changed], nodes: Iterable[Reached], test_paths: set[str],
               cochange: Sequence[CoChange], modules: Mapping[str, str],
               limit: int) -> tuple[list[PickedTest], int]:
    """(the `limit` best test files, how many had any signal)."""
    edited = {c.path for c in changed if c.path in test_paths}
    graph = graph_scores(nodes, test_paths)
    co = {c.path: c for c in cochange if c.path in test_paths}
    stems: dict[str, str] = {}
    for c in changed:
        if c.path not in test_paths:
            for n in stem_names(c.path, modules.get(c.path)):
                stems.setdefault(n, c.path)
    picks = []
    top_g = max((g for g, _, _ in graph.values()), default=0.0) or 1.0
    top_f = max((f for _, f, _ in graph.values()), default=0.0) or 1.0
    top_c = max((c.score for c in co.values()), default=0.0) or 1.0
    sources = sorted({c.path for c in changed if c.path not in test_paths})
    for path in sorted(set(graph) | set(co) | edited | {t for t in test_paths if naming_score(t, stems)}):
        g, f, funcs = graph.get(path, (0.0, 0.0, []))
        c = co[path].score / top_c if path in co else 0.0
        n = naming_score(path, stems)
        # graph, focus and cochange relative to this change's best: how strong a signal is
        # depends on the change (a large repository's co-change scores run lower)
        signals = {"graph": round(g / top_g, 4), "focus": round(f / top_f, 4), "cochange": round(c, 4),
                   "naming": n, "proximity": proximity(path, sources)}
        score = combined(signals, path in edited)
        reasons = (["changed by this diff"] if path in edited else [])
        if funcs:
            first = funcs[0]
            reasons.append(f"{first['name']} reaches the change in {first['depth']} edge"
                           f"{'s' if first['depth'] > 1 else ''} ({first['confidence']})")
        if path in co:
            reasons.append(f"changed together with {co[path].with_path} in {co[path].commits} commit"
                           f"{'s' if co[path].commits > 1 else ''}")
        if n:
            reasons.append("named after " + next(p for s, p in stems.items() if naming_score(path, [s])))
        picks.append(PickedTest(path, round(score, 4), "; ".join(reasons), signals, funcs[:10]))
    picks.sort(key=lambda t: (-t.score, t.path))
    return picks[:limit], len(picks)


def risk_summary(changed: Sequence[Changed], dependents: Sequence[Reached], reached_by_tests: set[str],
                 test_paths: set[str]) -> dict:
    """Public API touched, fan-in (dependents per changed symbol), changed code no test reaches,
    and a level: high when a breaking change has dependents or public code with dependents
    changed untested; medium for untested code, more than 10 direct dependents or a breaking
    change to public API; else low."""
    source = [c for c in changed if c.path not in test_paths]
    fan: dict[str, int] = {}
    for d in dependents:
        if d.depth == 1:
            for r in d.roots:
                fan[r] = fan.get(r, 0) + 1
    public = [c for c in source if c.public and c.change != "added"]
    untested = [c for c in source if c.key not in reached_by_tests and c.change != "removed"]
    breaking_used = [c for c in source if c.breaking and fan.get(c.key)]
    top = sorted(((fan.get(c.key, 0), c.name) for c in source), key=lambda t: (-t[0], t[1]))[:5]
    level = ("high" if breaking_used or any(c.public for c in untested if fan.get(c.key))
             else "medium" if untested or sum(fan.values()) > 10 or any(c.breaking for c in public) else "low")
    return {"level": level,
            "public_api": [f"{c.change} {c.name}" for c in sorted(public, key=lambda c: (not c.breaking, c.name))][:20],
            "public_api_count": len(public),
            "breaking_with_dependents": [c.name for c in breaking_used][:20],
            "fan_in": {"direct": sum(fan.values()), "top": [{"name": n, "dependents": k} for k, n in top if k]},
            "untested": [c.name for c in untested][:20], "untested_count": len(untested)}
