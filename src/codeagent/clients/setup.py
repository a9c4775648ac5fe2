"""The library side of `codeagent install`: plan, then write (or only show) each change."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..errors import CodeagentError, InvalidParameter
from . import formats
from .hooks import plan_hooks
from .install import Change, apply, client, plan, read_text
from .registry import CLIENTS, PROJECT, SERVER_NAME


def install(name: str, scope: str | None = None, repo: Path | None = None, *, watch: bool = False,
            dry_run: bool = False, uninstall: bool = False, hooks: bool = False) -> list[Change]:
    """Add (or with `uninstall` remove) codeagent in one client's settings; with `hooks`, also
    its grep/glob hooks (Claude Code, Gemini CLI, Codex CLI). Nothing is written on a dry run."""
    c = client(name)
    if hooks and not c.hooks:
        raise InvalidParameter(f"{c.title} has no hooks codeagent can install",
                               hint="hooks are installed for claude-code, gemini and codex")
    if repo is not None and not repo.is_dir():
        raise InvalidParameter(f"--repo {repo} is not a directory")
    changes = [plan(name, scope, repo.resolve() if repo else None, watch=watch,
                    uninstall=uninstall, repo_given=repo is not None)]
    if hooks:
        changes.append(plan_hooks(name, changes[0].scope, (repo or Path.cwd()).resolve(),
                                  uninstall=uninstall, after=changes[0]))
    if not dry_run:
        for change in _one_write_per_file(changes):
            apply(change)
    return changes


def _one_write_per_file(changes: list[Change]) -> list[Change]:
    """A file two changes edit (Codex keeps its server and its hooks in one config.toml) is
    written once, from the first one's old text to the last one's new: one backup, of the
    file as it was."""
    merged: dict[Path, Change] = {}
    for change in changes:
        first = merged.get(change.path)
        merged[change.path] = change if first is None else dataclasses.replace(change, old=first.old)
    return list(merged.values())


def listing(repo: Path) -> list[dict]:
    """Each client and scope: its settings file, its format, and its state: configured (our
    entry is there), available (the client's folder exists), not detected, or invalid."""
    rows = []
    for c in CLIENTS.values():
        for scope in c.scopes:
            path = c.path(scope, repo.resolve())
            rows.append({"client": c.name, "title": c.title, "scope": scope, "format": c.fmt,
                         "path": str(path), "state": _state(c, scope, path)})
    return rows


def _state(c, scope: str, path: Path) -> str:
    try:
        text = read_text(path)
        if text.strip() and formats.entry(c.fmt, text, list(c.keys), SERVER_NAME, str(path)):
            return "configured"
    except CodeagentError:
        return "invalid"
    if scope == PROJECT:
        return "available" if path.parent.exists() else "not configured"
    return "available" if c.installed() or path.exists() else "not detected"
