"""`codeagent install`: write the codeagent server into an MCP client's own settings file.

A change is planned first (`plan`: the file's text before and after), then written (`apply`):
the old file is copied to FILE.codeagent-backup and the new text replaces it atomically.
A plan whose text does not change writes nothing, so a second run reports `unchanged`.
"""

from __future__ import annotations

import difflib
import os
import shutil
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ..errors import InvalidParameter, StoreWriteFailed
from ..store.atomic import atomic_write
from . import formats
from .registry import CLIENTS, CONTINUE_BLOCK, PROJECT, SCOPES, SERVER_NAME, USER, Client

BACKUP_SUFFIX = ".codeagent-backup"


@dataclass(frozen=True)
class Change:
    client: str
    scope: str
    path: Path
    old: str
    new: str
    action: str  # added, updated, removed, unchanged
    what: str = "server"  # server or hooks

    def diff(self) -> str:
        return "".join(difflib.unified_diff(self.old.splitlines(True), self.new.splitlines(True),
                                            f"{self.path} (before)", f"{self.path} (after)"))

    def to_dict(self) -> dict:
        return {"client": self.client, "scope": self.scope, "path": str(self.path),
                "action": self.action, "what": self.what}


def codeagent_command() -> list[str]:
    """The absolute command of the running codeagent: its console script when there is one
    (a client starts it without our PATH), else this interpreter with `-m codeagent`."""
    argv0 = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    if argv0 is not None and argv0.name in ("codeagent", "codeagent.exe") and argv0.is_file():
        return [os.path.abspath(argv0)]
    beside = Path(sys.executable).parent / ("codeagent.exe" if sys.platform == "win32" else "codeagent")
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("codeagent")
    return [os.path.abspath(found)] if found else [sys.executable, "-m", "codeagent"]


def client(name: str) -> Client:
    found = CLIENTS.get(name)
    if found is None:
        raise InvalidParameter(f"unknown client {name!r}",
                               hint=f"choose one of {', '.join(CLIENTS)} (codeagent install --list)")
    return found


def pick_scope(c: Client, scope: str | None) -> str:
    if scope is None:
        return PROJECT if PROJECT in c.scopes else USER
    if scope not in SCOPES or scope not in c.scopes:
        raise InvalidParameter(f"{c.title} has no {scope} settings file",
                               hint=f"use --scope {' or '.join(c.scopes)}")
    return scope


def server_entry(c: Client, scope: str, repo: Path | None, watch: bool) -> dict:
    """The client's entry for `codeagent serve`: --repo names the repository for a project
    file, for a client with no project file, and whenever --repo was given; a per-user entry
    without it serves the folder the client starts it in."""
    command, *head = codeagent_command()
    args = [*head, "serve"]
    if repo is not None:
        args += ["--repo", str(repo)]
    if watch:
        args.append("--watch")
    return c.entry(command, args)


def plan(name: str, scope: str | None = None, repo: Path | None = None, *, watch: bool = False,
         uninstall: bool = False, repo_given: bool = False) -> Change:
    """The change `install` would make to one client's settings file."""
    c = client(name)
    scope = pick_scope(c, scope)
    root = (repo or Path.cwd()).resolve()
    path = c.path(scope, root)
    old = read_text(path)
    where = str(path)
    keys = list(c.keys)
    if uninstall:
        new = formats.remove_entry(c.fmt, old, keys, SERVER_NAME, where)
        return Change(c.name, scope, path, old, new, "removed" if new != old else "unchanged")
    named = root if (scope == PROJECT or repo_given or PROJECT not in c.scopes) else None
    value = server_entry(c, scope, named, watch)
    if c.name == "continue" and scope == PROJECT and not old.strip():  # a block file of its own
        base = "".join(f"{k}: {v}\n" for k, v in CONTINUE_BLOCK.items())
        return Change(c.name, scope, path, old, formats.set_entry(c.fmt, base, keys, SERVER_NAME,
                                                                  value, where), "added")
    had = formats.entry(c.fmt, old, keys, SERVER_NAME, where) if old.strip() else None
    new = formats.set_entry(c.fmt, old, keys, SERVER_NAME, value, where)
    action = "unchanged" if new == old else ("updated" if had is not None else "added")
    return Change(c.name, scope, path, old, new, action)


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParameter(f"cannot read {path}: {exc}") from None


def apply(change: Change) -> Path | None:
    """Write a planned change; the backup's path (None when nothing changed or no file was)."""
    if change.new == change.old:
        return None
    path = change.path
    backup = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
        if mode is not None:
            backup = path.with_name(path.name + BACKUP_SUFFIX)
            shutil.copy2(path, backup)
        atomic_write(path, change.new.encode("utf-8"), path.parent)
        if mode is not None:
            os.chmod(path, mode)
    except OSError as exc:
        raise StoreWriteFailed(f"could not write {path}: {exc.strerror or exc}",
                               hint="check the folder's permissions; the old file is unchanged") from None
    return backup
