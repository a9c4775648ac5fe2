"""A raw JSON-RPC line client for `codeagent serve` over stdio (no SDK in between), so the
reliability suites can send anything, including bytes no SDK would produce."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "reliability", "version": "1"}}}


class RawServer:
    def __init__(self, repo: Path, *extra: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "codeagent", "serve", "--repo", str(repo), *extra],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=str(repo))
        self.replies: queue.Queue = queue.Queue()
        self.by_id: dict = {}
        self.null_id_errors = 0
        self.garbage_lines = 0
        threading.Thread(target=self._pump, daemon=True).start()
        self.send(INIT)
        self.wait(0, 120)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                self.garbage_lines += 1
                continue
            self.replies.put(msg)

    def _drain(self, timeout: float) -> None:
        msg = self.replies.get(timeout=timeout)
        while True:
            if isinstance(msg, dict) and msg.get("id") is None and "error" in msg:
                self.null_id_errors += 1
            elif isinstance(msg, dict) and "id" in msg:
                self.by_id[msg["id"]] = msg
            try:
                msg = self.replies.get_nowait()
            except queue.Empty:
                return

    def send(self, message: dict | bytes) -> None:
        raw = message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n"
        assert self.proc.stdin is not None
        self.proc.stdin.write(raw)
        self.proc.stdin.flush()

    def wait(self, request_id, timeout: float = 60) -> dict | None:
        deadline = time.monotonic() + timeout
        while request_id not in self.by_id:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                self._drain(left)
            except queue.Empty:
                return None
        return self.by_id[request_id]

    def call(self, request_id, tool: str, arguments: dict, timeout: float = 60) -> dict | None:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                   "params": {"name": tool, "arguments": arguments}})
        return self.wait(request_id, timeout)

    def rss_kb(self, field: str = "VmRSS") -> int:
        with open(f"/proc/{self.proc.pid}/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith(field))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> int:
        if self.proc.stdin:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            return self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def tool_error_code(reply: dict | None) -> str | None:
    """The `error.code` of an isError tools/call reply (the error is the result's text: it
    carries no structuredContent), None for a successful one or a JSON-RPC error."""
    result = (reply or {}).get("result", {})
    if not result.get("isError"):
        return None
    return json.loads(result["content"][0]["text"]).get("error", {}).get("code")
