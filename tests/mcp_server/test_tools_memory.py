"""Tool behaviour through an in-memory client session (fast): listing, schemas, file tools,
argument errors and error codes (the last two also over stdio)."""

from __future__ import annotations

import base64

import pytest
from mcp.shared.exceptions import MCPError

from mcp_helpers import error_code, error_of, memory_client, ok, run_cli, stdio_client

pytestmark = pytest.mark.anyio

READ_ONLY_TOOLS = [
    "list_directory", "get_directory_tree", "list_files", "read_file", "search_files",
    "get_repo_overview", "search_code", "get_context", "search_symbols", "locate_symbol",
    "lookup_symbol", "search_docs", "find_similar", "get_symbol", "get_source_spans", "get_file_outline",
    "get_callers", "get_callees", "get_references", "get_implementations", "get_dependencies",
    "get_dependents", "code_research", "get_impact", "index_status",
]
BUILD_TOOLS = ["index_repo", "sync_repo", "index_files"]
CORE_TOOLS = ["list_directory", "read_file", "search_files", "get_repo_overview", "search_code",
              "get_context", "search_symbols", "lookup_symbol", "get_symbol", "get_file_outline",
              "get_callers", "get_callees", "get_references", "code_research", "get_impact",
              "index_status"]
TOOLS_LIST_BUDGET = 15_000  # characters of a compact tools/list answer, by default


async def test_default_profile_is_core_and_small(indexed_repo):
    """`serve` without --tools offers the core tools in a tools/list of at most 15,000
    characters; `--tools all` every tool, each under its own name."""
    import json

    async with stdio_client(indexed_repo.path, "--tools", "core", "--allow-build") as c:
        tools = (await c.list_tools()).tools
    assert [t.name for t in tools] == CORE_TOOLS + BUILD_TOOLS
    async with memory_client(indexed_repo.path, tools="core") as c:
        listed = await c.list_tools()
    size = len(json.dumps(listed.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          separators=(",", ":")))
    assert size <= TOOLS_LIST_BUDGET, f"tools/list is {size} characters"
    for t in listed.tools:
        assert "max_tokens" in t.input_schema["properties"]
        assert len(t.description) >= 60 and "Use " in t.description, (t.name, t.description)


async def test_tools_list_order_schemas_annotations(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        tools = (await c.list_tools()).tools
    assert [t.name for t in tools] == READ_ONLY_TOOLS
    for t in tools:
        assert t.title and t.description, t.name
        assert t.input_schema["type"] == "object"
        assert t.output_schema and t.output_schema["type"] == "object", t.name
        props = t.output_schema["properties"]
        assert "metadata" in props, f"{t.name} has no metadata in its output schema"
        assert t.annotations.read_only_hint is True and t.annotations.destructive_hint is False
        assert _svg_icon(t.icons), t.name
    assert len({t.icons[0].src for t in tools}) == 5, "one icon per tool group"
    read_file = next(t for t in tools if t.name == "read_file")
    assert read_file.input_schema["required"] == ["path"]
    assert set(read_file.input_schema["properties"]) == {"path", "line_start", "line_end",
                                                         "max_bytes", "encoding", "max_tokens",
                                                         "format", "cursor"}


def _svg_icon(icons) -> str:
    """The SVG of a tool's one icon (a data: URI, so clients show it offline)."""
    from urllib.parse import unquote

    assert icons and len(icons) == 1
    prefix = "data:image/svg+xml,"
    assert icons[0].src.startswith(prefix) and " " not in icons[0].src
    svg = unquote(icons[0].src[len(prefix):])
    assert svg.startswith("<svg") and "<script" not in svg
    return svg


async def test_build_tools_only_with_flag(indexed_repo):
    async with memory_client(indexed_repo.path, allow_build=True) as c:
        tools = (await c.list_tools()).tools
    assert [t.name for t in tools] == READ_ONLY_TOOLS + BUILD_TOOLS
    assert all(t.annotations.read_only_hint is False for t in tools[-3:])


async def test_file_tools(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        root = ok(await c.call_tool("list_directory", {}))
        names = [e["name"] for e in root["entries"]]
        assert names[:3] == ["docs", "keys", "pkg"] or "pkg" in names
        assert ".env" not in names and "build" not in names and "debug.log" not in names
        assert root["metadata"]["manifest_id"] and root["metadata"]["ref"] == "worktree"
        assert root["metadata"]["schema_status"] == "compatible"

        tree = ok(await c.call_tool("get_directory_tree", {"depth": 2}))
        pkg = next(n for n in tree["tree"]["children"] if n["name"] == "pkg")
        assert {n["name"] for n in pkg["children"]} == {"__init__.py", "core.py"}
        capped = ok(await c.call_tool("get_directory_tree", {"max_entries": 2}))
        assert capped["truncated"] is True and capped["entry_count"] == 2
        assert capped["metadata"]["completeness"] == "truncated"

        files = ok(await c.call_tool("list_files", {"pattern": "*.py"}))
        assert [f["path"] for f in files["files"]] == ["pkg/__init__.py", "pkg/core.py"]
        hidden = ok(await c.call_tool("list_files", {"include_hidden": True}))
        assert ".gitignore" in {f["path"] for f in hidden["files"]}
        assert ".env" not in {f["path"] for f in hidden["files"]}

        part = ok(await c.call_tool("read_file", {"path": "pkg/core.py", "line_start": 5, "line_end": 7}))
        assert part["content"] == "class Base:\n    def run(self):\n        return helper(1)\n"
        assert part["total_lines"] == 22 and part["truncated"] is False
        assert (part["line_start"], part["line_end"]) == (5, 7)
        small = ok(await c.call_tool("read_file", {"path": "notes.txt", "max_bytes": 40}))
        assert small["truncated"] is True and len(small["content"].encode()) <= 40
        assert small["metadata"]["completeness"] == "truncated"
        raw = ok(await c.call_tool("read_file", {"path": "blob.bin", "encoding": "base64"}))
        assert base64.b64decode(raw["content"]) == (indexed_repo.path / "blob.bin").read_bytes()
        assert raw["mime_type"] == "image/png"

        overview = ok(await c.call_tool("get_repo_overview", {}))
        assert overview["root"] == indexed_repo.path.name and "/" not in overview["root"]
        assert "python" in {s["language"] for s in overview["languages"]}
        assert overview["total_files"] >= 6


@pytest.mark.parametrize("client", [memory_client, stdio_client], ids=["memory", "stdio"])
async def test_error_codes(indexed_repo, client):
    async with client(indexed_repo.path) as c:
        cases = {
            ("read_file", "../outside.txt"): "path_escape",
            ("read_file", "/etc/passwd"): "path_escape",
            ("read_file", "blob.bin"): "binary_file",
            ("read_file", ".env"): "withheld",
            ("read_file", "keys/server.pem"): "withheld",
            ("read_file", "missing.py"): "not_found",
            ("read_file", "build/out.js"): "not_found",
            ("list_directory", "../"): "path_escape",
        }
        for (tool, path), code in cases.items():
            res = await c.call_tool(tool, {"path": path})
            assert error_code(res) == code, (tool, path)
            assert "/tmp" not in str(res.structured_content), "absolute path leaked"
        res = await c.call_tool("read_file", {"path": "pkg/core.py", "line_start": 999})
        assert error_code(res) == "invalid_parameter"
        with open(indexed_repo.path / "huge.txt", "wb") as fh:
            fh.truncate(17 * 1024 * 1024)  # sparse: over the 16 MiB read cap
        res = await c.call_tool("read_file", {"path": "huge.txt"})
        assert error_code(res) == "too_large"
        res = await c.call_tool("get_symbol", {"symbol_id": "no-such-symbol"})
        assert error_code(res) == "not_found"
        res = await c.call_tool("get_file_outline", {"path": "../../etc/passwd"})
        assert error_code(res) == "path_escape"
        res = await c.call_tool("get_file_outline", {"path": ".env"})
        assert error_code(res) == "withheld"
        for tool, args in (("search_code", {"query": "API_KEY do-not-leak"}),
                           ("search_files", {"pattern": "do-not-leak"}),
                           ("search_code", {"query": "do-not-leak", "mode": "text"})):
            found = ok(await c.call_tool(tool, args))
            assert "do-not-leak" not in str(found), f"{tool} served a secret"


@pytest.mark.parametrize("client", [memory_client, stdio_client], ids=["memory", "stdio"])
async def test_invalid_arguments_are_error_results_naming_them(indexed_repo, client):
    """2025-11-25: argument errors are isError tool results the model can read and correct;
    types are strict ("10" is no integer, "yes" no boolean). An unknown tool stays -32602."""
    async with client(indexed_repo.path) as c:
        bad = [("read_file", {}, "path"), ("read_file", {"path": "x", "line_start": 0}, "line_start"),
               ("read_file", {"path": "x", "bogus": 1}, "bogus"),
               ("get_directory_tree", {"depth": 99}, "depth"),
               ("search_code", {"query": ""}, "query"),
               ("read_file", {"path": "x", "encoding": "latin-1"}, "encoding"),
               ("search_code", {"query": "helper", "limit": "10"}, "limit"),
               ("list_files", {"include_hidden": "yes"}, "include_hidden"),
               ("search_code", {"query": "helper", "semantic_weight": "0.5"}, "semantic_weight"),
               ("index_status", {"ref": 7}, "ref"),
               ("search_code", {"query": "helper", "max_tokens": "900"}, "max_tokens"),
               ("search_code", {"query": "helper", "cursor": "not-a-cursor"}, "cursor")]
        for tool, args, name in bad:
            err = error_of(await c.call_tool(tool, args))
            assert err["code"] == "invalid_parameter", (tool, args, err)
            assert f"`{name}" in err["message"] and err["arguments"] == [name], (tool, args, err)
        with pytest.raises(MCPError) as info:
            await c.call_tool("no_such_tool", {})
        assert info.value.error.code == -32602


async def test_index_missing_names_build_command(sample_repo):
    async with memory_client(sample_repo.path) as c:
        res = await c.call_tool("search_code", {"query": "helper"})
        assert error_code(res) == "index_missing"
        assert "codeagent build" in error_of(res)["hint"]
        listing = ok(await c.call_tool("list_directory", {"path": "pkg"}))
        assert listing["metadata"]["schema_status"] == "not_indexed"
        status = ok(await c.call_tool("index_status", {}))
        assert status["index_status"] == "not_indexed" and status["manifest_id"] is None
    async with memory_client(sample_repo.path, allow_build=True) as c:
        hint = error_of(await c.call_tool("search_code", {"query": "helper"}))["hint"]
        assert "index_repo" in hint and "codeagent" not in hint, hint


async def test_find_similar_needs_vectors(indexed_repo):
    from mcp_helpers import run_cli

    async with memory_client(indexed_repo.path) as c:
        res = await c.call_tool("find_similar", {"symbol_id": "pkg.core.helper"})
        assert error_code(res) == "index_missing"
        assert "--embedder" in error_of(res)["hint"]
        run_cli("build", indexed_repo.path, "--embedder", "hash")
        similar = ok(await c.call_tool("find_similar", {"symbol_id": "pkg.core.helper", "limit": 3}))
        assert similar["results"] and all(r["name"] != "helper" for r in similar["results"])
        assert all(r.get("symbol_id") or r["result_id"] for r in similar["results"])
        hybrid = ok(await c.call_tool("search_code", {"query": "join a path", "mode": "hybrid",
                                                      "semantic_weight": 0.7}))
        assert hybrid["results"][0]["name"] == "helper"


def _pretend_newer_layout(repo) -> None:
    """Make the assembled index look written by a future codeagent (assembly version 999),
    with its SUMS re-recorded so only the version differs."""
    import json

    import duckdb

    from codeagent import format as fmt
    from codeagent.hashing import hash_stream
    from codeagent.store import Store

    store = Store(repo / ".codeagent")
    directory = store.assembled_dir(store.read_ref("worktree"))
    con = duckdb.connect(str(directory / fmt.DUCKDB_FILE))
    con.execute("UPDATE meta SET value = '999' WHERE key = 'assembly_version'")
    con.execute("CHECKPOINT")
    con.close()
    sums_path = directory / fmt.ASSEMBLY_SUMS
    sums = json.loads(sums_path.read_bytes())
    for name in sums:
        with open(directory / name, "rb") as fh:
            sums[name] = [(directory / name).stat().st_size, hash_stream(fh)]
    sums_path.write_text(json.dumps(sums))


async def test_index_incompatible(indexed_repo):
    _pretend_newer_layout(indexed_repo.path)
    async with memory_client(indexed_repo.path) as c:
        res = await c.call_tool("search_code", {"query": "helper"})
        assert error_code(res) == "index_incompatible"
        assert "codeagent build" in error_of(res)["hint"]
        status = ok(await c.call_tool("index_status", {}))
        assert status["index_status"] == "incompatible" and status["healthy"] is False
        assert status["metadata"]["schema_status"] == "reindex_required"
        listing = ok(await c.call_tool("list_directory", {}))
        assert listing["metadata"]["schema_status"] == "reindex_required"


async def test_search_files_timeout(sample_repo):
    from mcp_helpers import run_cli

    line = "".join(f"word{i} value{i * 7} " for i in range(8)) + "\n"
    for i in range(5):
        sample_repo.write(f"data/d{i}.txt", line * (1_900_000 // len(line)))
    run_cli("build", sample_repo.path)
    async with memory_client(sample_repo.path) as c:
        res = await c.call_tool("search_files", {"pattern": "[a-z]+[0-9]+ value", "is_regex": True,
                                                 "max_results": 1000, "timeout_ms": 10})
        assert error_code(res) == "timeout"  # the same search takes ~0.2-0.5 s here
        assert error_of(res)["hint"]


async def test_lookup_symbol_is_exact_and_research_walks_callers(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        found = ok(await c.call_tool("lookup_symbol", {"qualified_name": "pkg.core.Base.run"}))
        assert [r["qualified_name"] for r in found["results"]] == ["pkg.core.Base.run"]
        assert ok(await c.call_tool("lookup_symbol", {"qualified_name": "run"}))["results"] == []
        steps: list[float] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            steps.append(p)

        for question in ("what calls helper", "helper"):
            steps.clear()
            research = ok(await c.call_tool("code_research", {"query": question},
                                            progress_callback=on_progress))
            first = {n["qualified_name"] for n in research["hops"][0]["nodes"]}
            assert {"pkg.core.main", "pkg.core.Base.run"} <= first, (question, first)
            assert research["hops"][0]["description"] == "in calls"
            assert steps and steps == sorted(set(steps)), f"progress went back: {steps}"
        flow = ok(await c.call_tool("code_research", {"query": "what does main call"}))
        assert "pkg.core.helper" in {n["qualified_name"] for h in flow["hops"] for n in h["nodes"]}


async def test_ref_argument_answers_from_that_ref(indexed_repo):
    run_cli("build", indexed_repo.path, "--ref", "main")
    indexed_repo.write("pkg/extra.py", "def brand_new_thing():\n    return 1\n")
    run_cli("build", indexed_repo.path)
    async with memory_client(indexed_repo.path) as c:
        live = ok(await c.call_tool("lookup_symbol", {"qualified_name": "pkg.extra.brand_new_thing"}))
        assert live["results"] and live["metadata"]["ref"] == "worktree"
        old = ok(await c.call_tool("lookup_symbol", {"qualified_name": "pkg.extra.brand_new_thing",
                                                     "ref": "main"}))
        assert old["results"] == [] and old["metadata"]["ref"] == "heads/main"
        callers = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.core.helper", "ref": "main"}))
        assert callers["metadata"]["ref"] == "heads/main" and callers["nodes"]
        assert error_code(await c.call_tool("search_code", {"query": "x", "ref": "no-such"})) == "index_missing"


async def test_search_files_reads_the_live_work_tree(sample_repo):
    """Without an index every visible file is read; with one, the index narrows and the file
    decides: an edit after the build is found at once, and a removed line is not served."""
    async with memory_client(sample_repo.path) as c:
        bare = ok(await c.call_tool("search_files", {"pattern": "helper needs tests"}))
        assert [m["path"] for m in bare["matches"]] == ["notes.txt"]
        assert bare["metadata"]["schema_status"] == "not_indexed"
        run_cli("build", sample_repo.path)
        sample_repo.write("notes.txt", "nothing to do\n")
        sample_repo.write("pkg/new.py", "# fresh_marker_line\n")
        gone = ok(await c.call_tool("search_files", {"pattern": "helper needs tests"}))
        assert gone["matches"] == [] and gone["files_searched"] >= 5
        new = ok(await c.call_tool("search_files", {"pattern": "FRESH_MARKER", "context_lines": 1}))
        assert [(m["path"], m["line_number"]) for m in new["matches"]] == [("pkg/new.py", 1)]
        both = ok(await c.call_tool("search_files", {"pattern": r"def (helper|main)\(", "is_regex": True,
                                                     "case_sensitive": True}))
        assert [m["line_content"] for m in both["matches"]] == ["def helper(x):", "def main():"]
        assert error_code(await c.call_tool("search_files", {"pattern": "(", "is_regex": True})) == \
            "invalid_parameter"


async def test_completion_of_path_and_symbol_arguments(indexed_repo):
    from mcp_types import PromptReference

    ref = PromptReference(name="any")
    async with memory_client(indexed_repo.path) as c:
        paths = (await c.complete(ref, {"name": "path", "value": "pkg/c"})).completion
        assert paths.values == ["pkg/core.py"]
        top = (await c.complete(ref, {"name": "path", "value": ""})).completion.values
        assert "pkg/" in top and ".env" not in top and "debug.log" not in top
        names = (await c.complete(ref, {"name": "symbol_id", "value": "pkg.core.hel"})).completion
        assert names.values == ["pkg.core.helper"]
        other = (await c.complete(ref, {"name": "query", "value": "x"})).completion
        assert other.values == []


async def test_symbols_come_without_source_unless_asked_and_hints_name_tools(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        plain = ok(await c.call_tool("get_symbol", {"symbol_id": "pkg.core.helper"}))
        assert plain["symbol"]["signature"].startswith("def helper(x")
        assert [s.get("text", "") for s in plain["spans"]] == [""] and plain["spans"][0]["line_start"] == 15
        full = ok(await c.call_tool("get_symbol", {"symbol_id": "pkg.core.helper",
                                                   "include_source": True}))
        assert full["spans"][0]["text"].startswith("def helper(x):")
        hint = error_of(await c.call_tool("get_symbol", {"symbol_id": "nosuch"}))["hint"]
        assert "search_symbols" in hint and "codeagent" not in hint, hint


async def test_search_files_glob_narrows_the_walk(indexed_repo):
    async with memory_client(indexed_repo.path) as c:
        inside = ok(await c.call_tool("search_files", {"pattern": "def", "glob": "pkg/**"}))
        assert {m["path"] for m in inside["matches"]} == {"pkg/core.py"}
        assert inside["files_searched"] == 2  # pkg/__init__.py and pkg/core.py
        anywhere = ok(await c.call_tool("search_files", {"pattern": "def", "glob": "*.py"}))
        assert {m["path"] for m in anywhere["matches"]} == {"pkg/core.py"}
        missing = ok(await c.call_tool("search_files", {"pattern": "def", "glob": "nope/**"}))
        assert missing["matches"] == []


async def test_secret_by_content_is_absent_from_search_without_an_adapter_filter(sample_repo):
    """The build decides what is a secret (here by content: the name looks harmless) and
    indexes none of it; search answers straight from the index."""
    sample_repo.write("deploy/deploy_key", "-----BEGIN OPENSSH PRIVATE KEY-----\n"
                      "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----\n")
    sample_repo.write("deploy/notes.txt", "deploy key rotation happens monthly\n")
    run_cli("build", sample_repo.path)
    async with memory_client(sample_repo.path) as c:
        for query in ("OPENSSH PRIVATE KEY", "deploy key"):
            found = ok(await c.call_tool("search_code", {"query": query, "mode": "text"}))
            paths = {h["path"] for h in found["results"]}
            assert "deploy/deploy_key" not in paths, query
        assert "deploy/notes.txt" in paths
