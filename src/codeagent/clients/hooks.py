"""`codeagent install claude-code|gemini --hooks`: hooks that add the index's hits to the
agent's own grep and glob results.

Both clients run a hook command with the event as JSON on stdin and read JSON back; the
answer's `hookSpecificOutput.additionalContext` reaches the model beside the tool's result
(Claude Code: PostToolUse on Grep and Glob; Gemini CLI: AfterTool on its grep and glob tools).
The command is `codeagent hook CLIENT` (query/hooks.py answers it), run through the resident
daemon (CODEAGENT_DAEMON=1 starts one) so it costs a fork, not an interpreter start. Our
matcher group is recognised by its command and replaced as a whole; other hooks are kept.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClientConfigInvalid
from . import formats
from .install import Change, codeagent_command, read_text
from .registry import PROJECT, USER, home


@dataclass(frozen=True)
class HookSpec:
    folder: str  # the settings folder, in the project and in HOME
    fmt: str
    event: str
    matcher: str
    timeout: int  # in the client's unit: Claude Code seconds, Gemini milliseconds
    named: bool = False  # the client's hook entries carry a `name`


HOOKS = {
    "claude-code": HookSpec(".claude", formats.JSON, "PostToolUse", "Grep|Glob", 5),
    "gemini": HookSpec(".gemini", formats.JSONC, "AfterTool", "search_file_content|grep_search|glob",
                       5000, named=True),
}
MATCHER = HOOKS["claude-code"].matcher


def settings_path(client: str, scope: str, repo: Path) -> Path:
    return (repo if scope == PROJECT else home()) / HOOKS[client].folder / "settings.json"


def hook_command(client: str) -> str:
    parts = [*codeagent_command(), "hook", client]
    return "CODEAGENT_DAEMON=1 " + " ".join(shlex.quote(p) for p in parts)


def ours(group, client: str) -> bool:
    return isinstance(group, dict) and any(
        isinstance(h, dict) and f"hook {client}" in str(h.get("command", ""))
        for h in group.get("hooks") or [])


def plan_hooks(client: str, scope: str | None, repo: Path, *, uninstall: bool = False) -> Change:
    spec = HOOKS[client]
    scope = scope or PROJECT
    path = settings_path(client, scope, repo.resolve())
    old = read_text(path)
    where = str(path)
    hooks = formats.read(spec.fmt, old, where).get("hooks")
    hooks = hooks if isinstance(hooks, dict) else {}
    present = hooks.get(spec.event) or []
    if not isinstance(present, list):
        raise ClientConfigInvalid(f"{where}: `hooks.{spec.event}` is not a list",
                                  hint="fix the file by hand, then run the command again")
    groups = [g for g in present if not ours(g, client)]
    if not uninstall:
        entry = {"type": "command", "command": hook_command(client), "timeout": spec.timeout}
        groups.append({"matcher": spec.matcher, "hooks": [
            {"name": "codeagent", **entry} if spec.named else entry]})
    new = old
    if groups or spec.event in hooks:
        new = formats.set_entry(spec.fmt, old, ["hooks"], spec.event, groups, where)
    had = any(ours(g, client) for g in present)
    action = "unchanged" if new == old else "removed" if uninstall else "updated" if had else "added"
    return Change(client, scope, path, old, new, action, what="hooks")


__all__ = ["HOOKS", "plan_hooks", "settings_path", "hook_command", "ours", "USER", "PROJECT"]
