"""Whom the daemon serves: a socket that is ours and private, a caller of our own user, and
only a caller whose process the fork would reproduce (environment, credentials, namespaces)."""

from __future__ import annotations

import os
import socket
import struct

def trusted(path: str) -> bool:
    """Whether the socket at `path` and its directory are ours and private: a directory in
    /tmp that another user created first must not receive our environment and terminal."""
    try:
        folder, sock = os.stat(os.path.dirname(path)), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return folder.st_uid == uid and not folder.st_mode & 0o077 and sock.st_uid == uid


def peer(conn: socket.socket) -> tuple[int | None, int]:
    """(pid, uid) of the connecting process (Linux); elsewhere the 0700 socket directory
    alone keeps other users out, and ours is assumed."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None, os.getuid()
    creds = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    pid, uid, _gid = struct.unpack("3i", creds)
    return pid, uid


_STATUS_FIELDS = ("Uid", "Gid", "Groups", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb",
                  "NoNewPrivs", "Seccomp")


_NAMESPACES = ("mnt", "pid", "net", "user", "ipc", "uts")


def process_context(pid: int | str = "self") -> tuple | None:
    """What must be equal for a command to behave in the daemon as in its caller's own
    process: credentials, capabilities, namespaces, cgroup and resource limits (Linux /proc;
    None elsewhere)."""
    base = f"/proc/{pid}"
    try:
        with open(f"{base}/status") as fh:
            status = dict(line.split(":", 1) for line in fh.read().splitlines() if ":" in line)
        with open(f"{base}/cgroup") as fh:
            cgroup = fh.read()
        with open(f"{base}/limits") as fh:
            limits = fh.read()
        namespaces = []
        for name in _NAMESPACES:
            try:
                namespaces.append(os.readlink(f"{base}/ns/{name}"))
            except FileNotFoundError:
                namespaces.append("")
    except OSError:
        return None
    fields = tuple(" ".join(status.get(k, "").split()) for k in _STATUS_FIELDS)
    return fields, tuple(namespaces), cgroup, limits


# PYTHON* variables a forked command honours anyway, or that cannot change its results.
_ENV_APPLIED = frozenset({"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONDONTWRITEBYTECODE",
                          "PYTHONPYCACHEPREFIX", "PYTHONFAULTHANDLER", "PYTHONBREAKPOINT",
                          "PYTHONSTARTUP", "PYTHONPROFILEIMPORTTIME"})


def interpreter_env(env: dict) -> dict:
    """The environment the interpreter read at start-up that a forked command would not
    re-read: PYTHON* (module paths, hash seed, UTF-8 mode...) and the locale."""
    return {k: v for k, v in env.items()
            if (k.startswith(("PYTHON", "LC_")) or k == "LANG") and k not in _ENV_APPLIED}


def foreign(peer_pid: int | None, env: dict, context: tuple | None, interpreter: dict) -> str:
    """Why a caller cannot be served like its own process would run ('' when it can)."""
    if interpreter_env(env) != interpreter:
        return "its PYTHON*/locale environment differs from the daemon's"
    if peer_pid is not None and context is not None and process_context(peer_pid) != context:
        return "its credentials, capabilities, namespaces, cgroup or limits differ from the daemon's"
    return ""
