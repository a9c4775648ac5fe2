"""The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.6, the newest
that runs on Node 20) against `codeagent serve` over streamable HTTP: every server scenario
that applies to a server without prompts or resources of its own passes. The others need
fixture tools (image, audio, sampling, elicitation...) that only the suite's reference server
has."""

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
            assert proc.returncode == 0 and "Passed: 1/1, 0 failed" in proc.stdout, \
                f"{scenario}:\n{report}"
