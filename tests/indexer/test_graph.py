"""The symbol graph: module names, fq names and resolved edges, on real repositories."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent import format as fmt
from codeagent.indexer.build import BuildOptions, build
from codeagent.indexer.assemble import graph
from codeagent.indexer.assemble.tables import PER_PATH_TABLES
from codeagent.indexer.assemble.graph import NAME_CAP
from codeagent.indexer.assemble.module_names import (FileModule, file_module, fq_name, import_binding, python_module,
                                            resolve_js_relative, resolve_python_relative,
                                            rust_module)
from codeagent.store import Store

PROJECT = {
    "pkg/__init__.py": "from .util import helper\n",
    "pkg/util.py": (
        "import os\n\n"
        "def helper(x):\n    return os.path.join(x, 'a')\n\n"
        "class Base:\n"
        "    def run(self):\n        return self.step()\n\n"
        "    def step(self):\n        return 1\n"),
    "pkg/app.py": (
        "from pkg.util import Base, helper\n"
        "from . import util\n"
        "import pkg.util as u\n"
        "import numpy as np\n\n"
        "class Child(Base):\n"
        "    def step(self):\n        return helper(2) + util.helper(3) + u.helper(4)\n\n"
        "    def go(self):\n        self.run()\n        local()\n        mystery()\n"
        "        np.array([1])\n\n"
        "def local():\n    return Child()\n"),
    "other.py": "def mystery():\n    pass\n\ndef array():\n    pass\n",
}


def _build(repo, rev: str = "main"):
    result = build(BuildOptions(repo=repo.path, rev=rev, jobs=1))
    return result, Store(repo.path / ".codeagent").assembled_dir(result.manifest_id) / fmt.DUCKDB_FILE


def _edges(db: Path, kind: str | None = None) -> set[tuple]:
    """(kind, confidence, src fq, dst fq or dst path, target) of every edge."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute("""
            SELECT e.kind, e.confidence, coalesce(a.fq_name, e.src_path),
                   coalesce(b.fq_name, e.dst_path), e.target
            FROM edges e LEFT JOIN symbol_names a ON a.symbol_id = e.src_id
            LEFT JOIN symbol_names b ON b.symbol_id = e.dst_id""").fetchall()
    finally:
        con.close()
    return {r for r in rows if kind is None or r[0] == kind}


def _query(db: Path, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@pytest.fixture
def project(git_repo):
    git_repo.write_many(PROJECT)
    git_repo.commit("project")
    return git_repo


def test_jvm_module_names_from_any_source_root() -> None:
    """A multi-module build's source roots (`okhttp/src/jvmTest/kotlin/`) are not packages."""
    modules = {p: file_module(p, "kotlin" if p.endswith(".kt") else "java", set()).module for p in (
        "src/main/java/com/acme/Shape.java", "retrofit/src/main/java/retrofit2/Call.java",
        "okhttp/src/jvmTest/kotlin/okhttp3/internal/CacheTest.kt", "Top.java", "lib/Util.kt")}
    assert modules == {"src/main/java/com/acme/Shape.java": "com.acme",
                       "retrofit/src/main/java/retrofit2/Call.java": "retrofit2",
                       "okhttp/src/jvmTest/kotlin/okhttp3/internal/CacheTest.kt": "okhttp3.internal",
                       "Top.java": "", "lib/Util.kt": "lib"}, modules


_dotted = st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4).map(".".join)


@given(names=st.lists(_dotted, min_size=1, max_size=4))
def test_a_files_declared_package_is_what_its_package_symbols_share(names) -> None:
    """Every symbol under one of the file's packages keeps its full name after the module
    is prefixed (fq_name), so several top-level blocks never nest in the first one."""
    from codeagent.indexer.assemble.module_names import declared_package, fq_name

    module = declared_package(names)
    assert all(fq_name(module, f"{n}.X", ".") == f"{n}.X" for n in names)
    assert module == names[0] if all(n == names[0] or n.startswith(names[0] + ".") for n in names) else True
    assert declared_package([]) is None and declared_package(["a.b", "a.c"]) == "a"
    assert declared_package(["a", "b"]) == "" and file_module("x/A.scala", "scala", set(), "").module == ""


def test_python_module_names() -> None:
    packages = {"json", "src/pkg"}
    assert python_module("json/decoder.py", packages) == ("json.decoder", "json")
    assert python_module("json/__init__.py", packages) == ("json", "json")
    assert python_module("src/pkg/mod.py", packages) == ("pkg.mod", "pkg")
    assert python_module("os.py", packages) == ("os", "")
    assert python_module("tests/test_x.py", packages) == ("tests.test_x", "tests")
    assert resolve_python_relative("..m", "a.b.c") == "a.b.m"
    assert resolve_python_relative(".", "a.b") == "a.b"


def test_other_language_module_names() -> None:
    assert rust_module("src/lib.rs") == "crate"
    assert rust_module("src/net/mod.rs") == "crate::net"
    assert rust_module("crates/foo-bar/src/x/y.rs") == "foo_bar::x::y"
    assert resolve_js_relative("../lib/index.js", "src/app") == "src/lib"
    assert fq_name("com.acme", "com.acme.Foo.bar", ".") == "com.acme.Foo.bar"
    assert fq_name("pkg.mod", "C.m", ".") == "pkg.mod.C.m"


def test_import_bindings() -> None:
    fm = FileModule("pkg/sub/app.py", "python", "pkg.sub.app", "pkg.sub", ".")
    assert import_binding(fm, "helper", "..util", "h", set()).__dict__ == {
        "local": "h", "fq": "pkg.util.helper", "module": "pkg.util"}
    plain = import_binding(fm, "os.path", "os.path", "", set())
    assert (plain.local, plain.fq, plain.module) == ("os", "os", "os.path")
    star = import_binding(fm, "*", "pkg.util", "", set())
    assert (star.local, star.fq) == ("*", "pkg.util")
    go = FileModule("cmd/main.go", "go", "cmd", "cmd", ".")
    b = import_binding(go, "github.com/acme/app/internal/auth", "", "", {"internal/auth", "cmd"})
    assert (b.local, b.fq) == ("auth", "internal/auth")


def test_fq_names_and_modules(project) -> None:
    _, db = _build(project)
    names = dict(_query(db, """SELECT s.qualified_name || '@' || s.path, n.fq_name
        FROM symbols s JOIN symbol_names n USING (symbol_id)"""))
    assert names["Child.step@pkg/app.py"] == "pkg.app.Child.step"
    assert names["helper@pkg/util.py"] == "pkg.util.helper"
    assert names["mystery@other.py"] == "other.mystery"
    mods = dict(_query(db, "SELECT path, module FROM modules"))
    assert mods == {"pkg/__init__.py": "pkg", "pkg/util.py": "pkg.util", "pkg/app.py": "pkg.app",
                    "other.py": "other"}


def test_calls_resolve_exact_through_imports_and_name_otherwise(project) -> None:
    _, db = _build(project)
    calls = _edges(db, "calls")
    step = "pkg.app.Child.step"
    assert ("calls", "exact", step, "pkg.util.helper", "helper") in calls
    assert ("calls", "exact", step, "pkg.util.helper", "util.helper") in calls
    assert ("calls", "exact", step, "pkg.util.helper", "u.helper") in calls
    assert ("calls", "exact", "pkg.app.Child.go", "pkg.app.local", "local") in calls
    assert ("calls", "exact", "pkg.app.local", "pkg.app.Child", "Child") in calls
    assert ("calls", "exact", "pkg.util.Base.run", "pkg.util.Base.step", "self.step") in calls
    # self.run is inherited: found in the resolved base class
    assert ("calls", "exact", "pkg.app.Child.go", "pkg.util.Base.run", "self.run") in calls
    assert ("calls", "name", "pkg.app.Child.go", "other.mystery", "mystery") in calls
    # np is bound by an import of a module outside the repo: no guess at other.array
    assert not [e for e in calls if e[4] == "np.array"]


def test_imports_inherits_overrides_contains(project) -> None:
    _, db = _build(project)
    edges = _edges(db)
    assert ("imports", "exact", "pkg/app.py", "pkg.util.Base", "Base") in edges
    assert ("imports", "exact", "pkg/app.py", "pkg/util.py", "util") in edges
    assert ("imports", "exact", "pkg/__init__.py", "pkg.util.helper", "helper") in edges
    assert ("inherits", "exact", "pkg.app.Child", "pkg.util.Base", "Base") in edges
    assert ("overrides", "exact", "pkg.app.Child.step", "pkg.util.Base.step", "step") in edges
    assert ("contains", "exact", "pkg.util.Base", "pkg.util.Base.run", "run") in edges
    lines = _query(db, "SELECT src_line FROM edges WHERE kind = 'calls' AND target = 'u.helper'")
    assert lines == [(8,)]


def test_reexport_and_attribute_access_resolve_exact(git_repo) -> None:
    git_repo.write_many({
        "lib/__init__.py": "from .impl import Engine\nfrom .more import *\n",
        "lib/impl.py": "class Engine:\n    def start(self):\n        return 1\n",
        "lib/more.py": "def extra():\n    return 2\n",
        "main.py": ("import lib\nfrom lib import Engine\n\n"
                    "class Car(lib.Engine):\n    def start(self):\n        return lib.extra()\n\n"
                    "def drive():\n    return Engine().start()\n"),
    })
    git_repo.commit("lib")
    _, db = _build(git_repo)
    edges = _edges(db)
    assert ("inherits", "exact", "main.Car", "lib.impl.Engine", "lib.Engine") in edges
    assert ("overrides", "exact", "main.Car.start", "lib.impl.Engine.start", "start") in edges
    assert ("calls", "exact", "main.Car.start", "lib.more.extra", "lib.extra") in edges
    assert ("calls", "exact", "main.drive", "lib.impl.Engine", "Engine") in edges
    assert ("imports", "exact", "main.py", "lib.impl.Engine", "Engine") in edges


def test_name_matches_are_capped(git_repo) -> None:
    files = {f"m{i:02d}.py": "def dup():\n    return 0\n" for i in range(NAME_CAP + 2)}
    files["few_a.py"] = "def rare():\n    return 1\n"
    files["few_b.py"] = "def rare():\n    return 2\n"
    files["caller.py"] = "def use():\n    dup()\n    rare()\n"
    git_repo.write_many(files)
    git_repo.commit("many")
    _, db = _build(git_repo)
    calls = _edges(db, "calls")
    assert {e[3] for e in calls if e[4] == "rare"} == {"few_a.rare", "few_b.rare"}
    assert {e[1] for e in calls if e[4] == "rare"} == {"name"}
    assert not [e for e in calls if e[4] == "dup"]  # too ambiguous, and none in caller.py
    per_ref = _query(db, """SELECT max(n) FROM (SELECT count(*) AS n FROM edges
        GROUP BY src_path, src_line, target, kind)""")
    assert per_ref[0][0] <= NAME_CAP


def test_shifted_symbol_keeps_ids_and_edges(project) -> None:
    _, db1 = _build(project)
    project.write("pkg/util.py", "# a comment\n\n\n" + PROJECT["pkg/util.py"])
    project.commit("shift")
    result, db2 = _build(project)
    assert result.files_parsed == 1
    q = """SELECT qualified_name, stable_id, symbol_id, start_line FROM symbols
           WHERE path = 'pkg/util.py' ORDER BY qualified_name"""
    before, after = _query(db1, q), _query(db2, q)
    assert [r[:3] for r in before] == [r[:3] for r in after]
    assert all(b[3] + 3 == a[3] for b, a in zip(before, after))
    assert _edges(db1) == _edges(db2)


def test_incremental_assembly_matches_fresh_assembly(project, tmp_path) -> None:
    _build(project)
    project.write("pkg/app.py", PROJECT["pkg/app.py"].replace("mystery()", "helper(9)"))
    project.write("extra.py", "from pkg.util import Base\n\nclass Leaf(Base):\n    def run(self):\n        return 0\n")
    project.commit("edit")
    _, incremental = _build(project)
    assert graph.LAST_TIMINGS["full"] == 0.0  # the step took the incremental path
    fresh = build(BuildOptions(repo=project.path, rev="main", store_dir=tmp_path / "fresh", jobs=1))
    fresh_db = Store(tmp_path / "fresh").assembled_dir(fresh.manifest_id) / fmt.DUCKDB_FILE
    assert _edges(incremental) == _edges(fresh_db)
    assert ("overrides", "exact", "extra.Leaf.run", "pkg.util.Base.run", "run") in _edges(incremental)


MID = ("from pkg.util import Base\n\nclass First:\n    def step(self):\n        return 2\n\n    def only(self):\n        return 3\n\nclass Mid(Base):\n    pass\n")
EDITS = [
    ("add subclass file", {"extra.py": "from pkg.util import Base\n\nclass Leaf(Base):\n"
                                       "    def run(self):\n        return self.step()\n"}),
    ("re-export from the package", {"pkg/__init__.py": "from .util import helper, Base\n",
                                    "use.py": "import pkg\n\nclass K(pkg.Base):\n    pass\n\n"
                                              "def f():\n    return pkg.helper(1)\n"}),
    ("rename the base class", {"pkg/util.py": PROJECT["pkg/util.py"].replace("Base", "Root")}),
    ("restore it", {"pkg/util.py": PROJECT["pkg/util.py"]}),
    ("remove a module", {"other.py": None}),
    ("define a name elsewhere", {"more.py": "def mystery():\n    return 1\n\ndef step():\n    pass\n"}),
    ("import a module not in the repo yet", {"late_use.py": "import later\n\ndef f():\n"
                                                              "    return later.mystery()\n"}),
    ("the module appears", {"later.py": "X = 1\n"}),
    ("typed receivers", {"typed.py": ("from extra import Leaf\nfrom pkg.util import Base\n\n"
                                      "def g(x: Leaf, b: Base):\n    x.run()\n    x.step()\n    b.step()\n")}),
    ("the receiver's type gets another base", {"extra.py": "class Leaf:\n    def run(self):\n        return 1\n"}),
    ("and its method goes", {"pkg/util.py": PROJECT["pkg/util.py"].replace("def step", "def stop")}),
    # a class below the rebased one, in a file the edit leaves alone: its overrides and self calls follow
    ("a grandchild in another file", {"mid.py": MID,
                                      "leaf2.py": ("from mid import Mid\n\nclass Grand(Mid):\n"
                                                   "    def stop(self):\n        return 4\n\n"
                                                   "    def go(self):\n        return self.only()\n")}),
    ("the middle class changes its base", {"mid.py": MID.replace("class Mid(Base)", "class Mid(First)")}),
    ("and changes it back", {"mid.py": MID}),
    # a second project holding its own copy of the package: each project's import means its copy
    ("a project vendors the package", {"proj/pkg/__init__.py": "from .util import helper\n",
                                       "proj/pkg/util.py": PROJECT["pkg/util.py"],
                                       "proj/run.py": "from pkg.util import helper\n\ndef main():\n    return helper(1)\n"}),
    ("and calls it from a file beside the copy", {"proj/pkg/more.py": "from pkg import util\n\ndef f():\n"
                                                                      "    return util.helper(2)\n"}),
]


def test_incremental_graph_equals_fresh_graph_through_an_edit_sequence(project, tmp_path) -> None:
    _build(project)
    for n, (message, files) in enumerate(EDITS):
        for rel, text in files.items():
            if text is None:
                project.remove(rel)
            else:
                project.write(rel, text)
        sha = project.commit(message)
        _, incremental = _build(project)
        assert graph.LAST_TIMINGS["full"] == 0.0, message
        fresh_store = tmp_path / f"fresh{n}"
        fresh = build(BuildOptions(repo=project.path, rev=sha, store_dir=fresh_store, jobs=1))
        fresh_db = Store(fresh_store).assembled_dir(fresh.manifest_id) / fmt.DUCKDB_FILE
        assert _edges(incremental) == _edges(fresh_db), message
        names = "SELECT symbol_id, fq_name FROM symbol_names ORDER BY ALL"
        assert _query(incremental, names) == _query(fresh_db, names), message


def test_other_languages_resolve_through_their_module_systems(git_repo) -> None:
    git_repo.write_many({
        "src/util/format.ts": ("export function formatDate(d: Date): string { return ''; }\n"
                               "export class Fmt { run(): string { return formatDate(new Date()); } }\n"),
        "src/app.ts": ("import { formatDate, Fmt } from './util/format';\n"
                       "class Sub extends Fmt { run(): string { return formatDate(new Date()); } }\n"),
        "internal/auth/auth.go": "package auth\n\nfunc Validate(t string) bool { return t != \"\" }\n",
        "cmd/app/main.go": ("package main\n\nimport \"github.com/acme/app/internal/auth\"\n\n"
                            "func main() { auth.Validate(\"x\") }\n"),
        "src/main/java/com/acme/Shape.java": "package com.acme;\npublic interface Shape { int area(); }\n",
        "src/main/java/com/acme/Square.java": ("package com.acme;\npublic class Square implements Shape "
                                               "{ public int area() { return 1; } }\n"),
        "c/util/x.h": "int helper(void);\n",
        "c/main.c": "#include \"util/x.h\"\n#include <stdio.h>\nint main(void) { return 0; }\n",
        "php/a.php": ("<?php\nclass B { function h() { return 1; } }\nclass A extends B "
                      "{ function f() { $this->g(); return parent::h(); } function g() {} }\n"),
        "cs/s.cs": ("class B { public virtual void N() {} }\nclass S : B "
                    "{ public override void N() { base.N(); this.O(); } void O() {} }\n"),
        "rs/p.rs": "struct P;\nimpl P { fn new() -> P { Self::make() } fn make() -> P { P } }\n",
    })
    git_repo.commit("polyglot")
    _, db = _build(git_repo)
    edges = _edges(db)
    assert ("inherits", "exact", "src/app.Sub", "src/util/format.Fmt", "Fmt") in edges
    assert ("calls", "exact", "src/app.Sub.run", "src/util/format.formatDate", "formatDate") in edges
    assert ("overrides", "exact", "src/app.Sub.run", "src/util/format.Fmt.run", "run") in edges
    assert ("calls", "exact", "cmd/app.main", "internal/auth.Validate", "auth.Validate") in edges
    assert ("implements", "exact", "com.acme.Square", "com.acme.Shape", "Shape") in edges
    assert ("overrides", "exact", "com.acme.Square.area", "com.acme.Shape.area", "area") in edges
    assert ("imports", "exact", "c/main.c", "c/util/x.h", "util/x.h") in edges
    assert ("calls", "exact", "A.f", "B.h", "parent.h") in edges  # PHP parent::
    assert ("calls", "exact", "A.f", "A.g", "this.g") in edges
    assert ("calls", "exact", "cs.S.N", "cs.B.N", "base.N") in edges  # C# base.
    assert ("overrides", "exact", "cs.S.N", "cs.B.N", "N") in edges
    assert ("calls", "exact", "rs::p::P::new", "rs::p::P::make", "Self.make") in edges
    assert not [e for e in edges if e[4] == "stdio.h"]


def _graph_after_removing(db: Path, copy: Path, gone: list[str], incremental: bool) -> tuple:
    import shutil

    shutil.copyfile(db, copy)
    con = duckdb.connect(str(copy))
    try:
        for table in PER_PATH_TABLES:
            con.execute(f"DELETE FROM {table} WHERE path IN (SELECT unnest(?::VARCHAR[]))", [gone])
        if incremental:
            con.execute("CREATE TEMP TABLE delta_removed AS SELECT unnest(?::VARCHAR[]) AS path", [gone])
            con.execute("CREATE TEMP TABLE delta_added(path VARCHAR)")
        graph.symbol_graph(con, None)
        assert graph.LAST_TIMINGS["full"] == (0.0 if incremental else 1.0)
        return sorted(con.execute("SELECT * FROM edges").fetchall(), key=repr)
    finally:
        con.close()


@pytest.fixture(scope="module")
def reexport_db(tmp_path_factory) -> Path:
    from repo_helpers import GitRepo

    repo = GitRepo.create(tmp_path_factory.mktemp("graph") / "repo")
    repo.write_many({**PROJECT,
                     "lib/__init__.py": "from .impl import Engine\nfrom .more import *\n",
                     "lib/impl.py": "from pkg.util import Base\n\nclass Engine(Base):\n"
                                    "    def start(self):\n        return self.run()\n",
                     "lib/more.py": "def extra():\n    return mystery()\n",
                     "main.py": "import lib\nfrom lib import Engine\n\nclass Car(lib.Engine):\n"
                                "    def start(self):\n        return lib.extra() + self.step()\n"})
    repo.commit("graph")
    return _build(repo)[1]


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gone=st.lists(st.sampled_from(sorted({**PROJECT, "lib/__init__.py": 1, "lib/impl.py": 1,
                                             "lib/more.py": 1, "main.py": 1})),
                     min_size=1, max_size=3, unique=True))
def test_incremental_removal_equals_full_recompute(reexport_db, tmp_path, gone) -> None:
    if any(p.endswith("__init__.py") for p in gone):
        gone = [p for p in gone if not p.endswith("__init__.py")] or ["main.py"]
    inc = _graph_after_removing(reexport_db, tmp_path / "inc.duckdb", gone, incremental=True)
    full = _graph_after_removing(reexport_db, tmp_path / "full.duckdb", gone, incremental=False)
    assert inc == full


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(added=st.lists(st.sampled_from(["other.py", "pkg/util.py", "pkg/app.py", "lib/impl.py",
                                       "lib/more.py", "main.py"]), min_size=1, max_size=3, unique=True))
def test_incremental_addition_equals_full_recompute(reexport_db, tmp_path, added) -> None:
    """Files removed (graph recomputed in full), then their rows put back as an incremental
    assembly would: the edges must be those of the untouched database."""
    import shutil

    copy = tmp_path / "grow.duckdb"
    shutil.copyfile(reexport_db, copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute(f"ATTACH '{reexport_db}' AS orig (READ_ONLY)")
        tables = PER_PATH_TABLES
        for table in tables:
            con.execute(f"DELETE FROM {table} WHERE path IN (SELECT unnest(?::VARCHAR[]))", [added])
        con.execute("DROP TABLE graph_version")
        graph.symbol_graph(con, None)
        for table in tables:
            con.execute(f"INSERT INTO {table} SELECT * FROM orig.{table} "
                        "WHERE path IN (SELECT unnest(?::VARCHAR[]))", [added])
        con.execute("CREATE TEMP TABLE delta_added AS SELECT unnest(?::VARCHAR[]) AS path", [added])
        con.execute("CREATE TEMP TABLE delta_removed(path VARCHAR)")
        graph.symbol_graph(con, None)
        assert graph.LAST_TIMINGS["full"] == 0.0
        grown = sorted(con.execute("SELECT * FROM edges").fetchall(), key=repr)
        original = sorted(con.execute("SELECT * FROM orig.edges").fetchall(), key=repr)
    finally:
        con.close()
    assert grown == original


_segment = st.text(alphabet="ab_./:\\-<>\"' *", max_size=12)


@settings(max_examples=300, deadline=None)
@given(path=_segment, target=_segment, module=_segment, alias=_segment,
       language=st.sampled_from(["python", "go", "rust", "javascript", "tsx", "java", "csharp",
                                 "php", "c", "cpp", "ruby", "swift", "text"]))
def test_module_naming_and_bindings_never_raise(path, target, module, alias, language) -> None:
    from codeagent.indexer.assemble.module_names import file_module, include_file

    fm = file_module(path or "x", language, {"a", "a/b"}, "")
    b = import_binding(fm, target, module, alias, {"a", "a.b", "a/b"})
    assert isinstance(b.local, str) and isinstance(b.fq, str) and isinstance(b.module, str)
    assert isinstance(include_file(target, path or "x", language, {"b.h": ["a/b.h"]}), str)


def _edge_rows(db: Path) -> set[tuple]:
    """Every edge with its lines, endpoints named by fq name (symbol ids are per manifest)."""
    return set(_query(db, """
        SELECT e.kind, e.confidence, coalesce(a.fq_name, ''), e.src_path, e.src_line,
               coalesce(b.fq_name, ''), e.dst_path, e.target
        FROM edges e LEFT JOIN symbol_names a ON a.symbol_id = e.src_id
        LEFT JOIN symbol_names b ON b.symbol_id = e.dst_id"""))


QUIET_EDITS = [
    ("a subclass two levels down", {"extra.py": "from pkg.app import Child\n\nclass Leaf(Child):\n"
                                                "    def run(self):\n        return 0\n"}),
    ("shift the base module by a comment", {"pkg/util.py": "# moved\n\n" + PROJECT["pkg/util.py"]}),
    ("edit a body only", {"pkg/app.py": PROJECT["pkg/app.py"].replace("return Child()", "return Child()  # same")}),
    ("change only a base class", {"pkg/app.py": PROJECT["pkg/app.py"].replace("class Child(Base)", "class Child(object)")}),
    ("put it back", {"pkg/app.py": PROJECT["pkg/app.py"]}),
    ("an empty module appears", {"pkg/empty.py": "", "other.py": "import pkg.empty\n" + "def mystery():\n    pass\n"}),
]


def test_quiet_edits_keep_every_edge_line_of_a_fresh_build(project, tmp_path) -> None:
    """Edits that change no definition or import recompute only the edited files' rows;
    the result, lines included, must be a fresh build's."""
    _build(project)
    for n, (message, files) in enumerate(QUIET_EDITS):
        for rel, text in files.items():
            project.write(rel, text)
        sha = project.commit(message)
        _, incremental = _build(project)
        assert graph.LAST_TIMINGS["full"] == 0.0, message
        fresh = build(BuildOptions(repo=project.path, rev=sha, store_dir=tmp_path / f"q{n}", jobs=1))
        fresh_db = Store(tmp_path / f"q{n}").assembled_dir(fresh.manifest_id) / fmt.DUCKDB_FILE
        assert _edge_rows(incremental) == _edge_rows(fresh_db), message
    overrides = {r for r in _edge_rows(incremental) if r[0] == "overrides"}
    assert ("overrides", "exact", "extra.Leaf.run", "extra.py", 4, "pkg.util.Base.run",
            "pkg/util.py", "run") in overrides, overrides


def test_an_edit_that_moves_no_graph_input_leaves_the_graph_as_it_was(project, tmp_path) -> None:
    """A comment at the end of a file or inside a line changes no symbol, reference or line:
    the graph step does nothing, and the tables equal a fresh build's. One that moves lines
    is recomputed."""
    _build(project)
    edits = [("comment at the end", PROJECT["pkg/app.py"] + "# trailing\n", 1.0),
             ("comment inside a line", PROJECT["pkg/app.py"].replace("return Child()", "return Child()  # c"), 1.0),
             ("a line moves", "# first\n" + PROJECT["pkg/app.py"], 0.0)]
    for n, (message, text, unchanged) in enumerate(edits):
        project.write("pkg/app.py", text)
        sha = project.commit(message)
        _, incremental = _build(project)
        assert graph.LAST_TIMINGS["unchanged"] == unchanged, message
        fresh = build(BuildOptions(repo=project.path, rev=sha, store_dir=tmp_path / f"u{n}", jobs=1))
        fresh_db = Store(tmp_path / f"u{n}").assembled_dir(fresh.manifest_id) / fmt.DUCKDB_FILE
        assert _edge_rows(incremental) == _edge_rows(fresh_db), message
        for sql in ("SELECT symbol_id, fq_name, start_line FROM symbol_names ORDER BY ALL",
                    "SELECT * FROM import_bindings ORDER BY ALL", "SELECT * FROM modules ORDER BY ALL"):
            assert _query(incremental, sql) == _query(fresh_db, sql), message


def test_path_qualified_calls_resolve_exact(git_repo) -> None:
    git_repo.write_many({
        "src/lib.rs": "mod runtime;\npub fn start() { crate::runtime::context::spawn(1); }\n",
        "src/runtime/context.rs": ("pub(crate) fn spawn(x: u32) -> u32 { self::helper(x) }\n"
                                   "fn helper(x: u32) -> u32 { super::blocking::run(x) }\n"),
        "src/runtime/blocking.rs": "pub fn run(x: u32) -> u32 { x }\n",
        "cpp/net.hpp": "namespace net { namespace tcp { int connect(int port); } }\n",
        "cpp/main.cpp": "#include \"net.hpp\"\nint main() { return net::tcp::connect(80); }\n",
        "app/__init__.py": "",
        "app/core/__init__.py": "",
        "app/core/jobs.py": "def enqueue(x):\n    return x\n",
        "app/cli.py": "import app.core.jobs\n\ndef main():\n    app.core.jobs.enqueue(1)\n",
    })
    git_repo.commit("paths")
    _, db = _build(git_repo)
    edges = _edges(db, "calls")
    assert ("calls", "exact", "crate::start", "crate::runtime::context::spawn",
            "crate.runtime.context.spawn") in edges
    assert ("calls", "exact", "crate::runtime::context::spawn", "crate::runtime::context::helper",
            "self.helper") in edges
    assert ("calls", "exact", "crate::runtime::context::helper", "crate::runtime::blocking::run",
            "super.blocking.run") in edges
    assert ("calls", "exact", "main", "net.tcp.connect", "net.tcp.connect") in edges
    assert ("calls", "exact", "app.cli.main", "app.core.jobs.enqueue", "app.core.jobs.enqueue") in edges


def test_typescript_barrels_namespaces_and_default_exports_resolve_exact(git_repo) -> None:
    git_repo.write_many({
        "source/core/request.ts": "export function send(url: string): string { return url; }\n",
        "source/index.ts": ("export * from './core/request.js';\n"
                            "function create() { return () => 1; }\n"
                            "const got = create();\nexport default got;\n"),
        "source/widget.ts": "export default class Widget { draw(): void {} }\n",
        "test/app.ts": ("import * as api from '../source/index.js';\n"
                        "import got from '../source/index.js';\n"
                        "import Widget from '../source/widget.js';\n"
                        "export function run() { api.send('x'); got(); return new Widget(); }\n"),
    })
    git_repo.commit("ts")
    _, db = _build(git_repo)
    edges = _edges(db, "calls")
    assert ("calls", "exact", "test/app.run", "source/core/request.send", "api.send") in edges
    assert ("calls", "exact", "test/app.run", "source.got", "got") in edges
    assert ("calls", "exact", "test/app.run", "source/widget.Widget", "Widget") in edges


def test_typed_receivers_resolve_exact(git_repo) -> None:
    git_repo.write_many({
        "svc/__init__.py": "",
        "svc/store.py": ("class Store:\n    def save(self, x):\n        return x\n\n"
                         "class Cache(Store):\n    pass\n\n"
                         "class Other:\n    def save(self, x):\n        return x\n"),
        "svc/app.py": ("from svc.store import Store, Cache\n\n"
                       "class App:\n    backup: Store\n\n"
                       "    def __init__(self):\n        self.cache = Cache()\n\n"
                       "    def run(self, s: Store):\n        s.save(1)\n        self.cache.save(2)\n"
                       "        self.backup.save(3)\n        c = Cache()\n        c.save(4)\n"),
        "web/user.ts": "export class User { save(): void {} }\nexport class Admin { save(): void {} }\n",
        "web/page.ts": ("import { User } from './user';\n"
                        "export class Page {\n  constructor(private owner: User) {}\n"
                        "  show(u: User) { u.save(); this.owner.save(); const v = new User(); v.save(); }\n}\n"),
    })
    git_repo.commit("typed")
    _, db = _build(git_repo)
    calls = {e for e in _edges(db, "calls") if e[4].endswith("save")}
    assert calls == {
        ("calls", "exact", "svc.app.App.run", "svc.store.Store.save", "s.save"),
        ("calls", "exact", "svc.app.App.run", "svc.store.Store.save", "self.cache.save"),
        ("calls", "exact", "svc.app.App.run", "svc.store.Store.save", "self.backup.save"),
        ("calls", "exact", "svc.app.App.run", "svc.store.Store.save", "c.save"),
        ("calls", "exact", "web/page.Page.show", "web/user.User.save", "u.save"),
        ("calls", "exact", "web/page.Page.show", "web/user.User.save", "this.owner.save"),
        ("calls", "exact", "web/page.Page.show", "web/user.User.save", "v.save"),
    }, calls


def test_go_and_java_receivers_and_external_types(git_repo) -> None:
    git_repo.write_many({
        "srv/server.go": ("package srv\n\nimport \"net/http\"\n\ntype DB struct{}\n\n"
                          "func (d *DB) Query() {}\n\ntype Server struct { db *DB }\n\n"
                          "func (s *Server) Handle(w http.ResponseWriter) { s.db.Query(); w.Header() }\n"),
        "srv/mock_test.go": "package srv\n\ntype mockWriter struct{}\n\nfunc (m mockWriter) Header() {}\n",
        "src/main/java/a/Db.java": "package a;\npublic class Db { public void close() {} }\n",
        "src/main/java/a/Other.java": "package a;\npublic class Other { public void close() {} }\n",
        "src/main/java/a/S.java": "package a;\npublic class S { private Db db; void run() { db.close(); } }\n",
    })
    git_repo.commit("go/java")
    _, db = _build(git_repo)
    calls = _edges(db, "calls")
    assert ("calls", "exact", "srv.Server.Handle", "srv.DB.Query", "s.db.Query") in calls
    assert not [e for e in calls if e[4] == "w.Header"]  # http.ResponseWriter is not mockWriter
    assert {e for e in calls if e[4] == "db.close"} == {("calls", "exact", "a.S.run", "a.Db.close", "db.close")}


# One file set per language: `Db` and `Other` both have `close`; each call is on a receiver whose
# type the source writes (parameter, field, local, constructor, `self`/`this` field, property).
TYPED_RECEIVERS = {
    "csharp": {
        "src/Data/Db.cs": "namespace App.Data { public class Db { public void Close() {} } }\n",
        "src/Data/Other.cs": "namespace App.Data { public class Other { public void Close() {} } }\n",
        "src/Web/Page.cs": ("using App.Data;\nnamespace App.Web {\npublic class Page {\n"
                            "  private Db db;\n  public Db Store { get; }\n"
                            "  public void Show(Db p) {\n    p.Close();\n    db.Close();\n"
                            "    this.db.Close();\n    Store.Close();\n    var x = new Db();\n    x.Close();\n  }\n}\n}\n"),
    },
    "kotlin": {
        "data/src/main/kotlin/app/data/Db.kt": "package app.data\n\nclass Db { fun close() {} }\n",
        "data/src/main/kotlin/app/data/Other.kt": "package app.data\n\nclass Other { fun close() {} }\n",
        "web/src/jvmTest/kotlin/app/web/Page.kt": ("package app.web\n\nimport app.data.Db\n\n"
                                            "class Page(private val db: Db) {\n"
                                            "    fun show(p: Db) {\n        p.close()\n        db.close()\n"
                                            "        this.db.close()\n        val x = Db()\n        x.close()\n    }\n}\n"),
    },
    "rust": {
        "src/lib.rs": "pub mod db;\npub mod other;\npub mod page;\n",
        "src/db.rs": "pub struct Db;\nimpl Db {\n    pub fn new() -> Db { Db }\n    pub fn close(&self) {}\n}\n",
        "src/other.rs": "pub struct Other;\nimpl Other {\n    pub fn close(&self) {}\n}\n",
        "src/page.rs": ("use crate::db::Db;\nuse std::sync::Arc;\n\npub struct Page { db: Db, shared: Arc<Db> }\n\n"
                        "impl Page {\n    pub fn show(&self, p: &Db) {\n        p.close();\n"
                        "        self.db.close();\n        self.shared.close();\n"
                        "        let x = Db::new();\n        x.close();\n    }\n}\n"),
    },
    "php": {
        "src/Db.php": "<?php\nnamespace App;\n\nclass Db { public function close() {} }\n",
        "src/Other.php": "<?php\nnamespace App;\n\nclass Other { public function close() {} }\n",
        "src/Page.php": ("<?php\nnamespace App;\n\nclass Page {\n    private Db $db;\n"
                         "    public function __construct(private Db $store) {}\n"
                         "    public function show(Db $p) {\n        $p->close();\n        $this->db->close();\n"
                         "        $this->store->close();\n        $x = new Db();\n        $x->close();\n    }\n}\n"),
    },
}


@pytest.mark.parametrize("language", sorted(TYPED_RECEIVERS))
def test_typed_receivers_in_more_languages(git_repo, language: str) -> None:
    git_repo.write_many(TYPED_RECEIVERS[language])
    git_repo.commit(language)
    _, db = _build(git_repo)
    calls = [e for e in _edges(db, "calls") if e[4].lower().endswith(".close")]
    assert calls and all(e[1] == "exact" and e[3].replace("::", ".").lower().endswith("db.close")
                         for e in calls), sorted(calls)
    written = [line for text in TYPED_RECEIVERS[language].values() for line in text.splitlines()
               if "close()" in line.lower() and "function" not in line and "fn " not in line
               and "void" not in line and "fun " not in line]
    assert len({e[4] for e in calls}) == len(written), (sorted(calls), written)


def test_typed_receivers_of_same_file_types(git_repo) -> None:
    """Ruby and Swift resolve types across files by name only; a type of the same file types
    its receivers (Ruby `Foo.new`, instance variables; a Swift `extension` adds methods)."""
    git_repo.write_many({
        "lib/store.rb": ("class Db\n  def close; end\nend\n\nclass Other\n  def close; end\nend\n\n"
                         "class Page\n  def initialize\n    @db = Db.new\n  end\n\n"
                         "  def show\n    @db.close\n    x = Db.new\n    x.close\n  end\nend\n"),
        "Sources/App/Store.swift": ("class Db {}\nextension Db { func close() {} }\n"
                                    "class Other { func close() {} }\n"
                                    "class Screen {\n    let db: Db\n    init(db: Db) { self.db = db }\n"
                                    "    func show(p: Db?) {\n        p?.close()\n        db.close()\n"
                                    "        self.db.close()\n        let x = Db()\n        x.close()\n    }\n}\n"),
    })
    git_repo.commit("same-file types")
    _, db = _build(git_repo)
    calls = {e[1:] for e in _edges(db, "calls") if e[4].endswith("close")}
    assert calls == {
        ("exact", "Page.show", "Db.close", "@db.close"), ("exact", "Page.show", "Db.close", "x.close"),
        ("exact", "Screen.show", "Db.close", "p.close"), ("exact", "Screen.show", "Db.close", "db.close"),
        ("exact", "Screen.show", "Db.close", "self.db.close"), ("exact", "Screen.show", "Db.close", "x.close"),
    }, sorted(calls)


def test_swift_receivers_typed_by_other_files_types(git_repo, tmp_path) -> None:
    """Swift files of a module see each other's types unimported: a receiver typed by a type
    of another file resolves exact into it, when one type in the repository has the name;
    adding a second type of that name makes the call a name match again, as a fresh build."""
    git_repo.write_many({
        "Sources/App/Db.swift": "class Db {}\nextension Db { func close() {} }\n",
        "Sources/App/Other.swift": "class Other { func close() {} }\nstruct Cache { func close() {} }\n",
        "Sources/App/Screen.swift": ("class Screen {\n    let db: Db\n    init(db: Db) { self.db = db }\n"
                                     "    func show(c: Cache) {\n        db.close()\n        c.close()\n"
                                     "        let x = Db()\n        x.close()\n    }\n}\n"),
    })
    git_repo.commit("types in other files")
    _, db = _build(git_repo)
    calls = {e[1:] for e in _edges(db, "calls") if e[4].endswith("close")}
    assert calls == {("exact", "Screen.show", "Db.close", "db.close"), ("exact", "Screen.show", "Db.close", "x.close"),
                     ("exact", "Screen.show", "Cache.close", "c.close")}, sorted(calls)
    git_repo.write("Sources/Tests/Fake.swift", "class Cache { func close() {} }\n")
    sha = git_repo.commit("a second Cache")
    _, incremental = _build(git_repo)
    fresh = build(BuildOptions(repo=git_repo.path, rev=sha, store_dir=tmp_path / "fresh", jobs=1))
    fresh_db = Store(tmp_path / "fresh").assembled_dir(fresh.manifest_id) / fmt.DUCKDB_FILE
    assert _edges(incremental) == _edges(fresh_db)
    calls = {e[1:] for e in _edges(incremental, "calls") if e[4] == "c.close"}
    assert calls and {c[0] for c in calls} == {"name"}, sorted(calls)


def test_equally_ranked_targets_resolve_to_the_nearest(git_repo) -> None:
    """Two projects each holding a package `json`: an import in one means its own copy (the
    copy sharing the most leading directories with the importing file); a file as near to
    both keeps both."""
    body = "def loads(s):\n    return s\n"
    git_repo.write_many({
        "projA/json/__init__.py": body, "projB/json/__init__.py": body + "\n# B\n",
        "projA/app.py": "import json\n\ndef run(s):\n    return json.loads(s)\n",
        "projA/deep/tool.py": "from json import loads\n\ndef run(s):\n    return loads(s)\n",
        "projB/tool.py": "from json import loads\n\ndef run(s):\n    return loads(s)\n",
        "main.py": "import json\n\ndef run(s):\n    return json.loads(s)\n"})
    git_repo.commit("two copies")
    _, db = _build(git_repo)
    rows = _query(db, """SELECT e.src_path, e.dst_path, e.confidence FROM edges e
                         WHERE e.kind = 'calls' ORDER BY ALL""")
    assert rows == [("main.py", "projA/json/__init__.py", "exact"), ("main.py", "projB/json/__init__.py", "exact"),
                    ("projA/app.py", "projA/json/__init__.py", "exact"),
                    ("projA/deep/tool.py", "projA/json/__init__.py", "exact"),
                    ("projB/tool.py", "projB/json/__init__.py", "exact")], rows


def test_nearest_copy_ranks_after_a_stub_and_beyond_the_top_directory(git_repo) -> None:
    """Of copies under one top directory the one sharing the most directories wins (not just
    the top one), for references of a file naming a target many times over; a stub gives way
    to a definition however far (the stub rule ranks before nearness)."""
    body = "def loads(s):\n    return s\n"
    git_repo.write_many({
        "x/a/pkg/__init__.py": body, "x/b/pkg/__init__.py": body + "\n# b\n", "y/pkg/__init__.py": body + "\n# y\n",
        "x/a/app.py": "from pkg import loads\n\ndef run(s):\n    loads(s)\n    return loads(s)\n",
        "s/lib/__init__.pyi": "def dumps(s): ...\n", "t/lib/__init__.py": "def dumps(s):\n    return s\n",
        "s/use.py": "from lib import dumps\n\ndef run(s):\n    return dumps(s)\n"})
    git_repo.commit("copies and a stub")
    _, db = _build(git_repo)
    rows = _query(db, """SELECT src_path, src_line, dst_path, confidence FROM edges
                         WHERE kind = 'calls' ORDER BY ALL""")
    assert rows == [("s/use.py", 4, "t/lib/__init__.py", "exact"), ("x/a/app.py", 4, "x/a/pkg/__init__.py", "exact"),
                    ("x/a/app.py", 5, "x/a/pkg/__init__.py", "exact")], rows


def test_name_matches_take_the_nearest_of_copies(git_repo) -> None:
    """Of copies of one definition (the same qualified name in files of the same name) a
    reference name-matches the nearest; a definition that is no copy is matched however far."""
    files = {f"d{i:02d}/x.py": f"def helper():\n    return {i}\n" for i in range(4)}
    files["d03/use.py"] = "def use():\n    helper()\n    other()\n"
    files["a/util.py"] = files["b/util.py"] = "def other():\n    return 1\n"
    files["c/more.py"] = "def other():\n    return 2\n"
    git_repo.write_many(files)
    git_repo.commit("copies")
    _, db = _build(git_repo)
    rows = _query(db, """SELECT target, dst_path, confidence FROM edges WHERE kind = 'calls' ORDER BY ALL""")
    assert rows == [("helper", "d03/x.py", "name"), ("other", "a/util.py", "name"),
                    ("other", "b/util.py", "name"), ("other", "c/more.py", "name")], rows


def test_python_module_level_call_sees_definitions_before_it(git_repo) -> None:
    """Module-level code runs top-down: a call there resolves to the definition before it, a
    call inside a function (run later) to every definition of the name."""
    git_repo.write_many({"cases.py": ("def f():\n    return 1\n\nx = f()\n\n"
                                      "def f():\n    return 2\n\ny = f()\n\n"
                                      "def g():\n    return f()\n")})
    git_repo.commit("redefinitions")
    _, db = _build(git_repo)
    rows = _query(db, """SELECT e.src_line, d.start_line FROM edges e JOIN symbol_names d ON d.symbol_id = e.dst_id
                         WHERE e.kind = 'calls' AND e.confidence = 'exact' ORDER BY ALL""")
    assert rows == [(4, 1), (9, 6), (12, 1), (12, 6)], rows
