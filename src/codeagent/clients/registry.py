"""The MCP clients `codeagent install` knows: where each keeps its servers, in what format,
under which key, and the shape of one stdio server entry. docs/install.md cites each
client's documentation for these facts.

Paths follow the client's documented places: `~` is $HOME, and the per-user settings folder
of an editor is $XDG_CONFIG_HOME (default ~/.config) on Linux, ~/Library/Application Support
on macOS and %APPDATA% on Windows.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .formats import JSON, JSONC, TOML, YAML

USER, PROJECT = "user", "project"
SCOPES = (USER, PROJECT)
SERVER_NAME = "codeagent"


def home() -> Path:
    return Path(os.environ.get("HOME") or Path.home())


def app_config() -> Path:
    """The per-user application settings folder of this platform."""
    if sys.platform == "darwin":
        return home() / "Library" / "Application Support"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home() / "AppData" / "Roaming")
    return Path(os.environ.get("XDG_CONFIG_HOME") or home() / ".config")


def _plain(command: str, args: list[str]) -> dict:
    return {"command": command, "args": args}


def _typed(command: str, args: list[str]) -> dict:
    return {"type": "stdio", "command": command, "args": args}


def _cline(command: str, args: list[str]) -> dict:
    return {"command": command, "args": args, "disabled": False}


@dataclass(frozen=True)
class Client:
    name: str
    title: str
    fmt: str
    keys: tuple[str, ...]  # the object (or YAML list) that holds the servers
    user: Callable[[], Path] | None  # the per-user settings file
    project: str | None  # the project's settings file, relative to the repository root
    entry: Callable[[str, list[str]], dict] = _plain
    detect: Callable[[], Path] | None = None  # a folder whose presence says it is installed
    hooks: bool = False  # `install --hooks` knows its hook settings

    @property
    def scopes(self) -> tuple[str, ...]:
        return tuple(s for s in SCOPES if (self.user if s == USER else self.project))

    def path(self, scope: str, repo: Path) -> Path:
        return self.user() if scope == USER else repo / self.project

    def installed(self) -> bool:
        found = self.detect() if self.detect else None
        return bool(found and found.exists())


CLIENTS: dict[str, Client] = {c.name: c for c in (
    Client("claude-code", "Claude Code", JSON, ("mcpServers",), lambda: home() / ".claude.json",
           ".mcp.json", _typed, detect=lambda: home() / ".claude", hooks=True),
    Client("claude-desktop", "Claude Desktop", JSON, ("mcpServers",),
           lambda: app_config() / "Claude" / "claude_desktop_config.json", None,
           detect=lambda: app_config() / "Claude"),
    Client("cursor", "Cursor", JSON, ("mcpServers",), lambda: home() / ".cursor" / "mcp.json",
           ".cursor/mcp.json", detect=lambda: home() / ".cursor"),
    Client("vscode", "VS Code (Copilot)", JSONC, ("servers",),
           lambda: app_config() / "Code" / "User" / "mcp.json", ".vscode/mcp.json", _typed,
           detect=lambda: app_config() / "Code"),
    Client("codex", "Codex CLI", TOML, ("mcp_servers",),
           lambda: Path(os.environ.get("CODEX_HOME") or home() / ".codex") / "config.toml",
           ".codex/config.toml", detect=lambda: Path(os.environ.get("CODEX_HOME") or home() / ".codex"),
           hooks=True),
    Client("gemini", "Gemini CLI", JSONC, ("mcpServers",), lambda: home() / ".gemini" / "settings.json",
           ".gemini/settings.json", detect=lambda: home() / ".gemini", hooks=True),
    Client("windsurf", "Windsurf", JSON, ("mcpServers",),
           lambda: home() / ".codeium" / "windsurf" / "mcp_config.json", None,
           detect=lambda: home() / ".codeium" / "windsurf"),
    Client("zed", "Zed", JSONC, ("context_servers",),
           lambda: (home() / ".config" if sys.platform == "darwin" else app_config()) / "zed" / "settings.json",
           ".zed/settings.json",
           detect=lambda: (home() / ".config" if sys.platform == "darwin" else app_config()) / "zed"),
    Client("continue", "Continue", YAML, ("mcpServers",), lambda: home() / ".continue" / "config.yaml",
           ".continue/mcpServers/codeagent.yaml", detect=lambda: home() / ".continue"),
    Client("cline", "Cline", JSON, ("mcpServers",),
           lambda: (app_config() / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
                    / "settings" / "cline_mcp_settings.json"), None, _cline,
           detect=lambda: app_config() / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"),
)}

# A project block file of Continue is a whole config of its own: these keys go with the list.
CONTINUE_BLOCK = {"name": "codeagent", "version": "0.0.1", "schema": "v1"}
