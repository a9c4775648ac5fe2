"""Answers an agent can afford (issue 40): a 1,500-token first answer counting the text block
and the structured content, cut on whole items with a cursor and a hint, a compact text
rendering, one search hit per file, collapsed outlines, read_file pages; and what a seed's
client sends is understood (seed names, `ref: HEAD`), through the real SDK client."""

from __future__ import annotations

import json

import pytest

from mcp_helpers import error_of, memory_client, ok, run_cli

pytestmark = pytest.mark.anyio

DEFAULT_CHARS = 1500 * 4


def _size(result) -> int:
    return len(result.content[0].text) + len(json.dumps(result.structured_content, separators=(",", ":"),
                                                        ensure_ascii=False))


def _big_module(classes: int = 6, methods: int = 20) -> str:
    out = ['"""A module large enough to be cut."""\n\nLIMIT = 3\n']
    for c in range(classes):
        out.append(f"\n\nclass Widget{c}:\n    \"\"\"Widget number {c}.\"\"\"\n")
        for m in range(methods):
            out.append(f"\n    def method_{m}(self, value, other=None):\n"
                       f"        \"\"\"Method {m} of widget {c}.\"\"\"\n"
                       f"        return render_widget(value, {m}) + {c}\n")
    out.append("\n\ndef render_widget(value, n):\n    return value * n\n")
    return "".join(out)


@pytest.fixture
def big_repo(indexed_repo):
    indexed_repo.write("pkg/widgets.py", _big_module())
    indexed_repo.write("pkg/calls.py", "from pkg.widgets import render_widget\n\n" + "".join(
        f"def caller_{i}():\n    return render_widget({i}, {i})\n\n" for i in range(60)))
    indexed_repo.commit("widgets")
    run_cli("build", indexed_repo.path)
    return indexed_repo


async def test_first_answers_fit_the_default_budget_and_go_on_by_cursor(big_repo):
    async with memory_client(big_repo.path) as c:
        calls = [("search_code", {"query": "render widget value", "per_file": 0}),
                 ("get_file_outline", {"path": "pkg/widgets.py", "expand": ["*"]}),
                 ("get_callers", {"symbol_id": "pkg.widgets.render_widget"}),
                 ("read_file", {"path": "pkg/widgets.py"}),
                 ("search_files", {"pattern": "return"}),
                 ("search_symbols", {"query": "method"})]
        for tool, args in calls:
            res = await c.call_tool(tool, args)
            body = ok(res)
            assert _size(res) <= DEFAULT_CHARS, (tool, _size(res))
            assert body["truncated"] and body["next_cursor"] and body["omitted"], tool
            text = res.content[0].text
            assert not text.startswith("{") and "next_cursor: " + body["next_cursor"] in text, tool
            nxt = ok(await c.call_tool(tool, {**args, "cursor": body["next_cursor"]}))
            assert nxt != body, tool
        whole = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.widgets.render_widget",
                                                      "max_tokens": 100_000}))
        assert len(whole["nodes"]) >= 60 + 6 * 20 and not whole.get("next_cursor")


async def test_read_file_pages_whole_lines_even_at_the_smallest_budget(big_repo):
    source = (big_repo.path / "pkg/widgets.py").read_text()
    lines = source.splitlines(keepends=True)
    async with memory_client(big_repo.path) as c:
        for tokens in (256, 400, 700):
            first = ok(await c.call_tool("read_file", {"path": "pkg/widgets.py", "max_tokens": tokens}))
            assert first["content"] and first["line_start"] == 1 and first["line_end"] >= 2, tokens
            assert first["content"] == "".join(lines[:first["line_end"]])
            assert first["next_cursor"] and first["truncated"]
        got, args = "", {"path": "pkg/widgets.py", "max_tokens": 2000}
        for _ in range(200):
            page = ok(await c.call_tool("read_file", args))
            assert page["line_start"] == got.count("\n") + 1
            got += page["content"]
            if not page.get("next_cursor"):
                break
            args = {**args, "cursor": page["next_cursor"]}
        assert got == source


async def test_search_code_keeps_one_hit_per_file_and_counts_the_rest(big_repo):
    async with memory_client(big_repo.path) as c:
        body = ok(await c.call_tool("search_code", {"query": "method", "limit": 10,
                                                    "max_tokens": 20_000}))
        paths = [h["path"] for h in body["results"]]
        assert len(paths) == len(set(paths))
        assert any(h.get("more_in_file", 0) > 0 for h in body["results"])
        every = ok(await c.call_tool("search_code", {"query": "method", "limit": 10, "per_file": 0,
                                                     "max_tokens": 20_000}))
        assert len({h["path"] for h in every["results"]}) < len(every["results"])
        assert all(0 <= h["score"] <= 1 for h in every["results"])
        assert isinstance(every["latency_ms"], int)


async def test_a_large_outline_counts_members_until_expanded(big_repo):
    async with memory_client(big_repo.path) as c:
        short = ok(await c.call_tool("get_file_outline", {"path": "pkg/widgets.py",
                                                          "max_tokens": 20_000}))
        names = [s["name"] for s in short["symbols"]]
        assert names[:6] == [f"Widget{i}" for i in range(6)] and "method_0" not in names
        assert short["symbols"][0]["collapsed"] == {"method": 20}
        assert short["collapsed"] == {"constant": 1}
        one = ok(await c.call_tool("get_file_outline", {"path": "pkg/widgets.py", "expand": ["Widget2"],
                                                        "max_tokens": 20_000}))
        assert [s["name"] for s in one["symbols"]].count("method_0") == 1
        every = ok(await c.call_tool("get_file_outline", {"path": "pkg/widgets.py", "expand": ["*"],
                                                          "max_tokens": 100_000}))
        assert len(every["symbols"]) == 1 + 6 * 21 + 1


async def test_format_json_gives_the_whole_json_as_text(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        res = await c.call_tool("search_code", {"query": "helper", "format": "json"})
        assert json.loads(res.content[0].text) == res.structured_content
        human = await c.call_tool("search_code", {"query": "helper"})
        assert "pkg.core.helper" in human.content[0].text and "[" in human.content[0].text
        err = error_of(await c.call_tool("search_code", {"query": "helper", "format": "yaml"}))
        assert err["arguments"] == ["format"]


async def test_seed_arguments_are_understood(indexed_repo):
    """Seeds 000-004 name arguments ours spell differently or do without: each is taken, with
    its meaning where it has one, else named in metadata.ignored_arguments; a wrong type is
    still an error, and so is an unknown kind."""
    indexed_repo.write("lib/extra.py", "def helper_two():\n    return 2\n")
    indexed_repo.commit("extra")
    run_cli("build", indexed_repo.path)
    async with memory_client(indexed_repo.path) as c:
        scoped = ok(await c.call_tool("search_code", {"query": "helper", "directory": "lib"}))
        assert {h["path"] for h in scoped["results"]} == {"lib/extra.py"}
        scoped = ok(await c.call_tool("search_code", {"query": "helper", "path": "pkg"}))
        assert {h["path"] for h in scoped["results"]} == {"pkg/core.py"}
        whole = ok(await c.call_tool("search_code", {"query": "helper", "path": ".", "file_type": "py",
                                                     "expand_query": True, "synthesize": False,
                                                     "repository_id": "r1"}))
        assert {"pkg/core.py", "lib/extra.py"} <= {h["path"] for h in whole["results"]}
        assert whole["metadata"]["ignored_arguments"] == ["repository_id", "expand_query", "synthesize"]
        sym = ok(await c.call_tool("get_symbol", {"node_id": "pkg.core.helper"}))
        assert sym["symbol"]["name"] == "helper" and sym["has_doc_comment"] is True
        assert sym["parameter_count"] == 1 and sym["is_public_api"] is True
        found = ok(await c.call_tool("search_symbols", {"query": "Base", "node_type": "class",
                                                        "project_id": "p"}))
        assert found["results"][0]["qualified_name"] == "pkg.core.Base"
        ext = ok(await c.call_tool("get_dependents", {"node_id": "pkg.core.Base", "edge_type": "extends"}))
        assert "pkg.core.Child" in {n["qualified_name"] for n in ext["nodes"]}
        for tool, args, name in (("search_code", {"query": "x", "expand_query": "yes"}, "expand_query"),
                                 ("search_code", {"query": "x", "file_type": "p/y"}, "file_type"),
                                 ("search_symbols", {"query": "x", "kind": "bogus"}, None)):
            err = error_of(await c.call_tool(tool, args))
            assert err["code"] == "invalid_parameter", (tool, args, err)
            assert name is None or err["arguments"] == [name]


async def test_ref_head_and_the_status_alias(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        served = ok(await c.call_tool("search_symbols", {"query": "helper"}))
        for ref in ("HEAD", indexed_repo.repo.head.commit.hexsha[:10]):
            body = ok(await c.call_tool("search_symbols", {"query": "helper", "ref": ref}))
            assert body["results"] == served["results"], ref
        status = ok(await c.call_tool("get_status", {}))
        assert status["watcher_active"] is False and status["embeddings_count"] == 0
        assert status["metadata"]["indexing_status"] == "ready"
        assert status["metadata"]["protocol_version"]
        missing = await c.call_tool("get_symbol", {"symbol_id": "nope"})
        assert json.loads(missing.content[0].text)["metadata"]["manifest_id"]


async def test_files_withheld_for_their_content_are_not_listed(indexed_repo):
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAx\n-----END RSA PRIVATE KEY-----\n"
    indexed_repo.write("notes_backup.txt", key)
    indexed_repo.write("conf/settings.json", '{"aws_access_key_id": "AKIAZ3MSJV4WWNKWW5FG"}\n')
    corpus = '[{"input": "http://user:pass@foo:21/bar;par?b#c", "href": "http://user:pass@foo/"}]\n'
    indexed_repo.write("tests/models/urls.json", corpus)  # a URL test corpus: no secret
    indexed_repo.commit("oops")
    run_cli("build", indexed_repo.path)
    indexed_repo.write("conf/later.txt", key)  # after the build: found by the detector live
    async with memory_client(indexed_repo.path) as c:
        for path in ("notes_backup.txt", "conf/settings.json", "conf/later.txt"):
            assert error_of(await c.call_tool("read_file", {"path": path}))["code"] == "withheld"
        root = ok(await c.call_tool("list_directory", {}))
        assert "notes_backup.txt" not in {e["name"] for e in root["entries"]}
        conf = ok(await c.call_tool("list_directory", {"path": "conf"}))
        assert conf["entries"] == []
        files = ok(await c.call_tool("list_files", {"max_tokens": 20_000}))
        listed = {f["path"] for f in files["files"]}
        assert "pkg/core.py" in listed and not listed & {"notes_backup.txt", "conf/settings.json",
                                                         "conf/later.txt"}
        assert "tests/models/urls.json" in listed
        assert ok(await c.call_tool("read_file", {"path": "tests/models/urls.json"}))["content"] == corpus


async def test_search_files_leaves_installed_and_minified_files_out_unless_asked(indexed_repo):
    indexed_repo.write("node_modules/dep/index.js", "function needle_here() {}\n")
    indexed_repo.write("web/app.min.js", "function needle_here(){}\n")
    indexed_repo.write("web/app.js", "function needle_here() {}\n")
    async with memory_client(indexed_repo.path) as c:
        found = ok(await c.call_tool("search_files", {"pattern": "needle_here"}))
        assert {m["path"] for m in found["matches"]} == {"web/app.js"}
        asked = ok(await c.call_tool("search_files", {"pattern": "needle_here", "glob": "**/*.js"}))
        assert {m["path"] for m in asked["matches"]} == {"web/app.js", "web/app.min.js",
                                                          "node_modules/dep/index.js"}
