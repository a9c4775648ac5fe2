"""The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.6, the newest
that runs on Node 20) against `codeagent serve` over streamable HTTP: every server scenario
that applies to a server without prompts or resources of its own passes, with no warnings.
The others need fixture tools (image, audio, sampling, elicitation...) that only the suite's
reference server has."""

from __future__ import annotations

import subprocess

from mcp_helpers import http_server, node_tool

SCENARIOS = ["server-initialize", "logging-set-level", "completion-complete", "tools-list",
             "resources-list", "prompts-list"]


def test_conformance_server_scenarios(indexed_repo):
    conformance = node_tool("conformance", "@modelcontextprotocol/conformance@0.1.6")
    with http_server(indexed_repo.path) as url:
        for scenario in SCENARIOS:
            proc = subprocess.run([str(conformance), "server", "--url", url, "--scenario", scenario],
                                  capture_output=True, text=True, timeout=300, cwd=indexed_repo.path)
            report = proc.stdout[-1500:] + proc.stderr[-1500:]
            assert proc.returncode == 0 and "Passed: 1/1, 0 failed, 0 warnings" in proc.stdout, \
                f"{scenario}:\n{report}"


def test_sse_streams_are_primed_and_an_unknown_prompt_is_invalid_params(indexed_repo):
    """Each SSE answer stream opens with a priming event (an id to resume from) and a
    `retry:` field (the suite's two warnings), and prompts/get of an unknown prompt is
    JSON-RPC -32602 (it was code 0, the suite's one failure)."""
    import json
    import urllib.request

    def post(url: str, body: dict, session: str | None = None) -> tuple[str, str | None]:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
                   "mcp-protocol-version": "2025-11-25", **({"mcp-session-id": session} if session else {})}
        req = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read().decode(), resp.headers.get("mcp-session-id")

    with http_server(indexed_repo.path) as url:
        _, session = post(url, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
        post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
        stream, _ = post(url, {"jsonrpc": "2.0", "id": 2, "method": "prompts/get",
                               "params": {"name": "nope"}}, session)
    first = stream.split("\n\n")[0]
    assert first.startswith("id: ") and "retry: " in first, stream[:300]
    data = [json.loads(line[len("data: "):]) for line in stream.splitlines()
            if line.startswith("data: {")]
    assert data and data[-1]["id"] == 2 and data[-1]["error"]["code"] == -32602, data
