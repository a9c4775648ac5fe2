"""Call-level edits resolved in place (indexer/assemble/overlay_refs.py) in several languages:
after any sequence of calls added, removed or renamed (and of comment lines, definitions
renamed and files rewritten, which move lines or run the graph step), in a real git
repository of Python, TypeScript, Go, Rust or Java files, the incremental index's graph
tables equal a clean build's of the same tree, row for row, edges into the edited file from
the other files included."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from codeagent.format.overlay import GRAPH_TABLES
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import open_index
from repo_helpers import GitRepo, examples

NAMES = ["alpha", "beta", "gamma"]


def _title(name: str) -> str:
    return name[0].upper() + name[1:]


def _py(path: str, defs: list[str], calls: list[str], imports: list[str]) -> list[str]:
    lines = [f"from pkg.c import {n}" for n in imports if path != "pkg/c.py"]
    for i, name in enumerate(defs):
        lines += [f"def {name}():", *([f"    {c}()" for c in calls] or ["    pass"])]
        if i == 0:
            lines += [f"class K{_title(name)}:", f"    def {name}(self):", f"        return {name}()"]
        if i == 1:  # a subclass calling an inherited method through self
            lines += [f"class K{_title(name)}(K{_title(defs[0])}):", f"    def {name}(self):",
                      f"        return self.{defs[0]}()"]
    return lines + [f"{c}()" for c in calls]


def _ts(path: str, defs: list[str], calls: list[str], imports: list[str]) -> list[str]:
    lines = [f"import {{ {n} }} from './lib/c';" for n in imports if not path.startswith("lib/")]
    for i, name in enumerate(defs):
        lines += [f"export function {name}() {{", *[f"  {c}();" for c in calls], "}"]
        if i == 0:
            lines += [f"export class K{_title(name)} {{", f"  {name}() {{", f"    return {name}();", "  }", "}"]
        if i == 1:
            lines += [f"export class K{_title(name)} extends K{_title(defs[0])} {{", f"  {name}() {{",
                      f"    return this.{defs[0]}();", "  }", "}"]
    return lines + [f"{c}();" for c in calls]


def _go(path: str, defs: list[str], calls: list[str], imports: list[str]) -> list[str]:
    inner = path.startswith("c/")
    name_of = _title if inner else str
    lines = ["package c" if inner else "package main", ""]
    if imports and not inner:
        lines += ['import "example.com/m/c"', ""]
    for i, name in enumerate(defs):
        lines += [f"func {name_of(name)}() {{", *[f"\t{name_of(c)}()" for c in calls], "}"]
        if i == 0:
            lines += [f"type K{_title(name)} struct{{}}", f"func (k *K{_title(name)}) {name}() int {{",
                      f"\t{name_of(name)}()", "\treturn 1", "}", f"func (k *K{_title(name)}) run() int {{",
                      f"\treturn k.{name}()", "}"]
    return lines


def _rs(path: str, defs: list[str], calls: list[str], imports: list[str]) -> list[str]:
    lines = ["mod b;", "mod c;"] if path == "src/lib.rs" else []
    lines += [f"use crate::c::{n};" for n in imports if path != "src/c.rs"]
    for i, name in enumerate(defs):
        lines += [f"pub fn {name}() {{", *[f"    {c}();" for c in calls], "}"]
        if i == 0:
            lines += [f"pub struct K{_title(name)};", f"impl K{_title(name)} {{", f"    pub fn {name}(&self) -> i32 {{",
                      f"        {name}();", "        1", "    }", "    pub fn run(&self) -> i32 {",
                      f"        self.{name}()", "    }", "}"]
    return lines


def _java(path: str, defs: list[str], calls: list[str], imports: list[str]) -> list[str]:
    package, cls = path.split("/")[0], Path(path).stem
    lines = [f"package {package};", ""] + (["import q.C;", ""] if imports and package == "p" else [])
    lines.append(f"public class {cls} {{")
    for i, name in enumerate(defs):
        lines += [f"  static void {name}() {{", *[f"    {c}();" for c in calls], "  }"]
        if i == 0:
            lines += [f"  static class K{_title(name)} {{", f"    int {name}() {{", f"      {name}();", "      return 1;",
                      "    }", "  }"]
        if i == 1:
            lines += [f"  static class K{_title(name)} extends K{_title(defs[0])} {{", f"    int {name}() {{",
                      f"      return this.{defs[0]}();", "    }", "  }"]
    return lines + ["}"]


# Per language: its files, the files no edit touches, the module template (functions; a class,
# and a subclass or a method calling another through its receiver), the call lines an edit adds
# (repository functions and methods, another file's, a library's: inert, and a method through
# self/this: resolved through the class's ancestry), the line comment and the statement terminator.
LANGUAGES = {
    "python": (["a.py", "b.py", "pkg/__init__.py", "pkg/c.py"], {}, _py,
               ["alpha", "beta", "KAlpha().alpha", "gamma", "len", "self.alpha"], "#", ""),
    "typescript": (["a.ts", "b.ts", "lib/c.ts"], {}, _ts,
                   ["alpha", "beta", "new KAlpha().alpha", "gamma", "console.log", "this.alpha"], "//", ";"),
    "go": (["main.go", "b.go", "c/c.go"], {"go.mod": "module example.com/m\n\ngo 1.21\n"}, _go,
           ["alpha", "beta", "new(KAlpha).alpha", "c.Gamma", "fmt.Println", "k.alpha"], "//", ""),
    "rust": (["src/lib.rs", "src/b.rs", "src/c.rs"], {}, _rs,
             ["alpha", "beta", "KAlpha.alpha", "crate::c::gamma", "println!", "self.alpha"], "//", ";"),
    "java": (["p/A.java", "p/B.java", "q/C.java"], {}, _java,
             ["alpha", "beta", "new A.KAlpha().alpha", "C.gamma", "System.out.println", "this.alpha"], "//", ";"),
}
_NAMED = re.compile(r"\b(" + "|".join(NAMES) + r")\b")
_KEYWORDS = ("import ", "from ", "use ", "mod ", "package ", "return ", "def ", "func ", "fn ", "pub ", "export ",
             "static ", "class ", "type ", "impl ", "int ", "public ")


def _write(repo: GitRepo, language: str, path: str, parts: tuple) -> None:
    repo.write(path, "\n".join(LANGUAGES[language][2](path, *parts)) + "\n")


def _is_call(line: str) -> bool:
    text = line.strip()
    return text.endswith((")", ");")) and not text.startswith(_KEYWORDS)


def _apply(repo: GitRepo, language: str, edit: tuple) -> None:
    """One edit of one file: a call line added after a function's opening line (or at the
    end of a Python module), a call line removed, a name renamed in a call line or in any
    line (a definition's too), a comment line inserted, or the file rewritten."""
    files, _, _, calls, comment, end = LANGUAGES[language]
    kind, index, at, arg = edit
    path = files[index % len(files)]
    if kind == "write":
        _write(repo, language, path, arg)
        return
    target = repo.path / path
    lines = target.read_text().splitlines()
    if kind == "call":
        heads = [i for i, line in enumerate(lines) if line.rstrip().endswith(("{", ":")) and "(" in line]
        spots = [(i + 1, re.match(r"\s*", lines[i]).group() + ("    " if language == "python" else "  ")) for i in heads]
        spots += [(len(lines), "")] if language in ("python", "typescript") else []
        if spots:
            i, indent = spots[at % len(spots)]
            lines[i:i] = [f"{indent}{calls[arg % len(calls)]}(){end}"]
    elif kind == "uncall":
        found = [i for i, line in enumerate(lines) if _is_call(line)]
        if found:
            del lines[found[at % len(found)]]
    elif kind in ("rename", "rename_call"):
        found = [i for i, line in enumerate(lines) if _NAMED.search(line) and (kind == "rename" or _is_call(line))]
        if found:
            i = found[at % len(found)]
            lines[i] = _NAMED.sub([*NAMES, "delta"][arg % 4], lines[i], count=1)
    else:
        lines[at % (len(lines) + 1):at % (len(lines) + 1)] = [f"{comment} note"]
    target.write_text("\n".join(lines) + "\n")


def _graph(root: Path) -> dict[str, list]:
    with open_index(root) as view:
        return {t: sorted(view.sql(f"SELECT * FROM {t}"), key=repr) for t in GRAPH_TABLES}


def _clean_graph(root: Path, into: Path) -> dict[str, list]:
    shutil.rmtree(into, ignore_errors=True)
    shutil.copytree(root, into, ignore=shutil.ignore_patterns(".codeagent", ".git"))
    build(BuildOptions(repo=into, jobs=1))
    return _graph(into)


def _start(tmp: Path, language: str, contents: list[tuple]) -> GitRepo:
    files, fixed, *_ = LANGUAGES[language]
    repo = GitRepo.create(tmp / "tree")
    repo.write_many(fixed)
    for path, parts in zip(files, contents):
        _write(repo, language, path, parts)
    repo.commit("start")
    build(BuildOptions(repo=repo.path, jobs=1))
    return repo


SUBSETS = st.lists(st.sampled_from(NAMES), max_size=3, unique=True)
PARTS = st.tuples(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True), SUBSETS, SUBSETS)
CALL_EDITS = st.tuples(st.sampled_from(["call", "call", "uncall", "rename_call"]), st.integers(0, 3),
                       st.integers(0, 60), st.integers(0, 5))
OTHER_EDITS = st.one_of(st.tuples(st.sampled_from(["comment", "rename"]), st.integers(0, 3), st.integers(0, 60),
                                  st.integers(0, 4)),
                        st.tuples(st.just("write"), st.integers(0, 3), st.just(0), PARTS))


@given(language=st.sampled_from(sorted(LANGUAGES)), contents=st.lists(PARTS, min_size=4, max_size=4),
       edits=st.lists(st.one_of(CALL_EDITS, CALL_EDITS, CALL_EDITS, OTHER_EDITS), min_size=1, max_size=5))
@settings(max_examples=examples(10, long=60), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
def test_graph_after_call_edits_equals_a_clean_builds(tmp_path_factory, language, contents, edits):
    """After each edit, built as the watcher's first phase would (graph_later: a call edit is
    resolved in place, an edit of definitions leaves its step pending, then run), the graph
    tables equal a clean build's of the same files."""
    tmp = tmp_path_factory.mktemp(language)
    repo = _start(tmp, language, contents)
    for i, edit in enumerate(edits):
        _apply(repo, language, edit)
        if build(BuildOptions(repo=repo.path, jobs=1, graph_later=True)).graph_pending:
            assert not build(BuildOptions(repo=repo.path, jobs=1)).graph_pending
        got, want = _graph(repo.path), _clean_graph(repo.path, tmp / "clean")
        for table in GRAPH_TABLES:
            assert got[table] == want[table], f"{language}: {table} differs after {edits[:i + 1]}"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_call_of_a_repository_function_added_renamed_and_removed_is_resolved_in_place(tmp_path, language):
    """In each language, adding a call of a function another file defines (and imports or
    reaches by its package), renaming it to one the file defines, then removing it leaves no
    graph step pending: each is resolved in place, with the edges a clean build gives; the
    added call's edge points into the other file."""
    files, _, _, calls, _, _ = LANGUAGES[language]
    repo = _start(tmp_path, language, [(["alpha", "beta"], ["beta"], ["gamma"])] * 2 + [(["gamma"], [], [])] * 2)
    other = calls[3]
    before = _graph(repo.path)
    _apply(repo, language, ("call", 0, 0, 3))
    for edit in (None, ("rename_call", 0, 0, 0), ("uncall", 0, 0, 0)):
        if edit:
            _apply(repo, language, edit)
        assert not build(BuildOptions(repo=repo.path, jobs=1, graph_later=True)).graph_pending, (language, edit)
        got = _graph(repo.path)
        assert got == _clean_graph(repo.path, tmp_path / "clean"), (language, edit)
        if edit is None:
            added = {(e[1], e[4]) for e in got["edges"] if e[5] == "calls"} - {
                (e[1], e[4]) for e in before["edges"] if e[5] == "calls"}
            assert added == {(files[0], files[-1])}, (language, other, added)
