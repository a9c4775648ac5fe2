"""End to end: the SDK's real client spawns `python -m codeagent serve` over stdio."""

from __future__ import annotations

import re

import time

import pytest

from mcp_helpers import error_code, ok, run_cli, stdio_client
from test_tools_memory import READ_ONLY_TOOLS

pytestmark = pytest.mark.anyio


async def test_every_tool_over_stdio(indexed_repo):
    async with stdio_client(indexed_repo.path) as c:
        assert [t.name for t in (await c.list_tools()).tools] == READ_ONLY_TOOLS
        await _check_files(c, indexed_repo.path.name)
        helper = ok(await c.call_tool("lookup_symbol", {"qualified_name": "pkg.core.helper"}))["results"][0]
        assert (helper["path"], helper["line_start"], helper["kind"]) == ("pkg/core.py", 15, "function")
        sid = helper["symbol_id"]
        assert sid and helper["symbol_stable_id"]
        await _check_search(c, sid)
        await _check_inspection(c, sid)
        await _check_graph(c, sid)
        await _check_research(c)
        for tool in ("index_status", "get_status"):
            status = ok(await c.call_tool(tool, {}))
            assert status["index_status"] == "ready" and status["counts"]["symbols"] >= 6
            assert "python" in status["languages"] and status["recent_builds"]
            assert str(indexed_repo.path) not in str(status), "absolute path leaked"


async def _check_files(c, repo_name: str) -> None:
    root = ok(await c.call_tool("list_directory", {}))
    assert {"pkg", "docs", "README.md"} <= {e["name"] for e in root["entries"]}
    tree = ok(await c.call_tool("get_directory_tree", {"path": "pkg", "depth": 1}))
    assert {n["name"] for n in tree["tree"]["children"]} == {"__init__.py", "core.py"}
    files = ok(await c.call_tool("list_files", {"pattern": "docs/**"}))
    assert [f["path"] for f in files["files"]] == ["docs/guide.md"]
    got = ok(await c.call_tool("read_file", {"path": "docs/guide.md", "line_start": 3, "line_end": 3}))
    assert got["content"] == "## Installation\n" and got["total_lines"] == 9
    overview = ok(await c.call_tool("get_repo_overview", {"max_depth": 1}))
    assert overview["root"] == repo_name and overview["total_files"] >= 6
    grep = ok(await c.call_tool("search_files", {"pattern": "helper\\(", "is_regex": True,
                                                 "context_lines": 1}))
    assert grep["matches"] and all(m["path"] != ".env" for m in grep["matches"])
    first = grep["matches"][0]
    assert first["result_id"] == f"{first['path']}:{first['line_number']}"


async def _check_search(c, sid: str) -> None:
    search = ok(await c.call_tool("search_code", {"query": "helper", "context_after": 1}))
    assert search["results"][0]["path"] == "pkg/core.py" and search["total_count"] >= 1
    assert search["query_intent"] == "symbol" and search["latency_ms"] > 0
    assert search["suggested_next_actions"]
    assert any(r["name"] == "Child" for r in ok(await c.call_tool(
        "search_symbols", {"query": "Chil", "match": "prefix"}))["results"])
    located = ok(await c.call_tool("locate_symbol", {"name": "helper"}))["results"]
    assert located[0]["symbol_id"] == sid
    docs = ok(await c.call_tool("search_docs", {"query": "installation pip"}))["results"]
    assert docs and docs[0]["path"] == "docs/guide.md"
    assert error_code(await c.call_tool("find_similar", {"symbol_id": sid})) == "index_missing"


async def _check_inspection(c, sid: str) -> None:
    detail = ok(await c.call_tool("get_symbol", {"symbol_id": sid}))
    assert detail["symbol"]["symbol_id"] == sid and detail["symbol"]["name"] == "helper"
    assert detail["symbol"]["doc"] == "Help with x." and detail["reference_count"] >= 2
    spans = ok(await c.call_tool("get_source_spans", {"symbol_id": sid}))["spans"]
    assert spans[0]["is_primary"] and "def helper" in spans[0]["text"]
    outline = ok(await c.call_tool("get_file_outline", {"path": "pkg/core.py"}))
    assert [s["name"] for s in outline["symbols"]][:3] == ["Base", "run", "Child"]


async def _check_graph(c, sid: str) -> None:
    callers = ok(await c.call_tool("get_callers", {"symbol_id": sid}))
    assert {"run", "main"} <= {n["name"] for n in callers["nodes"]}
    assert all(e["confidence"] in ("exact", "name") for e in callers["edges"])
    main_id = next(n["symbol_id"] for n in callers["nodes"] if n["name"] == "main")
    callees = ok(await c.call_tool("get_callees", {"symbol_id": main_id}))
    assert "helper" in {n["name"] for n in callees["nodes"]}
    assert ok(await c.call_tool("get_references", {"symbol_id": sid}))["nodes"]
    base = ok(await c.call_tool("lookup_symbol", {"qualified_name": "pkg.core.Base"}))["results"][0]
    impls = ok(await c.call_tool("get_implementations", {"symbol_id": base["symbol_id"]}))
    assert "Child" in {n["name"] for n in impls["nodes"]}
    deps = ok(await c.call_tool("get_dependencies", {"symbol_id": main_id, "edge_type": "calls"}))
    assert {e["kind"] for e in deps["edges"]} == {"calls"}
    assert ok(await c.call_tool("get_dependents", {"symbol_id": sid}))["nodes"]


async def _check_research(c) -> None:
    progress: list[tuple[float, str | None]] = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, message))

    research = ok(await c.call_tool("code_research", {"query": "main", "depth": 2, "focus": "flow"},
                                    progress_callback=on_progress))
    assert research["seeds"] and research["hops"]
    assert [p for p, _ in progress] == sorted({p for p, _ in progress}), progress  # only increases
    walked = re.fullmatch(r"walked (\d+) of (\d+) seeds", progress[-1][1] or "")
    assert walked and walked[1] == walked[2] and len(progress) == 1 + int(walked[2]), progress


async def test_build_swap_during_a_session(indexed_repo):
    async with stdio_client(indexed_repo.path) as c:
        before = ok(await c.call_tool("search_symbols", {"query": "brand_new_function"}))
        assert not any(r["name"] == "brand_new_function" for r in before["results"])
        old_manifest = before["metadata"]["manifest_id"]
        indexed_repo.write("pkg/extra.py", "def brand_new_function():\n    return 42\n")
        run_cli("build", indexed_repo.path)
        after = ok(await c.call_tool("search_symbols", {"query": "brand_new_function"}))
        assert after["metadata"]["manifest_id"] != old_manifest
        assert after["results"][0]["name"] == "brand_new_function"
        assert after["results"][0]["path"] == "pkg/extra.py"


async def test_redos_pattern_answers_within_timeout(indexed_repo):
    indexed_repo.write("evil.txt", "a" * 5000 + "!\n")
    run_cli("build", indexed_repo.path)
    async with stdio_client(indexed_repo.path) as c:
        started = time.monotonic()
        res = await c.call_tool("search_files", {"pattern": "(a+)+$", "is_regex": True,
                                                 "timeout_ms": 2000})
        assert time.monotonic() - started < 10, "a catastrophic-backtracking pattern took too long"
        if res.is_error:
            assert error_code(res) == "timeout"
        else:
            assert ok(res)["matches"] == []  # the line ends in "!": no match, found in linear time
        hit = ok(await c.call_tool("search_files", {"pattern": "a!", "glob": "*.txt"}))
        assert [m["path"] for m in hit["matches"]] == ["evil.txt"]
        bad = await c.call_tool("search_files", {"pattern": "(a)\\1", "is_regex": True})
        assert error_code(bad) == "invalid_parameter"


async def test_path_escapes_over_stdio(indexed_repo, tmp_path):
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret\n")
    os.symlink(outside / "secret.txt", indexed_repo.path / "leak")
    os.symlink(str(outside), indexed_repo.path / "leakdir")
    async with stdio_client(indexed_repo.path) as c:
        for path in ("../outside/secret.txt", str(outside / "secret.txt"), "leak",
                     "leakdir/secret.txt", "pkg/%2e%2e/%2e%2e/outside/secret.txt"):
            res = await c.call_tool("read_file", {"path": path})
            assert error_code(res) == "path_escape", path
            assert "outside secret" not in str(res.content)
        assert error_code(await c.call_tool("list_directory", {"path": "leakdir"})) == "path_escape"
        await _flip_while_reading(c, indexed_repo.path, outside / "secret.txt")


async def _flip_while_reading(c, repo, outside_file) -> None:
    """A symlink flipped between an inside and an outside target while the client reads it."""
    import os
    import threading

    link, tmp = repo / "flip", repo / "flip.tmp"
    os.symlink("README.md", link)
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            for target in (str(outside_file), "README.md"):
                os.symlink(target, tmp)
                os.replace(tmp, link)

    t = threading.Thread(target=flipper)
    t.start()
    seen = set()
    try:
        for _ in range(60):
            res = await c.call_tool("read_file", {"path": "flip"})
            assert "outside secret" not in str(res.content)
            seen.add(error_code(res) if res.is_error else "inside")
    finally:
        stop.set()
        t.join()
    assert seen <= {"inside", "path_escape", "not_found"} and seen
