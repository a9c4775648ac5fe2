"""Path-qualified calls reach the graph (indexer/assemble/graph_paths.py): Rust `crate::`,
`super::`, `Self::`, child-module and re-exported paths, a crate's tests naming it by its
package name, calls inside a macro's arguments, C++ `ns::f()` and PHP `\\Ns\\f()`; checked through the real `callers` command."""

from __future__ import annotations

import json

import pytest

from codeagent.indexer.assemble.module_names import FileModule, import_binding

# A crate laid out as tokio is: a function re-exported by its parent module and called by
# the re-exported path, calls through `crate::`, a child module, an imported module, one and
# two `super::`, `Self::`, turbofish, and an integration test naming the crate by its
# package name (rt_core), which is not the directory's (rt).
RUST = {
    "rt/Cargo.toml": '[package]\nname = "rt-core"\nversion = "0.1.0"\nedition = "2021"\n',
    "rt/src/lib.rs": ("pub mod runtime;\n\n"
                      "pub fn start() {\n"
                      "    crate::runtime::context::enter_runtime(1);\n"
                      "    runtime::blocking::pool::spawn_blocking::<u8>(2);\n"
                      "}\n"),
    "rt/src/runtime/mod.rs": "pub mod blocking;\npub mod context;\npub mod scheduler;\n",
    "rt/src/runtime/context.rs": ("mod runtime;\npub(crate) use runtime::enter_runtime;\n\n"
                                  "pub(crate) fn current() -> u32 {\n    0\n}\n"),
    "rt/src/runtime/context/runtime.rs": ("pub(crate) fn enter_runtime(x: u32) -> u32 {\n"
                                          "    super::current() + x\n}\n"),
    "rt/src/runtime/blocking/mod.rs": ("pub mod pool;\n\n"
                                       "pub(crate) fn run_blocking() -> u32 {\n"
                                       "    pool::spawn_blocking::<u8>(3)\n}\n"),
    "rt/src/runtime/blocking/pool.rs": ("pub struct Spawner;\n\n"
                                        "impl Spawner {\n"
                                        "    pub fn spawn(&self) -> u32 {\n        Self::helper()\n    }\n\n"
                                        "    fn helper() -> u32 {\n        spawn_blocking::<u32>(4)\n    }\n}\n\n"
                                        "pub fn spawn_blocking<T>(x: u32) -> u32 {\n    x\n}\n"),
    "rt/src/runtime/scheduler/mod.rs": ("mod worker;\n\n"
                                        "fn tick() -> u32 {\n    worker::run();\n"
                                        "    super::context::current()\n}\n"),
    "rt/src/runtime/scheduler/worker.rs": ("use crate::runtime::blocking::pool;\n\n"
                                           "pub(crate) fn run() -> u32 {\n"
                                           "    crate::runtime::context::enter_runtime(5);\n"
                                           "    pool::spawn_blocking::<u8>(6);\n"
                                           "    super::super::blocking::pool::spawn_blocking::<u8>(7)\n"
                                           "}\n"),
    "rt/tests/smoke.rs": ("#[test]\nfn smoke() {\n"
                          "    rt_core::runtime::blocking::pool::spawn_blocking::<u8>(8);\n"
                          "    std::thread::spawn(|| 1);\n"
                          "    assert_eq!(rt_core::runtime::blocking::pool::spawn_blocking(9), 9);\n}\n"),
}

CPP = {
    "net/socket.cpp": ("namespace net {\nnamespace detail {\nint open_fd(int port) { return port; }\n}\n\n"
                       "int connect(int port) {\n    return detail::open_fd(port);\n}\n}\n"),
    "app/main.cpp": "int main() {\n    return net::connect(80) + net::detail::open_fd(1);\n}\n",
    # inside the namespace in another file: `detail::` is a path relative to `net`
    "app/serve.cpp": "namespace net {\nint serve() {\n    return detail::open_fd(8080);\n}\n}\n",
}

PHP = {
    "src/Util/Str.php": "<?php\nnamespace App\\Util;\n\nfunction slugify($s) {\n    return $s;\n}\n",
    "src/Http/Handler.php": ("<?php\nnamespace App\\Http;\n\nfunction handle() {\n"
                             "    return \\App\\Util\\slugify('x');\n}\n"),
}


def _assert_fq_names(cli, repo, *fqs: str) -> None:
    """`show FQ --json` finds each and answers that fully qualified name."""
    for fq in fqs:
        shown = cli("show", fq, "--json", cwd=repo.path, check=True)
        assert json.loads(shown.stdout)["fq_name"] == fq


def _call_sites(cli, repo, symbol: str) -> set[tuple[str, int]]:
    """(path, line) of each call edge `callers` lists for `symbol`."""
    out = cli("callers", symbol, "--json", cwd=repo.path, check=True)
    return {(e["path"], e["line"]) for e in json.loads(out.stdout)["edges"] if e["kind"] == "calls"}


@pytest.fixture
def built(git_repo, cli):
    def make(files: dict[str, str]):
        git_repo.write_many(files)
        git_repo.commit("sources")
        cli("build", "--ref", "HEAD", cwd=git_repo.path, check=True)
        return git_repo
    return make


def test_rust_path_qualified_calls_are_callers(built, cli) -> None:
    repo = built(RUST)
    assert _call_sites(cli, repo, "enter_runtime") == {
        ("rt/src/lib.rs", 4), ("rt/src/runtime/scheduler/worker.rs", 4)}   # through the re-export
    assert _call_sites(cli, repo, "spawn_blocking") == {
        ("rt/src/lib.rs", 5), ("rt/src/runtime/blocking/mod.rs", 4), ("rt/src/runtime/blocking/pool.rs", 9),
        ("rt/src/runtime/scheduler/worker.rs", 5), ("rt/src/runtime/scheduler/worker.rs", 6),
        ("rt/tests/smoke.rs", 3), ("rt/tests/smoke.rs", 5)}   # the last inside a macro's tokens
    assert _call_sites(cli, repo, "current") == {
        ("rt/src/runtime/context/runtime.rs", 2), ("rt/src/runtime/scheduler/mod.rs", 5)}
    assert _call_sites(cli, repo, "Spawner.helper") == {("rt/src/runtime/blocking/pool.rs", 5)}
    # a call into the standard library is no call of the repository's `spawn`
    assert _call_sites(cli, repo, "Spawner.spawn") == set()


def test_cpp_namespace_qualified_calls_are_callers(built, cli) -> None:
    repo = built(CPP)
    assert _call_sites(cli, repo, "open_fd") == {("net/socket.cpp", 7), ("app/main.cpp", 2), ("app/serve.cpp", 3)}
    assert _call_sites(cli, repo, "connect") == {("app/main.cpp", 2)}


def test_php_fully_qualified_function_calls_are_callers(built, cli) -> None:
    repo = built(PHP)
    assert _call_sites(cli, repo, "slugify") == {("src/Http/Handler.php", 5)}


def test_php_namespace_statements_each_name_what_follows(built, cli) -> None:
    """A file with `namespace A;` then `namespace B;`: each holds the declarations up to the
    next, so two `User` classes keep their own namespaces (both were `App.User`)."""
    repo = built({"src/Both.php": (
        "<?php\nnamespace App\\Models;\n\nclass User {\n    function name() { return 1; }\n}\n\n"
        "namespace App\\Http;\n\nclass User {\n    function show() { return \\App\\Models\\User::name(); }\n}\n"
        "function helper() { return 2; }\n")})
    _assert_fq_names(cli, repo, "App.Models.User.name", "App.Http.User.show", "App.Http.helper")
    assert _call_sites(cli, repo, "App.Models.User.name") == {("src/Both.php", 11)}


@pytest.mark.parametrize("module, target, imported, want", [
    ("rt::runtime::context", "enter_runtime", "runtime", "rt.runtime.context.runtime.enter_runtime"),
    ("rt::runtime::context", "HashMap", "std::collections", "std.collections.HashMap"),
    ("rt::runtime", "pool", "crate::runtime::blocking", "rt.runtime.blocking.pool"),
])
def test_rust_use_of_a_child_module_is_relative(module: str, target: str, imported: str, want: str) -> None:
    fm = FileModule("x.rs", "rust", module, module, "::")
    modules = {"rt", "rt.runtime", "rt.runtime.context", "rt.runtime.context.runtime", "rt.runtime.blocking"}
    assert import_binding(fm, target, imported, "", modules).fq == want


# A Go module whose root is a package, imported by its module path (with a major version
# suffix) from its examples and by sub-package path from the root.
GO = {
    "go.mod": "module example.com/kit/v2\n\ngo 1.21\n",
    "kit.go": ("package kit\n\nimport \"example.com/kit/v2/middleware\"\n\n"
               "func NewRouter() int {\n\treturn middleware.Wrap(1)\n}\n"),
    "middleware/wrap.go": "package middleware\n\nfunc Wrap(x int) int {\n\treturn x\n}\n",
    # a method defined in another file than its type: a member all the same
    "router.go": "package kit\n\ntype Router struct{}\n",
    "router_mount.go": "package kit\n\nfunc (r *Router) Mount() int {\n\treturn 1\n}\n",
    "use.go": "package kit\n\nfunc Use(r *Router) int {\n\treturn r.Mount()\n}\n",
    "_examples/hello/main.go": ("package main\n\nimport \"example.com/kit/v2\"\n\n"
                                "func main() {\n\tkit.NewRouter()\n}\n"),
}


def test_go_imports_of_the_repositorys_own_module_path_are_callers(built, cli) -> None:
    repo = built(GO)
    assert _call_sites(cli, repo, "NewRouter") == {("_examples/hello/main.go", 6)}
    assert _call_sites(cli, repo, "Wrap") == {("kit.go", 6)}
    assert _call_sites(cli, repo, "Router.Mount") == {("use.go", 4)}


# JVM files under `src/`, `app/src/` and Mill's `core/src/` without a `src/main/java/` root:
# each file's module is the package it declares, so imports across packages bind and their
# calls are callers.
JVM = {
    "src/q/C.java": "package q;\n\npublic class C {\n    public static int gamma() { return 1; }\n}\n",
    "src/p/D.java": ("package p;\n\nimport q.C;\n\npublic class D {\n"
                     "    public int delta() { return C.gamma(); }\n}\n"),
    "app/src/k/Util.kt": "package k\n\nobject Util {\n    fun helper(): Int = 1\n}\n",
    "app/src/m/Main.kt": "package m\n\nimport k.Util\n\nfun run(): Int = Util.helper()\n",
    # Mill's layout; chained clauses: the file is in `shop.core`
    "core/src/Prices.scala": "package shop\npackage core\n\nobject Prices {\n  def total(): Int = 1\n}\n",
    "web/src/Page.scala": ("package shop.web\n\nimport shop.core.Prices\n\n"
                           "object Page {\n  def render(): Int = Prices.total()\n}\n"),
}


def test_jvm_files_take_their_module_from_the_declared_package(built, cli) -> None:
    repo = built(JVM)
    assert _call_sites(cli, repo, "q.C.gamma") == {("src/p/D.java", 6)}
    assert _call_sites(cli, repo, "k.Util.helper") == {("app/src/m/Main.kt", 5)}
    assert _call_sites(cli, repo, "shop.core.Prices.total") == {("web/src/Page.scala", 6)}
    _assert_fq_names(cli, repo, "q.C.gamma")


# Scala packages with a body: a file's one top-level block is its package; nested blocks add up,
# a block after the leading clauses adds to them, and each of several top-level blocks names its
# own symbols (docs/design/graph.md).
SCALA_BLOCKS = {
    "core/src/Prices.scala": "package shop.core {\n  object Prices {\n    def total(): Int = 1\n  }\n}\n",
    "web/src/Page.scala": ("package shop.web {\n  import shop.core.Prices\n\n"
                           "  object Page {\n    def render(): Int = Prices.total()\n  }\n}\n"),
    "lib/src/Both.scala": ("package shop {\n  package tax {\n    object Rates {\n      def vat(): Int = 20\n    }\n  }\n}\n\n"
                           "package billing {\n  import shop.tax.Rates\n\n"
                           "  object Invoice {\n    def due(): Int = Rates.vat()\n  }\n}\n"),
    "app/src/Main.scala": ("package shop\n\npackage app {\n  import billing.Invoice\n\n"
                           "  object Main {\n    def run(): Int = Invoice.due()\n  }\n}\n"),
}


def test_scala_package_blocks_name_their_symbols(built, cli) -> None:
    repo = built(SCALA_BLOCKS)
    assert _call_sites(cli, repo, "shop.core.Prices.total") == {("web/src/Page.scala", 5)}
    assert _call_sites(cli, repo, "shop.tax.Rates.vat") == {("lib/src/Both.scala", 13)}
    assert _call_sites(cli, repo, "billing.Invoice.due") == {("app/src/Main.scala", 7)}
    _assert_fq_names(cli, repo, "shop.tax.Rates.vat", "billing.Invoice.due", "shop.app.Main.run")
