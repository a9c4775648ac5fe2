"""The tasks API (MCP 2025-11-25) over the real stdio server: a task-augmented tools/call is
answered with a task at once, and tasks/get, tasks/result, tasks/list and tasks/cancel follow
it. The SDK's Python client cannot send task-augmented calls (its tools/call insists on a
CallToolResult), so this is a JSON-RPC client speaking the wire protocol itself."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pytest

from test_build_tools import _build_processes

VERSION = "2025-11-25"


class WireClient:
    """JSON-RPC over a `codeagent serve` process's stdin/stdout, one JSON message per line."""

    def __init__(self, repo, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeagent", "serve", "--repo", str(repo), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=repo)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.init = self.request("initialize", {"protocolVersion": VERSION, "capabilities": {},
                                                "clientInfo": {"name": "wire", "version": "1"}})
        self.notify("notifications/initialized")

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.inbox.put(json.loads(line))

    def send(self, method: str, params: dict | None = None) -> int:
        self.next_id += 1
        self._write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}})
        return self.next_id

    def notify(self, method: str) -> None:
        self._write({"jsonrpc": "2.0", "method": method})

    def _write(self, message: dict) -> None:
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def answer(self, request_id: int, timeout: float = 120) -> dict:
        """The response to `request_id` (notifications in between are dropped)."""
        deadline = time.monotonic() + timeout
        while True:
            message = self.inbox.get(timeout=max(0.1, deadline - time.monotonic()))
            if message.get("id") == request_id:
                return message

    def request(self, method: str, params: dict | None = None, timeout: float = 120) -> dict:
        reply = self.answer(self.send(method, params), timeout)
        assert "result" in reply, f"{method} failed: {reply.get('error')}"
        return reply["result"]

    def error(self, method: str, params: dict | None = None) -> dict:
        reply = self.answer(self.send(method, params))
        assert "error" in reply, f"{method} did not fail: {reply.get('result')}"
        return reply["error"]

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture
def wire(request):
    clients = []

    def start(repo, *extra: str) -> WireClient:
        clients.append(WireClient(repo, *extra))
        return clients[-1]

    yield start
    for c in clients:
        c.close()


def test_capability_and_tool_task_support(wire, indexed_repo):
    c = wire(indexed_repo.path, "--allow-build")
    assert c.init["capabilities"]["tasks"] == {"list": {}, "cancel": {},
                                              "requests": {"tools": {"call": {}}}}
    tools = {t["name"]: t for t in c.request("tools/list")["tools"]}
    assert {n for n, t in tools.items() if "execution" in t} == {
        "index_repo", "sync_repo", "index_files", "code_research"}
    assert tools["index_repo"]["execution"] == {"taskSupport": "optional"}
    error = c.error("tools/call", {"name": "search_code", "arguments": {"query": "helper"},
                                   "task": {}})
    assert error["code"] == -32601 and "search_code" in error["message"]


def test_index_repo_as_a_task(wire, sample_repo):
    c = wire(sample_repo.path, "--allow-build")
    created = c.request("tools/call", {"name": "index_repo", "arguments": {}, "task": {"ttl": 60000}})
    task = created["task"]
    assert task["status"] == "working" and task["ttl"] == 60000 and task["pollInterval"] > 0
    assert task["createdAt"].endswith("Z") and "content" not in created
    task_id = task["taskId"]
    got = c.request("tasks/get", {"taskId": task_id})
    assert got["taskId"] == task_id and got["status"] in ("working", "completed")
    result = c.request("tasks/result", {"taskId": task_id})  # waits for the build
    assert result["isError"] is False
    assert result["structuredContent"]["status"] == "published"
    assert result["_meta"]["io.modelcontextprotocol/related-task"] == {"taskId": task_id}
    done = c.request("tasks/get", {"taskId": task_id})
    assert done["status"] == "completed" and done["lastUpdatedAt"] >= done["createdAt"]
    assert task_id in [t["taskId"] for t in c.request("tasks/list")["tasks"]]
    assert c.error("tasks/cancel", {"taskId": task_id})["code"] == -32602
    assert c.error("tasks/get", {"taskId": "nope"})["code"] == -32602
    hits = c.request("tools/call", {"name": "search_symbols", "arguments": {"query": "helper"}})
    assert hits["structuredContent"]["results"][0]["name"] == "helper"


def test_a_failing_call_ends_its_task_failed(wire, sample_repo):
    c = wire(sample_repo.path, "--allow-build")
    task_id = c.request("tools/call", {"name": "index_files", "arguments": {"paths": ["../out.py"]},
                                       "task": {}})["task"]["taskId"]
    result = c.request("tasks/result", {"taskId": task_id})
    assert result["isError"] is True and "path_escape" in result["content"][0]["text"]
    got = c.request("tasks/get", {"taskId": task_id})
    assert got["status"] == "failed" and got["statusMessage"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inspects /proc")
def test_cancelling_a_task_kills_its_build(wire, sample_repo):
    for i in range(400):  # enough files that the build outlives the cancel
        sample_repo.write(f"gen/m{i}.py", "".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n"
                                                  for j in range(40)))
    c = wire(sample_repo.path, "--allow-build")
    task_id = c.request("tools/call", {"name": "index_repo", "arguments": {}, "task": {}})["task"]["taskId"]
    deadline = time.monotonic() + 60
    while not _build_processes(sample_repo.path):
        assert time.monotonic() < deadline, "the build process never started"
        time.sleep(0.05)
    cancelled = c.request("tasks/cancel", {"taskId": task_id})
    assert cancelled["taskId"] == task_id and cancelled["status"] == "cancelled"
    deadline = time.monotonic() + 20
    while _build_processes(sample_repo.path) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _build_processes(sample_repo.path), "the build kept running after tasks/cancel"
    assert c.request("tasks/get", {"taskId": task_id})["status"] == "cancelled"
    assert c.error("tasks/result", {"taskId": task_id})["code"] == -32602
    status = c.request("tools/call", {"name": "index_status", "arguments": {}})
    assert status["structuredContent"]["index_status"] == "not_indexed"
    assert status["structuredContent"]["active_job"] is None
