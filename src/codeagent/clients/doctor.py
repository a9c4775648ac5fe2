"""`codeagent doctor [CLIENT]`: start the server a client is configured with, the way the
client would (its command, arguments and environment, from the folder it starts in), speak
MCP to it with the SDK's client, and say what is wrong.

Checks, in order, each with its own exit code: the entry is there (4 not_found) and the file
parses (31); the command exists (32); the server starts, completes the handshake at a protocol
revision with structured tool output (2025-06-18 or later) and lists its tools (32); its index
is built (5) and describes the work tree (33).
"""

from __future__ import annotations

import os
import shutil

import anyio
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import ClientCheckFailed, CodeagentError, IndexMissing, IndexStale, NotFound
from . import formats
from .install import client, pick_scope, read_text
from .registry import CLIENTS, PROJECT, SERVER_NAME, USER

OLDEST_GOOD_PROTOCOL = "2025-06-18"  # tool output schemas and structuredContent
START_TIMEOUT = 60.0


@dataclass
class Report:
    client: str
    scope: str
    path: str
    command: list[str] = field(default_factory=list)
    protocol: str = ""
    server: str = ""
    tools: int = 0
    index: str = ""
    freshness: str = ""
    problem: dict | None = None

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def configured(name: str, repo: Path, scope: str | None = None) -> list[tuple[str, Path, dict]]:
    """(scope, settings file, server entry) of every scope that configures codeagent."""
    c = client(name)
    found = []
    for s in ([pick_scope(c, scope)] if scope else c.scopes):
        path = c.path(s, repo)
        text = read_text(path)
        entry = formats.entry(c.fmt, text, list(c.keys), SERVER_NAME, str(path)) if text.strip() else None
        if entry:
            found.append((s, path, entry))
    return found


def doctor(name: str | None, repo: Path, scope: str | None = None) -> list[Report]:
    """One report per configured client and scope (every configured client without `name`)."""
    names = [name] if name else [n for n in CLIENTS if _safe_configured(n, repo)]
    if not names:
        raise NotFound("no client is configured with codeagent",
                       hint="run `codeagent install CLIENT` (codeagent install --list)")
    reports = []
    for n in names:
        entries = configured(n, repo, scope)
        if not entries:
            raise NotFound(f"{CLIENTS[n].title} is not configured with codeagent",
                           hint=f"run `codeagent install {n}`")
        for s, path, entry in entries:
            reports.append(check(n, s, path, entry, repo))
    return reports


def _safe_configured(name: str, repo: Path) -> bool:
    try:
        return bool(configured(name, repo))
    except CodeagentError:
        return True  # a broken file is reported by the check itself


def check(name: str, scope: str, path: Path, entry: dict, repo: Path) -> Report:
    report = Report(name, scope, str(path))
    command = entry.get("command")
    args = entry.get("args") or []
    report.command = [str(command), *map(str, args)]
    if not isinstance(command, str) or not all(isinstance(a, str) for a in args):
        return _fail(report, ClientCheckFailed(f"{path}: the entry's command is not a string "
                                               "and a list of strings"))
    if shutil.which(command) is None:
        return _fail(report, ClientCheckFailed(
            f"wrong path: {command} does not exist or is not executable",
            hint=f"run `codeagent install {name}` again from the codeagent you use"))
    env = {**os.environ, **{str(k): str(v) for k, v in (entry.get("env") or {}).items()}}
    cwd = repo if scope == PROJECT else Path.cwd()
    try:
        anyio.run(_speak, report, command, args, env, cwd)
    except CodeagentError as exc:
        return _fail(report, exc)
    return report


def _fail(report: Report, exc: CodeagentError) -> Report:
    report.problem = {**exc.to_dict(), "exit_code": exc.exit_code}
    return report


async def _speak(report: Report, command: str, args: list[str], env: dict, cwd: Path) -> None:
    from mcp import Client  # the SDK's client: only doctor needs it
    from mcp.client.stdio import StdioServerParameters  # as the line above

    params = StdioServerParameters(command=command, args=args, env=env, cwd=str(cwd))
    try:
        with anyio.fail_after(START_TIMEOUT):
            async with Client(params, read_timeout_seconds=START_TIMEOUT) as session:
                report.protocol = session.protocol_version
                info = session.server_info
                report.server = f"{info.name} {info.version}" if info else ""
                report.tools = len((await session.list_tools()).tools)
                status = await session.call_tool("index_status", {})
    except Exception as exc:  # the SDK raises transport, timeout and protocol errors alike
        raise ClientCheckFailed(f"the server did not answer MCP: {type(exc).__name__}: {exc}",
                                hint=f"run `{command} {' '.join(args)}` by hand to see why") from None
    if report.protocol < OLDEST_GOOD_PROTOCOL:
        raise ClientCheckFailed(f"old protocol: the server speaks MCP {report.protocol}",
                                hint="upgrade codeagent and the mcp package")
    body = status.structured_content or {}
    report.index = body.get("index_status", "")
    report.freshness = (body.get("freshness") or {}).get("state", "")
    if report.index in ("not_indexed", "incompatible"):
        raise IndexMissing(f"the index is not built ({report.index})",
                           hint=f"run `codeagent build {cwd}`")
    if report.freshness == "stale":
        raise IndexStale("the index is stale: the work tree changed since the last build",
                         hint=f"run `codeagent build {cwd}`, or install with --watch")


def exit_code(reports: list[Report]) -> int:
    """The first problem's exit code (0 when every check passed)."""
    return next((r.problem["exit_code"] for r in reports if r.problem), 0)


__all__ = ["Report", "USER", "PROJECT", "configured", "doctor", "check", "exit_code"]
