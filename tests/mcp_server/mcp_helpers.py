"""Helpers for the MCP server tests: a small real repository's files, the real CLI, and
clients that talk to `python -m codeagent serve` (stdio subprocess) or to the server object
in memory."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

CORE_PY = '''"""Core module."""
import os


class Base:
    def run(self):
        return helper(1)


class Child(Base):
    def run(self):
        return super().run() + 1


def helper(x):
    """Help with x."""
    return os.path.join("a", str(x))


def main():
    c = Child()
    return c.run() + helper(2)
'''

GUIDE_MD = """# Guide

## Installation

Install the package with pip and run the helper.

## Usage

Call main to start.
"""

SAMPLE_FILES: dict[str, str | bytes] = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE_PY,
    "docs/guide.md": GUIDE_MD,
    "README.md": "# Demo\n\nA demo repository for the MCP tests.\n",
    "blob.bin": b"\x89PNG\r\n\x1a\n\x00\x00binary",
    ".gitignore": "build/\n*.log\n",
    "build/out.js": "ignored()\n",
    "debug.log": "ignored log\n",
    ".env": "API_KEY=do-not-leak\n",
    "keys/server.pem": "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n",
    "notes.txt": "TODO: helper needs tests\n" + "line\n" * 30,
}


def run_cli(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "codeagent", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"codeagent {args} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


def server_params(repo: Path, *extra: str):
    from mcp.client.stdio import StdioServerParameters

    profile = [] if "--tools" in extra else ["--tools", "all"]
    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "codeagent", "serve", "--repo", str(repo), *profile,
                                       *extra],
                                 env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=str(repo))


@asynccontextmanager
async def stdio_client(repo: Path, *extra: str):
    """The SDK's real client, spawning `python -m codeagent serve` over stdio."""
    from mcp import Client

    async with Client(server_params(repo, *extra), read_timeout_seconds=60) as client:
        yield client


@asynccontextmanager
async def memory_client(repo: Path, allow_build: bool = False, tools: str = "all"):
    """An in-memory client session against the same server object (no subprocess)."""
    from mcp import Client

    from codeagent.mcp_server.app import create_server
    from codeagent.mcp_server.state import ServerConfig, ServerState

    state = ServerState(ServerConfig(repo, allow_build=allow_build, tools=tools))
    try:
        async with Client(create_server(state)) as client:
            yield client
    finally:
        state.close()


def ok(result) -> dict:
    """The structured content of a successful tool result (fails with the error otherwise)."""
    assert not result.is_error, f"tool failed: {result.structured_content or result.content}"
    assert result.structured_content is not None
    return result.structured_content


def error_of(result) -> dict:
    """The `error` object of an isError result: its text is `{"error": {...}}`, and it carries
    no structured content (which clients would check against the success schema)."""
    import json

    assert result.is_error, f"expected an error, got {result.structured_content}"
    assert result.structured_content is None, result.structured_content
    err = json.loads(result.content[0].text)["error"]
    assert err["message"] and "Traceback" not in err["message"]
    return err


def error_code(result) -> str:
    return error_of(result)["code"]


@contextmanager
def http_server(repo: Path, *extra: str):
    """`codeagent serve --transport http` on a free loopback port; yields the /mcp URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = [sys.executable, "-m", "codeagent", "serve", "--repo", str(repo), "--tools", "all"]
    proc = subprocess.Popen([*serve, "--transport", "http", "--port", str(port), *extra],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=repo)
    try:
        for _ in range(300):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode()
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


NODE_BIN = Path(__file__).resolve().parents[2] / ".ci" / "node" / "node_modules" / ".bin"


def node_tool(name: str, package: str) -> Path:
    """An npm tool `.ci/run` installed into .ci/node; the test is skipped (saying why) without
    node or the package: no test downloads anything."""
    import shutil

    import pytest

    if shutil.which("node") is None:
        pytest.skip(f"node is not installed: {name} cannot run")
    if not (NODE_BIN / name).exists():
        pytest.skip(f"{package} is not installed in .ci/node "
                    f"(`npm install --prefix .ci/node {package}`, as .ci/run does)")
    return NODE_BIN / name
