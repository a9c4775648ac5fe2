"""Issue 45, item 9: among definitions of one name, the one a bare name means comes first.

tokio's `search "struct JoinHandle"` put the crate-private shim of `blocking.rs` (inside a
`cfg_not_rt!` macro) and `fs/mocks.rs` first and the real struct below the top 5;
`JoinHandle::abort` put a module `abort` and four other `abort`s before the real method.
Here the same shapes, in small real repositories, in Rust and in Python.
"""

from __future__ import annotations

import pytest

from codeagent.query import SearchRequest, find_symbols, open_index, search
from .conftest import build_repo

RUST = {
    "Cargo.toml": '[package]\nname = "rt"\nversion = "0.1.0"\n',
    "src/lib.rs": "#[macro_use]\nmod macros;\nmod blocking;\nmod fs;\nmod runtime;\npub mod sync;\n",
    "src/macros.rs": "macro_rules! cfg_not_rt {\n    ($($item:item)*) => { $( $item )* }\n}\n",
    # the shim: crate-private, undocumented, compiled only without the runtime
    "src/blocking.rs": (
        "use std::marker::PhantomData;\n\n"
        "cfg_not_rt! {\n"
        "    pub(crate) struct JoinHandle<R> {\n"
        "        _p: PhantomData<R>,\n"
        "    }\n"
        "}\n"),
    "src/fs/mod.rs": "mod mocks;\n",
    "src/fs/mocks.rs": (
        "pub(super) struct JoinHandle<T> {\n"
        "    rx: Option<T>,\n"
        "}\n\n"
        "impl<T> JoinHandle<T> {\n"
        "    pub(super) fn abort(&self) {}\n"
        "}\n"),
    "src/runtime/mod.rs": "pub mod task;\n",
    "src/runtime/task/mod.rs": "mod abort;\nmod join;\npub use join::JoinHandle;\n",
    "src/runtime/task/abort.rs": (
        "/// A handle that can abort a task.\n"
        "pub struct AbortHandle {\n"
        "    id: u64,\n"
        "}\n\n"
        "impl AbortHandle {\n"
        "    /// Abort the task this handle belongs to.\n"
        "    pub fn abort(&self) {}\n"
        "}\n"),
    # a method, and an integration test named after it: a top-level function of the same name
    "src/sync.rs": (
        "/// The receiving half of a channel.\n"
        "pub struct Receiver;\n\n"
        "impl Receiver {\n"
        "    /// Receive the next value, blocking the thread.\n"
        "    pub fn blocking_recv(&self) -> Option<u8> {\n"
        "        None\n"
        "    }\n"
        "}\n"),
    "tests/sync_mpsc.rs": "#[test]\nfn blocking_recv() {\n    assert!(true);\n}\n",
    # the real one: public and documented
    "src/runtime/task/join.rs": (
        "use std::marker::PhantomData;\n\n"
        "/// An owned permission to join on a task (await its termination).\n"
        "pub struct JoinHandle<T> {\n"
        "    raw: u64,\n"
        "    _p: PhantomData<T>,\n"
        "}\n\n"
        "impl<T> JoinHandle<T> {\n"
        "    /// Abort the task associated with the handle.\n"
        "    pub fn abort(&self) {}\n"
        "}\n"),
}

PYTHON = {
    # the re-export the package's users import, and a compatibility shim and a mock of the
    # same class: each sorts before the real definition by path
    "pkg/__init__.py": "from . import transport\n\nClient = transport.Client\n",
    "pkg/compat.py": "class Client:\n    pass\n",
    "pkg/mock.py": "class Client:\n    def send(self, request):\n        return None\n",
    "pkg/transport.py": (
        "class Client:\n"
        '    """An HTTP client: sends requests over a pooled connection."""\n\n'
        "    def send(self, request):\n"
        '        """Send one request."""\n'
        "        return request\n"),
}


@pytest.fixture(scope="module")
def rust(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("rt") / "repo", RUST)
    with open_index(repo.path, ref="main") as view:
        yield view


@pytest.fixture(scope="module")
def python(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("py") / "repo", PYTHON)
    with open_index(repo.path, ref="main") as view:
        yield view


def top(view, query: str, n: int = 1, **kw) -> list[tuple[str, str]]:
    return [(h.path, h.kind) for h in find_symbols(view, query, include_references=False, **kw).results[:n]]


def test_the_public_documented_struct_beats_the_shim_and_the_mock(rust):
    assert top(rust, "JoinHandle") == [("src/runtime/task/join.rs", "struct")]
    both = {h.path for h in find_symbols(rust, "JoinHandle").results if h.kind == "struct"}
    assert both == {"src/blocking.rs", "src/fs/mocks.rs", "src/runtime/task/join.rs"}  # kept, only lower


def test_a_documented_method_beats_a_top_level_test_function_of_its_name(rust):
    """A bare name's top-level definition is only a little ahead of a member of that name."""
    assert top(rust, "blocking_recv") == [("src/sync.rs", "method")]
    assert top(rust, "test blocking_recv") == [("tests/sync_mpsc.rs", "function")]


def test_a_leading_kind_word_finds_the_struct(rust):
    """`struct JoinHandle` found no symbol at all (no name holds the word `struct`)."""
    assert top(rust, "struct JoinHandle", 3) == [
        ("src/runtime/task/join.rs", "struct"), ("src/blocking.rs", "struct"), ("src/fs/mocks.rs", "struct")]


def test_a_rust_path_matches_its_qualified_name_exactly(rust):
    resp = find_symbols(rust, "JoinHandle::abort", include_references=False)
    first = resp.results[0]
    assert (first.path, first.name, first.match) == ("src/runtime/task/join.rs", "abort", "exact_qualified")


def test_a_query_naming_the_mock_or_the_shim_gets_it(rust):
    assert top(rust, "mock JoinHandle") == [("src/fs/mocks.rs", "struct")]
    assert top(rust, "JoinHandle shim") == [("src/blocking.rs", "struct")]


def test_auto_search_puts_the_definition_first(rust):
    for query in ("struct JoinHandle", "JoinHandle::abort"):
        first = search(rust, SearchRequest(query, limit=5)).results[0]
        assert first.path == "src/runtime/task/join.rs", query


def test_python_the_documented_class_beats_its_reexport_shim_and_mock(python):
    got = [h.path for h in find_symbols(python, "Client", include_references=False).results]
    assert got[0] == "pkg/transport.py"
    assert set(got) == {"pkg/__init__.py", "pkg/compat.py", "pkg/mock.py", "pkg/transport.py"}
    assert top(python, "class Client") == [("pkg/transport.py", "class")]
    assert top(python, "Client.send") == [("pkg/transport.py", "method")]
    assert top(python, "fake Client") == [("pkg/mock.py", "class")]
