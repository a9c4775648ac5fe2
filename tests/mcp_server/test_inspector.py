"""A client this project did not write: the MCP Inspector CLI (npm, the TypeScript SDK that
Claude Code, Cursor and VS Code are built on) drives `codeagent serve` over stdio through the
success and the error path of every tool (over streamable HTTP; tools/list and read_file
also over stdio). The TypeScript SDK checks structured content against
each tool's output schema, so an error result that broke it would fail here.

`.ci/run` installs it into .ci/node; the test never downloads anything and is skipped (with
the reason) when node or the package is absent.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_helpers import http_server, node_tool, run_cli
from test_tools_memory import BUILD_TOOLS, READ_ONLY_TOOLS


H = "pkg.core.helper"
# tool -> (arguments that succeed, text the answer holds), (arguments that fail, error code)
CASES: dict[str, tuple[tuple[dict, str], tuple[dict, str]]] = {
    "list_directory": (({"path": "pkg"}, "core.py"), ({"path": "../x"}, "path_escape")),
    "get_directory_tree": (({"depth": "2"}, "core.py"), ({"path": "nope"}, "not_found")),
    "list_files": (({"pattern": "*.py"}, "pkg/core.py"), ({"directory": "../"}, "path_escape")),
    "read_file": (({"path": "pkg/core.py", "line_start": "15"}, "def helper"),
                  ({"path": "nope.py"}, "not_found")),
    "search_files": (({"pattern": "TODO"}, "helper needs tests"),
                     ({"pattern": "x", "context_lines": "99"}, "invalid_parameter")),
    "get_repo_overview": (({}, "pkg"), ({"max_depth": "9"}, "invalid_parameter")),
    "search_code": (({"query": "helper"}, H), ({"query": "helper", "mode": "bogus"}, "invalid_parameter")),
    "get_context": (({"task": "help with x", "budget": "1000"}, "pkg/core.py"),
                    ({"task": "x", "budget": "10"}, "invalid_parameter")),
    "search_symbols": (({"query": "helper"}, H), ({"query": "helper", "limit": "0"}, "invalid_parameter")),
    "locate_symbol": (({"name": "helper"}, "pkg/core.py"), ({"name": "x", "limit": "99"}, "invalid_parameter")),
    "lookup_symbol": (({"qualified_name": H}, H), ({"qualified_name": H, "bogus": "1"}, "invalid_parameter")),
    "search_docs": (({"query": "Installation"}, "docs/guide.md"), ({"query": "x", "limit": "0"}, "invalid_parameter")),
    "find_similar": (({"symbol_id": H}, "pkg/core.py"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_symbol": (({"symbol_id": H}, "Help with x"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_source_spans": (({"symbol_id": H, "with_text": "true"}, "def helper"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_file_outline": (({"path": "pkg/core.py"}, '"Child"'), ({"path": "../../etc/passwd"}, "path_escape")),
    "get_callers": (({"symbol_id": H}, "pkg.core.main"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_callees": (({"symbol_id": "pkg.core.main"}, H), ({"symbol_id": "nosuch"}, "not_found")),
    "get_references": (({"symbol_id": H}, "pkg.core.main"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_implementations": (({"symbol_id": "pkg.core.Base"}, "pkg.core.Child"), ({"symbol_id": "nosuch"}, "not_found")),
    "get_dependencies": (({"symbol_id": "pkg.core.main"}, H),
                         ({"symbol_id": "pkg.core.main", "edge_type": "bogus"}, "invalid_parameter")),
    "get_dependents": (({"symbol_id": H}, "pkg.core.main"), ({"symbol_id": "nosuch"}, "not_found")),
    "code_research": (({"query": "helper"}, H), ({"query": "helper", "depth": "9"}, "invalid_parameter")),
    "get_impact": (({"range": "worktree..worktree"}, '"changed"'), ({"depth": "9"}, "invalid_parameter")),
    "index_status": (({}, '"ready"'), ({"ref": "r" * 300}, "invalid_parameter")),
    "get_status": (({}, '"ready"'), ({"bogus": "1"}, "invalid_parameter")),  # index_status' alias
    "index_repo": (({}, '"unchanged"'), ({"ref": "no-such-branch"}, "not_found")),
    "sync_repo": (({}, '"unchanged"'), ({"ref": "no-such-branch"}, "not_found")),
    "index_files": (({"paths": '["pkg/core.py"]'}, '"unchanged"'), ({"paths": '["../x.py"]'}, "path_escape")),
}


def _inspector(target: list[str], *method: str, cwd: Path) -> dict:
    inspector = node_tool("mcp-inspector", "@modelcontextprotocol/inspector@0.15.0")
    proc = subprocess.run([str(inspector), "--cli", *target, *method], capture_output=True,
                          text=True, timeout=300, cwd=cwd)
    assert proc.returncode == 0, f"inspector {method} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def _stdio(repo: Path) -> list[str]:
    return [sys.executable, "-m", "codeagent", "serve", "--repo", str(repo), "--tools", "all"]


def _call(target: list[str], repo: Path, tool: str, args: dict) -> dict:
    pairs = [a for k, v in args.items() for a in ("--tool-arg", f"{k}={v}")]
    return _inspector(target, "--method", "tools/call", "--tool-name", tool, *pairs, cwd=repo)


def _check(tool: str, kind: str, args: dict, expect: str, got: dict) -> None:
    text = got["content"][0]["text"]
    if kind == "ok":
        assert not got.get("isError"), f"{tool} {args} failed: {text}"
        # the text block is a compact rendering of the structured content (format=json: its JSON)
        assert expect in text + json.dumps(got["structuredContent"]), (tool, text[:500])
        assert not text.startswith("{"), (tool, text[:200])
        return
    assert got.get("isError") is True, f"{tool} {args} did not fail: {text[:300]}"
    assert "structuredContent" not in got, tool
    error = json.loads(text)["error"]
    assert error["code"] == expect, (tool, args, error)
    if expect == "invalid_parameter":
        assert error["arguments"] and set(error["arguments"]) <= set(args), (tool, error)


def test_inspector_over_stdio(indexed_repo):
    repo = indexed_repo.path
    listed = _inspector(_stdio(repo), "--method", "tools/list", cwd=repo)
    assert [t["name"] for t in listed["tools"]] == READ_ONLY_TOOLS
    assert all(t["annotations"]["readOnlyHint"] for t in listed["tools"])
    assert all(t["icons"][0]["src"].startswith("data:image/svg+xml,") for t in listed["tools"])
    for kind, (args, expect) in zip(("ok", "error"), CASES["read_file"]):
        _check("read_file", kind, args, expect, _call(_stdio(repo), repo, "read_file", args))


def _calls(url: str, jobs: list[tuple], parallel: int) -> list[dict]:
    """The Inspector CLI's tools/call for each job, run by its own modules in one node process
    (inspector_calls.mjs: node started once, not once a call); `parallel` calls at a time."""
    inspector = node_tool("mcp-inspector", "@modelcontextprotocol/inspector@0.15.0")
    build = inspector.resolve().parent  # cli.js, which runs index.js beside it with the argv
    assert (build / "index.js").exists() and (build / "client" / "index.js").exists(), build
    request = {"url": url, "parallel": parallel, "calls": [{"tool": j[0], "args": j[2]} for j in jobs]}
    proc = subprocess.run(["node", str(Path(__file__).with_name("inspector_calls.mjs")), str(build)],
                          input=json.dumps(request), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answers = json.loads(proc.stdout)
    assert len(answers) == len(jobs)
    for job, answer in zip(jobs, answers):
        assert "error" not in answer, f"inspector tools/call {job[0]} {job[2]} failed: {answer['error']}"
    return [a["result"] for a in answers]


def test_inspector_every_tool_over_http(indexed_repo):
    """Success and error path of every tool, through one streamable-HTTP server per profile
    (a stdio server per call would start Python 54 times), each call the Inspector CLI's own
    (a connection of its own), all in one node process."""
    repo = indexed_repo.path
    run_cli("build", repo, "--embedder", "hash")  # find_similar needs vectors
    assert set(CASES) == set(READ_ONLY_TOOLS + BUILD_TOOLS) | {"get_status"}, \
        "a tool has no Inspector case"
    jobs = [(tool, kind, args, expect) for tool, cases in CASES.items()
            for kind, (args, expect) in zip(("ok", "error"), cases)]
    read_only = [j for j in jobs if j[0] not in BUILD_TOOLS]
    with http_server(repo) as url:
        answers = _calls(url, read_only, parallel=4)
    for job, got in zip(read_only, answers):
        _check(*job, got)
    with http_server(repo, "--allow-build") as url:  # one build at a time: they share a lock
        build_jobs = [j for j in jobs if j[0] in BUILD_TOOLS]
        for job, got in zip(build_jobs, _calls(url, build_jobs, parallel=1)):
            _check(*job, got)


def test_legacy_sse_and_health_beside_streamable_http(indexed_repo):
    """One `serve --transport http` answers the legacy HTTP+SSE transport (Inspector CLI
    `--transport sse`) and GET /health beside streamable HTTP."""
    import urllib.request

    repo = indexed_repo.path
    with http_server(repo) as url:
        base = url.removesuffix("/mcp")
        with urllib.request.urlopen(base + "/health", timeout=30) as resp:
            health = json.loads(resp.read())
        assert health["status"] == "ok" and health["index"] == "ready" and health["manifest_id"]
        for kind, (args, expect) in zip(("ok", "error"), CASES["read_file"]):
            got = _call([base + "/sse", "--transport", "sse"], repo, "read_file", args)
            _check("read_file", kind, args, expect, got)
