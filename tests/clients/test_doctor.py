"""`codeagent doctor` and the end-to-end path: the command an install wrote is started the
way the client starts it and answers MCP; the Claude Code hook answers a Grep from the index."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))

from mcp_helpers import SAMPLE_FILES, run_cli  # noqa: E402
from repo_helpers import GitRepo  # noqa: E402

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def env(tmp_path) -> dict:
    """The environment of every CLI run here: a HOME of the test's own."""
    home = tmp_path / "home"
    home.mkdir()
    return {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "PYTHONUNBUFFERED": "1"}


@pytest.fixture
def repo(tmp_path) -> GitRepo:
    r = GitRepo.create(tmp_path / "repo")
    r.write_many(SAMPLE_FILES)
    r.commit("sample")
    return r


def cli(env: dict, *args, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeagent", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, input=stdin)


def test_doctor_reports_each_problem_with_its_exit_code(env, repo):
    assert cli(env, "doctor", "cursor", cwd=repo.path).returncode == 4  # not configured
    assert cli(env, "install", "cursor", cwd=repo.path).returncode == 0
    proc = cli(env, "doctor", "cursor", cwd=repo.path)
    assert proc.returncode == 5 and "not built" in proc.stdout  # the index is missing

    run_cli("build", repo.path)
    proc = cli(env, "doctor", "--json", cwd=repo.path)  # every configured client
    assert proc.returncode == 0, proc.stdout + proc.stderr
    [report] = json.loads(proc.stdout)
    assert report["client"] == "cursor" and report["problem"] is None
    assert report["index"] == "ready" and report["freshness"] == "fresh" and report["tools"] >= 10
    assert report["protocol"] >= "2025-06-18"

    repo.write("pkg/core.py", SAMPLE_FILES["pkg/core.py"] + "\ndef more():\n    pass\n")
    proc = cli(env, "doctor", "cursor", cwd=repo.path)
    assert proc.returncode == 33 and "stale" in proc.stdout

    settings = repo.path / ".cursor" / "mcp.json"
    data = json.loads(settings.read_text())
    data["mcpServers"]["codeagent"]["command"] = str(repo.path / "no-such-codeagent")
    settings.write_text(json.dumps(data))
    proc = cli(env, "doctor", "cursor", cwd=repo.path)
    assert proc.returncode == 32 and "wrong path" in proc.stdout

    data["mcpServers"]["codeagent"]["command"] = "/bin/false"
    settings.write_text(json.dumps(data))
    proc = cli(env, "doctor", "cursor", cwd=repo.path)
    assert proc.returncode == 32 and "did not answer MCP" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


async def test_the_written_command_starts_and_answers_mcp(env, repo):
    """Start the server exactly as .mcp.json says (Claude Code's project file) and call a tool."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    run_cli("build", repo.path)
    assert cli(env, "install", "claude-code", "--scope", "project", cwd=repo.path).returncode == 0
    entry = json.loads((repo.path / ".mcp.json").read_text())["mcpServers"]["codeagent"]
    assert entry["type"] == "stdio" and os.path.isabs(entry["command"])
    params = StdioServerParameters(command=entry["command"], args=entry["args"], env=env,
                                   cwd=str(env["HOME"]))  # not the project: --repo must carry it
    async with Client(params, read_timeout_seconds=60) as client:
        found = await client.call_tool("search_code", {"query": "helper"})
        context = await client.call_tool("get_context", {"task": "help with x", "budget": 1500})
    assert not found.is_error and found.structured_content["results"][0]["path"] == "pkg/core.py"
    assert not context.is_error and context.structured_content["files"][0]["path"] == "pkg/core.py"


def test_the_claude_code_hook_adds_index_hits_to_grep(env, repo):
    run_cli("build", repo.path)
    proc = cli(env, "install", "claude-code", "--hooks", cwd=repo.path)
    assert proc.returncode == 0, proc.stderr
    settings = json.loads((repo.path / ".claude" / "settings.json").read_text())
    [group] = settings["hooks"]["PostToolUse"]
    assert group["matcher"] == "Grep|Glob"
    command = group["hooks"][0]["command"]
    event = {"hook_event_name": "PostToolUse", "tool_name": "Grep", "cwd": str(repo.path),
             "tool_input": {"pattern": r"def helper\("}, "tool_response": {}}
    # Claude Code runs the command through a shell, the event JSON on stdin.
    assert command.startswith("CODEAGENT_DAEMON=1 ") and " -I -S " in command
    command = command.replace("CODEAGENT_DAEMON=1 ", "CODEAGENT_DAEMON=0 ")  # in-process: no daemon
    hook_env = {**env, "CODEAGENT_DAEMON_DIR": str(repo.path.parent / "d")}  # nobody else's daemon
    proc = subprocess.run(["bash", "-c", command], input=json.dumps(event),
                          capture_output=True, text=True, env=hook_env, cwd=repo.path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "PostToolUse"
    assert "pkg/core.py:" in out["additionalContext"] and "helper" in out["additionalContext"]

    event["tool_name"], event["tool_input"] = "Glob", {"pattern": "**/core*.py"}
    proc = subprocess.run(["bash", "-c", command], input=json.dumps(event),
                          capture_output=True, text=True, env=hook_env, cwd=repo.path, timeout=120)
    assert "pkg/core.py" in json.loads(proc.stdout)["hookSpecificOutput"]["additionalContext"]

    gemini = {"hook_event_name": "AfterTool", "tool_name": "search_file_content", "cwd": str(repo.path),
              "tool_input": {"pattern": "helper"}, "tool_response": {"llmContent": ""}}
    proc = cli(env, "hook", "gemini", cwd=repo.path, stdin=json.dumps(gemini))
    out = json.loads(proc.stdout)["hookSpecificOutput"]
    assert out["hookEventName"] == "AfterTool" and "pkg/core.py" in out["additionalContext"]

    for quiet in ({"tool_name": "Read", "tool_input": {"file_path": "x"}}, "not json"):
        proc = cli(env, "hook", "claude-code", cwd=repo.path,
                   stdin=quiet if isinstance(quiet, str) else json.dumps(quiet))
        assert proc.returncode == 0 and proc.stdout == ""
