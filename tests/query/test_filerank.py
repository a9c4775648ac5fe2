"""The file ranking: each signal moves results the way it is meant to, on small real-looking
repositories built with the real pipeline; the pure pieces on their own; grouping by file
never loses a hit."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.errors import InvalidParameter
from codeagent.query import open_index
from codeagent.query.ranking.files import PathIndex, group_by_file, names_file, order_by_files, role_prior
from codeagent.query.terms import named_identifiers, query_terms
from codeagent.model import SearchHit
from codeagent.query.search import SearchRequest, file_evidence, search
from codeagent.roles import file_role
from .conftest import build_repo


def _files(repo: Path, query: str, **kw) -> list[str]:
    with open_index(repo, ref="main") as view:
        resp = search(view, SearchRequest(query, limit=kw.pop("limit", 10), **kw))
    return list(dict.fromkeys(h.path for h in resp.results))


def _filler(n: int) -> str:
    return "".join(f"def unrelated_{i}(value):\n    return value * {i}\n\n\n" for i in range(n))


# ---- one signal at a time, on corpora built in the test ----------------------------------------
def test_many_moderate_matches_beat_one_strong_chunk(tmp_path: Path) -> None:
    """The file where the task happens mentions its words across many functions; another file
    has one chunk that repeats one rare word of the query many times."""
    spread = "".join(
        f"def step_{i}(invoice, ledger):\n    \"\"\"Post the invoice total to the ledger account.\"\"\"\n"
        f"    ledger.account(invoice.total)\n    return invoice\n\n\n" for i in range(12))
    strong = ("def currency_table():\n    # currency currency currency currency currency currency\n"
              "    return ['currency'] * 8  # currency currency currency currency\n\n\n" + _filler(10))
    repo = build_repo(tmp_path / "r", {"billing/posting.py": spread, "billing/money.py": strong,
                                       "billing/other.py": _filler(20)})
    files = _files(repo.path, "post invoice totals to the ledger account in another currency")
    assert files[0] == "billing/posting.py", files


def test_a_mock_ranks_below_the_real_class_it_imitates(tmp_path: Path) -> None:
    real = ("package store\n\n// Store saves records in the database.\ntype Store struct{ db *DB }\n\n"
            "// Save writes the record to the database and commits the transaction.\n"
            "func (s *Store) Save(r Record) error {\n\treturn s.db.Commit(r)\n}\n")
    mock = ("package store\n\n// MockStore records Save calls for tests.\ntype MockStore struct{ saved []Record }\n\n"
            "// Save records the record instead of writing it to the database.\n"
            "func (m *MockStore) Save(r Record) error {\n\tm.saved = append(m.saved, r)\n"
            "\treturn nil // no database, no transaction, no commit of the record\n}\n")
    repo = build_repo(tmp_path / "r", {"store/store.go": real, "store/mock_store.go": mock})
    files = _files(repo.path, "save a record to the database and commit the transaction")
    assert files.index("store/store.go") < files.index("store/mock_store.go"), files
    asked = _files(repo.path, "the mock that records saves", roles=("mock",))
    assert asked == ["store/mock_store.go"]


def test_a_translated_readme_ranks_below_the_code(tmp_path: Path) -> None:
    code = ("def parse_header(line):\n    \"\"\"Split a header line into its name and value.\"\"\"\n"
            "    name, _, value = line.partition(':')\n    return name.strip().lower(), value.strip()\n")
    readme = "# Headers\n\n" + "parse header line name value split header parse " * 20 + "\n"
    repo = build_repo(tmp_path / "r", {"http/headers.py": code, "docs/README.zh-CN.md": readme,
                                       "README.md": readme})
    files = _files(repo.path, "how are header lines split into name and value")
    assert files[0] == "http/headers.py", files
    assert files.index("docs/README.zh-CN.md") > files.index("README.md"), files


def test_a_traceback_path_ranks_that_file_first(tmp_path: Path) -> None:
    crowd = {f"pkg/noise_{i}.py": "def connect(host, port):\n    raise ConnectionError('connect failed')\n"
             * 3 for i in range(6)}
    repo = build_repo(tmp_path / "r", {**crowd, "pkg/wire/frames.py": "def read_frame(sock):\n    return sock.recv(4)\n"})
    report = ('ConnectionError: connect failed while reading\nTraceback (most recent call last):\n'
              '  File "/home/me/venv/lib/pkg/wire/frames.py", line 2, in read_frame\n'
              '    return sock.recv(4)\nConnectionError: connect failed')
    assert _files(repo.path, report)[0] == "pkg/wire/frames.py"


def test_a_dotted_module_reference_ranks_that_file_first(tmp_path: Path) -> None:
    crowd = {f"app/views_{i}.py": "def render(template, context):\n    return template.render(context)\n" * 3
             for i in range(6)}
    repo = build_repo(tmp_path / "r", {**crowd, "app/templating/loader.py": "def find(name):\n    return name\n"})
    assert _files(repo.path, "render fails when app.templating.loader cannot find the template")[0] \
        == "app/templating/loader.py"


def test_a_file_defining_an_identifier_the_report_names_says_so(tmp_path: Path) -> None:
    """The `defines` evidence: 1 for the one file defining `NestedContainer`, 1/2 for each of the
    two defining `to_container`'s namesakes' most specific name, 0 for the files that only use them."""
    users = {f"sched/user_{i}.py": "from tasks.spec import NestedContainer\n\n\ndef run(graph):\n"
             "    return NestedContainer(graph).to_container(graph)\n" for i in range(3)}
    spec = ("class NestedContainer:\n    def __init__(self, items):\n        self.items = items\n\n"
            "    def to_container(self, graph):\n        return list(self.items)\n")
    other = "class FlatContainer:\n    def to_container(self, graph):\n        return graph\n"
    repo = build_repo(tmp_path / "r", {**users, "tasks/spec.py": spec, "tasks/flat.py": other})
    report = "`NestedContainer.to_container` gets tracked individually per container object by the GC"
    with open_index(repo.path, ref="main") as view:
        found = {c.path: c.defines for c in file_evidence(view, SearchRequest(report, limit=10))}
    assert found["tasks/spec.py"] == 1.0
    assert found["tasks/flat.py"] == 0.5
    assert {found[p] for p in users} == {0.0}


def test_a_bare_file_name_several_files_share_names_none_of_them() -> None:
    """`python main.py` in a report is the reporter's script, not one of the project's two."""
    paths = PathIndex.of(["mypy/main.py", "mypyc/irbuild/main.py", "mypy/subtypes.py", "pkg/wire/frames.py"])
    assert paths.named(["main.py"]) == set()
    assert paths.named(["mypy/main.py"]) == {"mypy/main.py"}
    assert paths.named(["frames.py"]) == {"pkg/wire/frames.py"}
    assert paths.named(["mypy.subtypes"]) == {"mypy/subtypes.py"}


def test_named_identifiers_are_the_whole_identifiers_written() -> None:
    assert named_identifiers("`NestedContainer.to_container` leaks; see parseHeader and HTTP get") == (
        "NestedContainer", "to_container", "parseHeader")
    assert named_identifiers("the cache is never cleared") == ()


def test_group_files_answers_ranked_files_with_spans(tmp_path: Path) -> None:
    spread = "".join(f"def step_{i}(invoice, ledger):\n    ledger.post(invoice.total)\n\n\n" for i in range(6))
    repo = build_repo(tmp_path / "r", {"billing/posting.py": spread, "billing/other.py": _filler(5)})
    with open_index(repo.path, ref="main") as view:
        resp = search(view, SearchRequest("post the invoice total to the ledger", limit=3, group_by="file"))
    assert resp.files and resp.files[0].path == "billing/posting.py"
    first = resp.files[0]
    assert first.role == "source" and 1 <= len(first.spans) <= 3 and first.hits >= len(first.spans)
    assert all(s.path == first.path for s in first.spans) and first.why
    assert len({f.path for f in resp.files}) == len(resp.files) <= 3
    with pytest.raises(InvalidParameter, match="unknown role 'banana'"):
        with open_index(repo.path, ref="main") as view:
            search(view, SearchRequest("x y", roles=("banana",)))


def test_a_file_found_by_its_whole_text_names_the_definition_its_window_lies_in(tmp_path: Path) -> None:
    """Issue 45 (gin's "where are routes matched"): a file ranked on its whole text (here by
    the word forms `route`/`match` only the file ranking reads) answers a window of its best
    chunk; inside a method, the hit is that method's (a handle for get_symbol), not the file's."""
    tree = ("class Node:\n    size = 0\n\n    def lookup(self, path):\n        node = self\n"
            "        parts = path.split('/')\n        seen = []\n        depth = 0\n"
            "        # match the route for this path: walk the tree down to the route whose\n"
            "        # prefix fits, match by match\n"
            "        while node.children:\n            node = node.children[0]\n"
            "            seen.append(node)\n            depth += 1\n        return node.handler, parts, seen\n")
    repo = build_repo(tmp_path / "r", {"router/tree.py": tree, "other.py": _filler(4)})
    with open_index(repo.path, ref="main") as view:
        resp = search(view, SearchRequest("where are routes matched", limit=5))
    [hit] = [h for h in resp.results if h.path == "router/tree.py"]
    assert hit.match == "file_bm25" and 4 <= hit.line_start <= hit.line_end <= 15
    assert (hit.kind, hit.qualified_name) == ("method", "router.tree.Node.lookup") and hit.symbol_id


# ---- the pure pieces ---------------------------------------------------------------------------
def test_query_terms_weigh_boilerplate_little_and_identifiers_a_lot() -> None:
    qt = query_terms("Fix crash when parseHTTPResponse gets an empty body; update the docs")
    assert qt.weights["fix"] < 1.0 and qt.weights["update"] < 1.0
    assert qt.weights["parsehttpresponse"] > qt.weights["body"] == 1.0
    assert "the" not in qt.weights and "when" not in qt.weights
    assert "docs" in qt.asked_roles


@pytest.mark.parametrize("path,mentions,named", [
    ("pkg/wire/frames.py", ["/home/me/venv/lib/pkg/wire/frames.py"], True),
    ("pkg/wire/frames.py", ["frames.py"], True),
    ("pkg/wire/frames.py", ["pkg.wire.frames.read_frame"], True),
    ("src/pkg/wire/__init__.py", ["pkg.wire"], True),
    ("src/tokio/runtime/handle.rs", ["tokio::runtime::handle::Handle"], True),
    ("pkg/wire/frames.py", ["wire.py"], False),
    ("pkg/wire/frames.py", ["pkg.other"], False),
])
def test_names_file(path: str, mentions: list[str], named: bool) -> None:
    assert names_file(path, mentions) is named


@pytest.mark.parametrize("path,head,role", [
    ("src/attr/_make.py", "", "source"), ("tests/test_make.py", "", "test"),
    ("internal/mock_store.go", "", "mock"), ("store/store_mock.go", "", "mock"),
    ("src/test/java/a/FooTest.java", "", "test"), ("AutoMapper.UnitTests/Bug.cs", "", "test"),
    ("Tests/SessionTests.swift", "", "test"), ("spec/base_spec.rb", "", "test"),
    ("lib/parser_spec.rb", "", "test"), ("src/app.spec.ts", "", "test"), ("dask/_task_spec.py", "", "source"),
    ("spec/models_spec.py", "", "test"), ("tests/openapi_spec.py", "", "test"),
    ("README.zh-CN.md", "", "translated_docs"), ("docs/ja/index.md", "", "translated_docs"),
    ("README.md", "", "docs"), ("package.json", "", "config"), ("Makefile", "", "config"),
    ("examples/hello/main.go", "", "example"), ("benches/parse.rs", "", "benchmark"),
    ("vendor/x/y.go", "", "vendored"), ("test/fixtures/a.js", "", "fixture"),
    ("api/x.pb.go", "", "generated"), ("lib/latest.js", "", "source"),
    ("x/model.go", "// Code generated by sqlc. DO NOT EDIT.\npackage x\n", "generated"),
])
def test_file_role(path: str, head: str, role: str) -> None:
    assert file_role(path, head) == role


def test_a_role_the_query_asks_for_keeps_most_of_its_score() -> None:
    assert role_prior("test", frozenset()) < role_prior("test", frozenset({"test"})) <= role_prior("source", frozenset())


# ---- grouping never loses a hit ----------------------------------------------------------------
def _hit(path: str, n: int) -> SearchHit:
    return SearchHit(path, n, n, "function", f"f{n}", f"f{n}", None, None, 1.0, "", "symbol", f"{path}#{n}")


hits_strategy = st.lists(st.tuples(st.sampled_from(["a.py", "b/c.go", "d.rs", "e/f.ts", "g.rb"]),
                                   st.integers(1, 500)), max_size=40, unique=True)


@settings(max_examples=200, deadline=None)
@given(hits_strategy, st.permutations(["a.py", "b/c.go", "d.rs", "e/f.ts", "g.rb", "h.py"]),
       st.integers(0, 6), st.integers(1, 4))
def test_grouping_and_file_order_never_lose_a_hit(raw, order, n_ranked, per_file) -> None:
    hits = [_hit(p, n) for p, n in raw]
    groups = group_by_file(hits)
    assert sorted((h.path, h.line_start) for _, g in groups for h in g) == sorted(raw)
    assert [p for p, _ in groups] == list(dict.fromkeys(h.path for h in hits))
    assert all(h.path == p for p, g in groups for h in g)
    ranked = [(p, 1.0 - i / 10) for i, p in enumerate(order[:n_ranked])]
    bare = {p: _hit(p, 0) for p, _ in ranked if p not in {h.path for h in hits}}
    ordered = order_by_files(hits, ranked, bare, per_file)
    assert sorted((h.path, h.line_start) for h in ordered) == sorted(raw + [(p, 0) for p in bare])
    assert all(a.score >= b.score for a, b in zip(ordered, ordered[1:]))
    firsts = list(dict.fromkeys(h.path for h in ordered))
    ranked_present = [p for p, _ in ranked if p in firsts]
    assert firsts[:len(ranked_present)] == ranked_present


def test_a_reports_template_furniture_weighs_nothing():
    from codeagent.query.terms import named_identifiers, query_terms

    report = ("Task input persisted leading to memory not being released\n### First check\n"
              "- [X] I used the GitHub search to find a similar request\n<!-- Please describe\nthe bug -->\n"
              "### Describe the current behavior\nThe flow keeps the dataframe alive after the task returns. " * 2)
    weights = query_terms(report).weights
    assert "persisted" in weights and "dataframe" in weights
    assert not {"github", "similar", "describe", "behavior"} & set(weights)


def test_a_reports_title_weighs_more_than_its_body() -> None:
    from codeagent.query.terms import TITLE_WEIGHT

    body = "The download log lists every format first, then the thumbnail step fails. " * 4
    weights = query_terms("Thumbnail embedding broken for playlists\n" + body).weights
    assert weights["playlists"] == weights["embedding"] == TITLE_WEIGHT > 1.0
    assert weights["thumbnail"] == TITLE_WEIGHT and weights["format"] == 1.0
    assert query_terms("Thumbnail embedding broken " + body).weights["thumbnail"] == 1.0  # one line: no title
    assert query_terms("Thumbnail embedding broken\nthe log").weights["thumbnail"] == 1.0  # short: no report


def test_a_report_ranks_the_file_its_title_is_about_above_the_one_its_log_matches(tmp_path: Path) -> None:
    """A verbose log names the session's machinery line after line; the title names the site.
    With the title weighing as much as the log (TITLE_WEIGHT 1) the machinery ranks first."""
    net = "def proxy_map(proxy, encodings):\n    \"\"\"The proxy map and the encodings of the session.\"\"\"\n" \
          "    return [proxy, encodings]\n"
    site = ("class ClipSiteIE:\n    \"\"\"Videos of the clipsite website.\"\"\"\n"
            "    def extract(self, url):\n        return url\n")
    repo = build_repo(tmp_path / "r", {"tube/networking.py": net * 3, "tube/extractor/clipsite.py": site,
                                       **{f"tube/extractor/other_{i}.py": _filler(3) for i in range(4)}})
    log = "".join(f"[debug] proxy map: {i}, encodings utf-8\n" for i in range(8))
    report = "[clipsite] video not found\nRunning with the options below:\n```\n" + log + "```\nThe video plays."
    assert _files(repo.path, report)[0] == "tube/extractor/clipsite.py"
