"""`codeagent install claude-code|gemini|codex --hooks`: hooks that add the index's hits to
the agent's own grep and glob results.

The three clients run a hook command with the event as JSON on stdin and read JSON back; the
answer's `hookSpecificOutput.additionalContext` reaches the model beside the tool's result
(Claude Code: PostToolUse on Grep and Glob; Gemini CLI: AfterTool on its grep and glob tools;
Codex CLI: PostToolUse on Bash, its searches being `rg`/`grep`/`find` commands, written as
`[[hooks.PostToolUse]]` tables in its config.toml). The command is this interpreter running
clients/hook_runner.py with -I -S (a few milliseconds of start-up, standard library only),
which hands the event to the resident daemon (query/hooks.py answers it there). Our matcher
group is recognised by its command and replaced as a whole; other hooks are kept.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClientConfigInvalid
from . import formats, hook_runner
from .install import Change, read_text
from .registry import CLIENTS, PROJECT, USER, home


@dataclass(frozen=True)
class HookSpec:
    folder: str  # the settings folder, in the project and in HOME
    fmt: str
    event: str
    matcher: str
    timeout: int  # in the client's unit: Claude Code and Codex seconds, Gemini milliseconds
    named: bool = False  # the client's hook entries carry a `name`
    file: str = "settings.json"


HOOKS = {
    "claude-code": HookSpec(".claude", formats.JSON, "PostToolUse", "Grep|Glob", 5),
    "gemini": HookSpec(".gemini", formats.JSONC, "AfterTool", "search_file_content|grep_search|glob",
                       5000, named=True),
    # developers.openai.com/codex/hooks: inline [hooks] tables in config.toml, matched on the
    # tool name; shell commands are `Bash`. Codex runs a new hook only once /hooks trusted it.
    "codex": HookSpec(".codex", formats.TOML, "PostToolUse", "^Bash$", 5, file="config.toml"),
}
MATCHER = HOOKS["claude-code"].matcher


def settings_path(client: str, scope: str, repo: Path) -> Path:
    spec = HOOKS[client]
    if client == "codex" and scope == USER:  # CODEX_HOME moves the whole folder
        return CLIENTS["codex"].path(USER, repo)
    return (repo if scope == PROJECT else home()) / spec.folder / spec.file


def hook_command(client: str) -> str:
    """This interpreter, without site and isolated, running hook_runner.py for `client`;
    CODEAGENT_DAEMON=1: the first call of a session starts the daemon the next ones use."""
    parts = [sys.executable, "-I", "-S", os.path.abspath(hook_runner.__file__), client]
    return "CODEAGENT_DAEMON=1 " + " ".join(shlex.quote(p) for p in parts)


def ours(group, client: str) -> bool:
    """A matcher group holding our hook: `... hook_runner.py CLIENT`, or the older
    `codeagent hook CLIENT`."""
    return isinstance(group, dict) and any(
        isinstance(h, dict) and _our_command(str(h.get("command", "")), client)
        for h in group.get("hooks") or [])


def _our_command(command: str, client: str) -> bool:
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    return (len(words) >= 2 and words[-1] == client
            and os.path.basename(words[-2]) in ("hook", "hook_runner.py"))


def plan_hooks(client: str, scope: str | None, repo: Path, *, uninstall: bool = False,
               after: Change | None = None) -> Change:
    """The change to the client's hook settings; `after`: a change planned before it to the
    same file (Codex's config.toml holds the server too), whose new text this one edits."""
    spec = HOOKS[client]
    scope = scope or PROJECT
    path = settings_path(client, scope, repo.resolve())
    old = after.new if after is not None and after.path == path else read_text(path)
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
    if not groups and spec.fmt == formats.TOML:  # TOML has no empty array of tables
        new = formats.remove_entry(spec.fmt, old, ["hooks"], spec.event, where)
    elif groups or spec.event in hooks:
        new = formats.set_entry(spec.fmt, old, ["hooks"], spec.event, groups, where)
    had = any(ours(g, client) for g in present)
    action = "unchanged" if new == old else "removed" if uninstall else "updated" if had else "added"
    return Change(client, scope, path, old, new, action, what="hooks")


__all__ = ["HOOKS", "plan_hooks", "settings_path", "hook_command", "ours", "USER", "PROJECT"]
