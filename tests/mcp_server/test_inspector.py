"""A client this project did not write: the MCP Inspector CLI (npm) drives `codeagent serve`.

`.ci/run` installs it into .ci/node; the test never downloads anything and is skipped (with
the reason) when node or the package is absent.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_tools_memory import READ_ONLY_TOOLS

ROOT = Path(__file__).resolve().parents[2]
INSPECTOR = ROOT / ".ci" / "node" / "node_modules" / ".bin" / "mcp-inspector"


def _inspector(repo: Path, *method: str) -> dict:
    if shutil.which("node") is None:
        pytest.skip("node is not installed: the MCP Inspector CLI cannot run")
    if not INSPECTOR.exists():
        pytest.skip("the MCP Inspector is not installed in .ci/node "
                    "(`npm install --prefix .ci/node @modelcontextprotocol/inspector`, as .ci/run does)")
    proc = subprocess.run([str(INSPECTOR), "--cli", sys.executable, "-m", "codeagent", "serve",
                           "--repo", str(repo), *method], capture_output=True, text=True,
                          timeout=180, cwd=repo)
    assert proc.returncode == 0, f"inspector failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
    return json.loads(proc.stdout)


def test_inspector_lists_and_calls_tools(indexed_repo):
    listed = _inspector(indexed_repo.path, "--method", "tools/list")
    assert [t["name"] for t in listed["tools"]] == READ_ONLY_TOOLS
    assert all(t["annotations"]["readOnlyHint"] for t in listed["tools"])
    called = _inspector(indexed_repo.path, "--method", "tools/call", "--tool-name", "read_file",
                        "--tool-arg", "path=pkg/core.py")
    assert not called.get("isError")
    assert "def helper(x):" in called["structuredContent"]["content"]
    assert called["structuredContent"]["metadata"]["ref"] == "worktree"
