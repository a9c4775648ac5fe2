"""Build tools (`serve --allow-build`): a separate build process, progress, cancellation; and
the HTTP transport (loopback only unless told otherwise)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from mcp_helpers import error_code, ok, stdio_client

pytestmark = pytest.mark.anyio


def _build_processes(repo: Path) -> list[int]:
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"build" in cmd and str(repo).encode() in cmd:
            pids.append(int(pid))
    return pids


async def test_index_repo_builds_in_a_subprocess_with_progress(sample_repo):
    async with stdio_client(sample_repo.path, "--allow-build") as c:
        assert error_code(await c.call_tool("search_code", {"query": "helper"})) == "index_missing"
        progress = []

        values = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append(message)
            values.append(p)

        job = ok(await c.call_tool("index_repo", {}, progress_callback=on_progress))
        assert job["status"] == "published" and job["manifest_id"] and job["ref"] == "worktree"
        assert job["metadata"]["manifest_id"] == job["manifest_id"]
        assert any("started" in (m or "") for m in progress) and any("done" in (m or "") for m in progress)
        assert values == sorted(set(values)), f"progress did not only increase: {values}"
        assert "files parsed" in progress[-1]
        parsed = [m for m in progress if m and m.startswith("parsing")]
        assert parsed and parsed[-1] == f"parsing: {job['files_parsed']} of {job['files_parsed']} files"
        assert values[-1] == job["files_parsed"] + 1, "the last step is the publish after the files"
        hits = ok(await c.call_tool("search_symbols", {"query": "helper"}))
        assert hits["results"][0]["name"] == "helper"
        status = ok(await c.call_tool("index_status", {}))
        assert status["last_indexed_at"] and status["active_job"] is None
        again = ok(await c.call_tool("sync_repo", {}))
        assert again["status"] == "unchanged" and again["manifest_id"] == job["manifest_id"]
        sample_repo.write("pkg/more.py", "def more():\n    return 1\n")
        sample_repo.write("pkg/later.py", "def later():\n    return 2\n")  # not named: not read
        files = ok(await c.call_tool("index_files", {"paths": ["pkg/more.py", "nope.py", "blob.bin"]}))
        assert files["status"] == "published" and files["files_parsed"] == 1
        assert [h["name"] for h in ok(await c.call_tool("search_symbols", {"query": "later"}))["results"]
                if h["name"] == "later"] == []
        assert [(f["path"], f["state"]) for f in files["files"]] == [
            ("pkg/more.py", "indexed"), ("nope.py", "absent"), ("blob.bin", "skipped")]
        assert files["files"][2]["reason"] == "binary"
        assert error_code(await c.call_tool("index_files", {"paths": ["../escape.py"]})) == "path_escape"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="inspects /proc")
async def test_cancelling_a_build_kills_the_build_process(sample_repo):
    for i in range(400):  # enough files that the build outlives the cancel
        sample_repo.write(f"gen/m{i}.py", "".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n" for j in range(40)))
    async with stdio_client(sample_repo.path, "--allow-build") as c:
        started = anyio.Event()

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            started.set()

        async with anyio.create_task_group() as tg:
            async def call() -> None:
                await c.call_tool("index_repo", {}, progress_callback=on_progress)

            tg.start_soon(call)
            with anyio.fail_after(60):
                await started.wait()
                while not _build_processes(sample_repo.path):
                    await anyio.sleep(0.05)
            second = await c.call_tool("index_repo", {})
            assert error_code(second) == "store_locked"
            running = ok(await c.call_tool("index_status", {}))["active_job"]
            assert running and running["mode"] == "full"
            tg.cancel_scope.cancel()
        deadline = time.monotonic() + 20
        while _build_processes(sample_repo.path) and time.monotonic() < deadline:
            await anyio.sleep(0.1)
        assert not _build_processes(sample_repo.path), "the build kept running after cancel"
        # a killed build leaves /proc's command line (a zombie) before the server reaps it
        # and clears its job: the job must end too, within the same deadline
        status = ok(await c.call_tool("index_status", {}))
        while status["active_job"] is not None and time.monotonic() < deadline:
            await anyio.sleep(0.1)
            status = ok(await c.call_tool("index_status", {}))
        assert status["index_status"] == "not_indexed", "the cancelled build still published"
        assert status["active_job"] is None


async def test_build_tools_absent_without_flag(indexed_repo):
    async with stdio_client(indexed_repo.path) as c:
        names = {t.name for t in (await c.list_tools()).tools}
    assert not names & {"index_repo", "sync_repo", "index_files"}


def test_http_refuses_non_loopback_host(indexed_repo):
    proc = subprocess.run([sys.executable, "-m", "codeagent", "serve", "--repo", str(indexed_repo.path),
                           "--transport", "http", "--host", "0.0.0.0"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 2 and "loopback" in proc.stderr and proc.stdout == ""


async def test_http_transport_on_loopback(indexed_repo):
    from mcp import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "codeagent", "serve", "--repo", str(indexed_repo.path),
                             "--transport", "http", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with anyio.fail_after(60):
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    assert proc.poll() is None, proc.stderr.read()
                    await anyio.sleep(0.1)
        async with Client(f"http://127.0.0.1:{port}/mcp") as c:
            names = [t.name for t in (await c.list_tools()).tools]
            assert names[0] == "list_directory" and "search_code" in names
            got = ok(await c.call_tool("read_file", {"path": "README.md"}))
            assert "A demo repository" in got["content"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)
