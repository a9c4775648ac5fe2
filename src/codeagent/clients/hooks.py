"""`codeagent install claude-code --hooks`: Claude Code hooks that add the index's hits to
the agent's own Grep and Glob results.

Claude Code runs a hook command with the event as JSON on stdin and reads JSON back; a
PostToolUse answer's `hookSpecificOutput.additionalContext` is shown to the model next to the
tool's result. The command is `codeagent hook claude-code` (query/hooks.py answers it), run
through the resident daemon (CODEAGENT_DAEMON=1 starts one) so it costs a fork, not an
interpreter start. Our matcher group is recognised by its command and replaced as a whole;
other hooks in the file are kept.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from ..errors import ClientConfigInvalid
from . import formats
from .install import Change, codeagent_command, read_text
from .registry import PROJECT, USER, home

EVENTS = ("PostToolUse",)
MATCHER = "Grep|Glob"
HOOK_ARGS = ("hook", "claude-code")
TIMEOUT_S = 5


def settings_path(scope: str, repo: Path) -> Path:
    return (repo / ".claude" if scope == PROJECT else home() / ".claude") / "settings.json"


def hook_command() -> str:
    parts = [*codeagent_command(), *HOOK_ARGS]
    return "CODEAGENT_DAEMON=1 " + " ".join(shlex.quote(p) for p in parts)


def ours(group) -> bool:
    return isinstance(group, dict) and any(
        isinstance(h, dict) and " ".join(HOOK_ARGS) in str(h.get("command", ""))
        for h in group.get("hooks") or [])


def plan_hooks(scope: str | None, repo: Path, *, uninstall: bool = False) -> Change:
    scope = scope or PROJECT
    path = settings_path(scope, repo.resolve())
    old = read_text(path)
    where = str(path)
    data = formats.read(formats.JSON, old, where)
    hooks = data.get("hooks") if isinstance(data.get("hooks"), dict) else {}
    new = old
    for event in EVENTS:
        if not isinstance(hooks.get(event) or [], list):
            raise ClientConfigInvalid(f"{where}: `hooks.{event}` is not a list",
                                      hint="fix the file by hand, then run the command again")
        groups = [g for g in (hooks.get(event) or []) if not ours(g)]
        if not uninstall:
            groups.append({"matcher": MATCHER, "hooks": [
                {"type": "command", "command": hook_command(), "timeout": TIMEOUT_S}]})
        if groups or event in hooks:
            new = formats.set_entry(formats.JSON, new, ["hooks"], event, groups, where)
    action = "unchanged" if new == old else ("removed" if uninstall else
                                             "updated" if any(ours(g) for e in EVENTS
                                                              for g in hooks.get(e) or []) else "added")
    return Change("claude-code", scope, path, old, new, action, what="hooks")


__all__ = ["plan_hooks", "settings_path", "hook_command", "ours", "USER", "PROJECT"]
