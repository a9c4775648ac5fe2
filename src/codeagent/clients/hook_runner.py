"""The process an agent starts for each of its grep/glob calls: `python -I -S .../hook_runner.py
CLIENT`, the event JSON on stdin (`codeagent install CLIENT --hooks` writes that command).

It must not be noticed, so it is small. -S: no `site` (no .pth files, no site-packages on
the path); -I: no PYTHON* variables, no script folder shadowing the standard library. It
imports only C modules of the standard library (_socket, _json, _struct, _sha1: about 5 ms
over the bare interpreter, where `json`, `socket` and `hashlib` cost 25 ms more, most of it
`re` and `enum`), so it speaks the daemon's wire here rather than through runtime/daemon/client.py;
socket_path and trusted mirror runtime/daemon/protocol.py and runtime/daemon/trust.py (a test holds them
equal). It keeps only a search it can add to (Claude Code's and Gemini's matchers already
pick grep and glob; for Codex, whose searches are shell commands, an `rg`/`grep`/`git grep`/
`find`/`fd` in the Bash call) in a folder with an index, and hands `codeagent hook CLIENT` to
the running daemon, the search (tool, pattern, cwd) in an unlinked file as its stdin; the daemon's child prints the answer on our stdout.
With no daemon it prints nothing (with CODEAGENT_DAEMON=1, as installed, it starts one for
the next call: only that path imports the daemon's client). Whatever fails, it exits 0 and
prints nothing: a hook must never get in the agent's way. CODEAGENT_DAEMON=0 runs the whole
CLI in this process instead (slow: for tests and debugging).
"""

from __future__ import annotations

import os
import sys

import _json
import _sha1
import _socket
import _struct

# Claude Code's Grep/Glob, Gemini CLI's grep and glob tools -> what they are.
TOOLS = {"Grep": "Grep", "Glob": "Glob", "search_file_content": "Grep", "grep_search": "Grep",
         "glob": "Glob"}
SHELL_TOOLS = ("Bash", "shell", "exec_command", "local_shell")  # Codex's shell tool (Bash in hooks)
_SEARCHERS = {"rg": "Grep", "grep": "Grep", "egrep": "Grep", "fgrep": "Grep", "ag": "Grep",
              "ack": "Grep", "git": "Grep", "find": "Glob", "fd": "Glob", "fdfind": "Glob"}
_VALUED = frozenset("-e --regexp -f --file -g --glob -t --type -T --type-not -m --max-count -A -B -C "
                    "--context --after-context --before-context -j --threads --include --exclude "
                    "-d --max-depth --exclude-dir --color --colour -E --extension -x --exec".split())
_SHELLS = ("bash", "sh", "zsh", "dash")
_OPERATORS = "|;&"
_LEN = _struct.Struct("!I")  # the daemon protocol's frame: 4-byte length, then JSON


def normalize(event: dict, client: str) -> dict | None:
    """The event as `codeagent hook` takes it (tool_name Grep or Glob, tool_input.pattern, cwd,
    hook_event_name), or None when it is no search the index can add to."""
    name = str(event.get("tool_name"))
    tool_input = event.get("tool_input")
    tool_input = tool_input if isinstance(tool_input, dict) else {}
    if name in TOOLS:
        tool, pattern = TOOLS[name], tool_input.get("pattern")
    elif name in SHELL_TOOLS:
        tool, pattern = shell_search(tool_input.get("command")) or (None, None)
    else:
        return None
    if not isinstance(pattern, str) or not pattern.strip():
        return None
    out = {"tool_name": tool, "tool_input": {"pattern": pattern}, "cwd": event.get("cwd")}
    if event.get("hook_event_name"):
        out["hook_event_name"] = event["hook_event_name"]
    return out


def shell_search(command) -> tuple[str, str] | None:
    """(Grep or Glob, pattern) of the first search in a shell command line (`rg -n foo src`,
    `bash -lc "grep -rn foo ."`, `find . -name '*.py'`, a pipeline), or None."""
    if isinstance(command, list):
        words = [str(w) for w in command]
        if len(words) >= 3 and os.path.basename(words[0]) in _SHELLS and words[1].startswith("-"):
            return shell_search(words[2])
    elif isinstance(command, str):
        words = shell_words(command)
        if words is None:
            return None
    else:
        return None
    start = 0
    for i, w in enumerate([*words, ";"]):
        if w in _OPERATORS:
            found = _one_command(words[start:i])
            if found:
                return found
            start = i + 1
    return None


def shell_words(line: str) -> list[str] | None:
    """The words of a command line as sh reads them (quotes, backslashes), each of | ; & a word
    of its own; None when a quote is left open. (shlex would import re: 10 ms here.)"""
    words: list[str] = []
    word: list[str] = []
    quote, started, i = "", False, 0
    while i < len(line):
        c = line[i]
        if quote == "'":
            if c == "'":
                quote = ""
            else:
                word.append(c)
        elif quote == '"':
            if c == "\\" and i + 1 < len(line) and line[i + 1] in '"\\$`':
                i += 1
                word.append(line[i])
            elif c == '"':
                quote = ""
            else:
                word.append(c)
        elif c in "'\"":
            quote, started = c, True
        elif c == "\\":
            i += 1
            if i == len(line):
                return None  # an escape with nothing to escape, as sh's continuation
            word.append(line[i])
        elif c in " \t\r\n" or c in _OPERATORS:
            if word or started:
                words.append("".join(word))
                word, started = [], False
            if c in _OPERATORS:
                words.append(c)
        else:
            word.append(c)
        i += 1
    if quote:
        return None
    if word or started:
        words.append("".join(word))
    return words


def _one_command(words: list[str]) -> tuple[str, str] | None:
    while words and "=" in words[0] and not words[0].startswith("-"):  # VAR=x rg ...
        words = words[1:]
    if not words:
        return None
    prog = os.path.basename(words[0])
    if prog in _SHELLS and len(words) >= 3 and words[1].startswith("-") and "c" in words[1]:
        return shell_search(words[2])
    tool, args = _SEARCHERS.get(prog), words[1:]
    if prog == "git":
        if not args or args[0] != "grep":
            return None
        args = args[1:]
    if tool is None:
        return None
    if prog == "find":
        for flag, value in zip(args, args[1:]):
            if flag in ("-name", "-iname", "-path", "-ipath"):
                return "Glob", value
        return None
    return _first_operand(tool, args)


def _first_operand(tool: str, args: list[str]) -> tuple[str, str] | None:
    """The pattern: -e's value, else the first word that is no option, option value or redirection."""
    skip = False
    for i, a in enumerate(args):
        if skip:
            skip = False
        elif a in ("-e", "--regexp") and i + 1 < len(args):
            return tool, args[i + 1]
        elif a.startswith("--regexp="):
            return tool, a.split("=", 1)[1]
        elif a == "--":
            return (tool, args[i + 1]) if i + 1 < len(args) else None
        elif a.startswith("-"):
            skip = a in _VALUED
        elif not (a.startswith((">", "<")) or (a[:1].isdigit() and a[1:2] in "<>" and a[1:2])):
            return tool, a
    return None


class _Scan:
    """The context _json's C scanner reads (json.decoder's, without importing re)."""
    strict = True
    object_hook = object_pairs_hook = None
    parse_float, parse_int, parse_constant = float, int, float


def loads(text: str):
    value, end = _json.make_scanner(_Scan())(text, 0)
    if text[end:].strip():
        raise ValueError("trailing data")
    return value


def dumps(value) -> str:
    """JSON of str, int, bool, None, list and dict values, as json.dumps writes it."""
    if isinstance(value, str):
        return _json.encode_basestring_ascii(value)
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, dict):
        return "{" + ", ".join(f"{dumps(str(k))}: {dumps(v)}" for k, v in value.items()) + "}"
    return "[" + ", ".join(dumps(v) for v in value) + "]"


def socket_path() -> str:
    """The daemon's socket: daemon.protocol.socket_path, computed without hashlib."""
    base = os.environ.get("CODEAGENT_DAEMON_DIR")
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = (os.path.join(runtime, "codeagent") if runtime
                else os.path.join("/tmp", f"codeagent-{os.getuid()}"))
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # the codeagent package
    python = os.path.realpath(sys.executable)
    key = _sha1.sha1(f"{sys.prefix}\0{python}\0{here}".encode()).hexdigest()[:12]
    return os.path.join(base, f"d-{key}.sock")


def trusted(path: str) -> bool:
    """daemon.trust.trusted: the socket and its folder are ours, the folder private."""
    try:
        folder, sock = os.stat(os.path.dirname(path)), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return folder.st_uid == uid and not folder.st_mode & 0o077 and sock.st_uid == uid


def forward(client: str, stdin_fd: int) -> str:
    """Run `codeagent hook CLIENT` in the daemon, its stdin `stdin_fd`, its stdout and stderr
    ours: 'done', or why not: 'absent' (no daemon of ours), 'stale' (it stops: its code
    changed), 'declined' (it cannot run this caller's command as its own process would)."""
    path = socket_path()
    if not trusted(path):
        return "absent"
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        try:
            sock.connect(path)
        except OSError:
            return "absent"
        umask = os.umask(0o022)
        os.umask(umask)
        request = {"argv": ["hook", client], "cwd": os.getcwd(), "env": dict(os.environ),
                   "umask": umask, "prog": "codeagent", "encoding": "utf-8", "errors": "strict"}
        data = dumps(request).encode()
        payload = _LEN.pack(len(data)) + data
        fds = _struct.pack("3i", stdin_fd, 1, 2)
        sent = sock.sendmsg([payload], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, fds)])
        if sent < len(payload):
            sock.sendall(payload[sent:])
        return _outcome(sock)
    finally:
        sock.close()


def _outcome(sock) -> str:
    """Follow the daemon's messages about our command to its end."""
    buf = b""
    while True:
        while len(buf) < _LEN.size or len(buf) < _LEN.size + _LEN.unpack_from(buf)[0]:
            chunk = sock.recv(1 << 16)
            if not chunk:
                return "done"  # the daemon went away: nothing more to wait for
            buf += chunk
        n = _LEN.size + _LEN.unpack_from(buf)[0]
        message, buf = loads(buf[_LEN.size:n].decode()), buf[n:]
        if not isinstance(message, dict):
            continue
        if "stale" in message:
            return "stale"
        if "foreign" in message:
            return "declined"
        if "exit" in message or "signal" in message:
            return "done"


def _event_file(data: bytes) -> int:
    """A read-only descriptor at the start of an unlinked file holding `data` (any size; a
    pipe would block past 64 KiB before the daemon's child reads it)."""
    folder = os.environ.get("TMPDIR") or "/tmp"
    try:
        fd = os.open(folder, os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):  # no O_TMPFILE here: a private name, unlinked at once
        name = os.path.join(folder, f".codeagent-hook-{os.getpid()}-{os.urandom(6).hex()}")
        fd = os.open(name, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600)
        os.unlink(name)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def run(client: str, raw: bytes) -> int:
    """Answer one event (the raw stdin): always 0. Only a search in an indexed folder goes on
    to the daemon (every Codex shell command comes here, and a repository without an index
    has nothing to add), as the small normalized event."""
    try:
        event = loads(raw.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return 0
    found = normalize(event, client) if isinstance(event, dict) else None
    if found is None or not indexed(str(found.get("cwd") or os.getcwd())):
        return 0
    data = dumps(found).encode()
    mode = os.environ.get("CODEAGENT_DAEMON", "")
    if mode == "0":
        _in_process(client, data)
    fd = _event_file(data)
    try:
        outcome = forward(client, fd)
    finally:
        os.close(fd)
    if (outcome == "absent" and mode == "1") or outcome == "stale":
        _start_daemon()
    return 0


def indexed(folder: str) -> bool:
    """Whether `folder` or a folder above it holds an index (`.codeagent`): the repository's
    root, where every command looks, is always one of them."""
    folder = os.path.abspath(folder)
    while True:
        if os.path.isdir(os.path.join(folder, ".codeagent")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            return False
        folder = parent


def _start_daemon() -> None:
    """Start a daemon for the next call (the rare path: it may import what it needs)."""
    sys.path.append(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))))
    from codeagent.runtime.daemon.client import spawn  # only here: subprocess, json, socket

    try:
        spawn()
    except Exception:  # noqa: BLE001 - fail open: the next call tries again
        pass


def _in_process(client: str, raw: bytes) -> None:
    """Run the whole CLI here (CODEAGENT_DAEMON=0), the event as its stdin: replaces the process."""
    fd = _event_file(raw)
    os.dup2(fd, 0)
    os.execv(sys.executable, [sys.executable, "-m", "codeagent", "hook", client])


def _venv_prefix() -> str:
    """sys.prefix as `site` sets it in a virtual environment (-S skips that): the daemon's
    socket name is keyed on it."""
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    site_prefix = os.path.dirname(exe_dir)
    for folder in (exe_dir, site_prefix):
        if os.path.isfile(os.path.join(folder, "pyvenv.cfg")):
            return site_prefix
    return sys.prefix


def main() -> None:
    try:
        if sys.flags.no_site:
            sys.prefix = sys.exec_prefix = _venv_prefix()
        client = sys.argv[1] if len(sys.argv) > 1 else "claude-code"
        run(client, sys.stdin.buffer.read())
    except BaseException:  # noqa: BLE001 - fail open, even on a signal's KeyboardInterrupt
        pass
    os._exit(0)


if __name__ == "__main__":
    main()
