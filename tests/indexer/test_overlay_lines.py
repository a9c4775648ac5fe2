"""An overlay's graph carried across an edit that moves lines only (indexer/assemble/overlay_lines.py)
or brought up to date in place across one that changes references only (overlay_refs.py):
after any sequence of such edits, and of edits that change definitions, calls and imports
(which run the graph step), the incremental index's graph answers what a clean build of the
same tree answers."""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.format.overlay import GRAPH_TABLES
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import IndexFollower, callees, callers, open_index
from repo_helpers import examples

NAMES = ["alpha", "beta", "gamma"]
FILES = ["a.py", "b.py", "pkg/__init__.py", "pkg/c.py"]


def _module(defs: list[str], calls: list[str], imports: list[str]) -> str:
    """Functions, a class with a method of the same name, module-level calls (which see the
    nearest definition before them) and a redefinition after them."""
    lines = [f"from pkg.c import {name}" for name in imports]
    for i, name in enumerate(defs):
        lines += [f"def {name}():", *([f"    {c}()" for c in calls] or ["    pass"])]
        if i == 0:
            lines += [f"class K{name.title()}:", f"    def {name}(self):", f"        return {name}()"]
    lines += [f"{c}()" for c in calls]
    if defs:
        lines += [f"def {defs[0]}():", "    return 1"]
    return "\n".join(lines) + "\n"


SUBSETS = st.lists(st.sampled_from(NAMES), max_size=3, unique=True)
CONTENT = st.builds(_module, SUBSETS, SUBSETS, SUBSETS)
# Edits that move lines only: lines inserted at any position, comment or blank lines removed.
QUIET = st.one_of(
    st.tuples(st.just("insert"), st.sampled_from(FILES), st.integers(0, 40),
              st.sampled_from(["", "# note", "    # indented note", "", ""]), st.integers(1, 3)),
    st.tuples(st.just("drop"), st.sampled_from(FILES), st.integers(0, 40), st.just(""), st.just(1)),
)
LOUD = st.tuples(st.just("write"), st.sampled_from(FILES), st.just(0), CONTENT, st.just(0))
# Call edits: a line calling a builtin (an inert reference: no symbol is named so, the graph is
# carried) or a name the files define (the graph step runs), at any position and indentation.
CALLS = st.tuples(st.just("call"), st.sampled_from(FILES), st.integers(0, 40),
                  st.sampled_from(["print('probe')", "    len('probe')", "x = 1 + len([])", "alpha()",
                                   "    beta()", "KAlpha().alpha()"]), st.integers(1, 2))
# A call removed, or a name renamed in one line: a call's (resolved in place) or a definition's
# (`def alpha():` -> `def delta():`, the graph step runs), `delta` defined nowhere else.
RENAMES = st.one_of(
    st.tuples(st.just("uncall"), st.sampled_from(FILES), st.integers(0, 40), st.just(""), st.just(1)),
    st.tuples(st.just("rename"), st.sampled_from(FILES), st.integers(0, 40), st.sampled_from([*NAMES, "delta"]),
              st.just(1)),
)
_NAMED = re.compile(r"\b(" + "|".join(NAMES) + r")\b")


def _apply(root: Path, edit: tuple) -> None:
    kind, path, at, text, count = edit
    target = root / path
    if kind == "write":
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return
    lines = target.read_text().splitlines() if target.exists() else []
    if kind in ("insert", "call"):
        at %= len(lines) + 1
        lines[at:at] = [text] * count
    elif kind == "uncall":
        found = [i for i, line in enumerate(lines) if line.strip().endswith(")") and not line.startswith("from ")]
        if found:
            del lines[found[at % len(found)]]
    elif kind == "rename":
        found = [i for i, line in enumerate(lines) if _NAMED.search(line) and not line.startswith("from ")]
        if found:
            i = found[at % len(found)]
            lines[i] = _NAMED.sub(text, lines[i], count=1)
    else:
        quiet = [i for i, line in enumerate(lines) if not line.strip() or line.strip().startswith("#")]
        if quiet:
            del lines[quiet[at % len(quiet)]]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines) + "\n")


def _graph(view) -> dict[str, object]:
    """The graph tables' rows (sorted multisets) and the callers and callees of every name."""
    out: dict[str, object] = {t: sorted(view.sql(f"SELECT * FROM {t}"), key=repr) for t in GRAPH_TABLES}
    for name in NAMES + [f"K{n.title()}" for n in NAMES]:
        for fn in (callers, callees):
            try:
                edges = fn(view, name).edges
            except Exception as exc:  # ambiguous or unknown: the same error both ways
                out[f"{fn.__name__}:{name}"] = type(exc).__name__
                continue
            out[f"{fn.__name__}:{name}"] = sorted(
                (e.path, e.line, e.kind, e.confidence, e.target, e.dst_path) for e in edges)
    return out


def _clean_graph(root: Path, into: Path) -> dict[str, object]:
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(root, into, ignore=shutil.ignore_patterns(".codeagent"))
    build(BuildOptions(repo=into, jobs=1))
    with open_index(into) as view:
        return _graph(view)


START = st.fixed_dictionaries({p: CONTENT for p in FILES})
SUPPRESS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]


@given(start=START, edits=st.lists(st.one_of(QUIET, QUIET, CALLS, RENAMES, LOUD), min_size=1, max_size=4),
       later=st.lists(st.booleans(), max_size=4), pend=st.lists(st.booleans(), max_size=4))
@settings(max_examples=examples(6, long=40), deadline=None, suppress_health_check=SUPPRESS)
def test_graph_after_each_edit_equals_a_clean_builds(start, edits, later, pend):
    """After every edit (built with or without its graph step left to the next build, which
    may be the next edit's: `pend`), once the graph is complete, callers, callees and the
    graph tables equal a clean build's; an edit that moves lines only after a complete graph
    leaves no graph step pending. A long-lived reader following every build (merging its
    resident arrays from the previous view's) answers as a one-shot reader."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        for path, text in start.items():
            _apply(root, ("write", path, 0, text, 0))
        build(BuildOptions(repo=root, jobs=1))
        follower = IndexFollower(root)
        follower.warm_on_swap = False
        try:
            _edit_and_compare(root, Path(tmp) / "clean", edits, (later, pend), follower)
        finally:
            follower.close()


def _edit_and_compare(root: Path, clean: Path, edits: list, flags: tuple[list, list], follower: IndexFollower) -> None:
    later, pend = flags
    complete = True  # the graph before this edit is its manifest's
    for i, edit in enumerate(edits):
        _apply(root, edit)
        quiet = edit[0] == "insert" or edit[0] == "drop"  # unless carried, left pending
        calls = edit[0] in ("call", "uncall", "rename")  # a graph step left pending runs in the next build
        done = build(BuildOptions(repo=root, jobs=1, graph_later=quiet or calls or (i < len(later) and later[i])))
        if quiet and complete:
            assert not done.graph_pending, f"{edit} left its graph step pending"
        complete = not done.graph_pending
        if not complete and i < len(pend) and pend[i] and i + 1 < len(edits):
            continue  # the next edit is built on this one's pending graph
        if not complete:
            assert not build(BuildOptions(repo=root, jobs=1)).graph_pending
            complete = True
        with open_index(root) as view:
            got = _graph(view)
        with follower.view() as view:  # a long-lived reader: graph answers from merged resident arrays
            assert view.manifest_id == done.manifest_id
            assert _graph(view) == got, f"a following reader differs after {edits[:i + 1]}"
        want = _clean_graph(root, clean)
        for key in want:
            assert got[key] == want[key], f"{key} differs after {edits[:i + 1]}"


def test_a_call_edit_leaves_no_graph_step_pending_and_a_new_definition_does():
    """Appending a call of a builtin (`len`, which no file defines) carries the graph; a call
    of a function or a method the files define (`gamma`: imported) is resolved in place (overlay_refs.py): no
    graph step is left pending for either. A new definition leaves its step pending (another
    file's references may resolve to it). Each ends with the graph a clean build gives, and
    the appended call's edges are those a clean build resolves."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        for path in FILES:
            _apply(root, ("write", path, 0, _module(["alpha"] if path == "a.py" else ["alpha", "gamma"], ["beta"],
                                                    ["gamma"]), 0))
        build(BuildOptions(repo=root, jobs=1))
        for text, pending, called in (("len('probe')", False, set()), ("print(len([]))", False, set()),
                                      ("alpha()", False, {"alpha"}), ("KAlpha().alpha()", False, {"KAlpha", "KAlpha.alpha"}),
                                      ("gamma()", False, {"gamma"}), ("def delta():\n    return 1", True, set()),
                                      ("delta()", False, {"delta"}), ("len('again')", False, set())):
            (root / "a.py").write_text((root / "a.py").read_text() + text + "\n")
            done = build(BuildOptions(repo=root, jobs=1, graph_later=True))
            assert done.graph_pending is pending, text
            if done.graph_pending:
                build(BuildOptions(repo=root, jobs=1))
            with open_index(root) as view:
                got = _graph(view)
            assert got == _clean_graph(root, Path(tmp) / "clean"), text
            lines = len((root / "a.py").read_text().splitlines())
            last_calls = {e[7] for e in got["edges"] if e[1] == "a.py" and e[2] == lines and e[5] == "calls"}
            assert last_calls == called, text


def test_removing_and_renaming_calls_of_repository_functions_is_resolved_in_place():
    """Removing a call of a repository function, or renaming it to another, leaves no graph
    step pending and the graph a clean build gives: the old call's edges are gone and the new
    one's are there."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        for path in FILES:
            _apply(root, ("write", path, 0, _module(["alpha", "beta"], ["beta", "gamma"], ["gamma"]), 0))
        build(BuildOptions(repo=root, jobs=1))
        text = (root / "b.py").read_text()
        for after in (text.replace("\nbeta()\n", "\nalpha()\n"), text.replace("\nbeta()\n", "\n"), text):
            (root / "b.py").write_text(after)
            done = build(BuildOptions(repo=root, jobs=1, graph_later=True))
            assert not done.graph_pending
            with open_index(root) as view:
                got = _graph(view)
            assert got == _clean_graph(root, Path(tmp) / "clean")


def test_an_edit_after_a_graph_left_pending_under_a_kept_layer_runs_its_step():
    """Two files' new definitions left with their graph step pending (the watcher's first
    phase), then a comment edit of a third file, built on that overlay: the new top keeps the
    pending overlay's file as a layer beneath it, so the change since the carried graph (the
    base's) spans paths whose rows the top does not hold. The edit is not carried (those rows
    read from the base would look unchanged): its graph step runs, and the graph is a clean
    build's."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "tree"
        for name in "abcdef":
            _apply(root, ("write", f"{name}.py", 0, f"def f_{name}():\n    return 1\n", 0))
        build(BuildOptions(repo=root, jobs=1))
        _apply(root, ("write", "a.py", 0, "def f_a():\n    return 1\ndef g_a():\n    return f_b()\n", 0))
        _apply(root, ("write", "b.py", 0, "def f_b():\n    return 1\ndef g_b():\n    return f_a()\n", 0))
        assert build(BuildOptions(repo=root, jobs=1, graph_later=True)).graph_pending
        _apply(root, ("insert", "c.py", 2, "# note", 1))
        assert build(BuildOptions(repo=root, jobs=1, graph_later=True)).graph_pending
        assert not build(BuildOptions(repo=root, jobs=1)).graph_pending
        with open_index(root) as view:
            got = _graph(view)
        assert got == _clean_graph(root, Path(tmp) / "clean")
        assert {e[7] for e in got["edges"] if e[1] in ("a.py", "b.py") and e[5] == "calls"} == {"f_a", "f_b"}
