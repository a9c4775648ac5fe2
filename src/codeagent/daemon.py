"""Resident mode: a per-user server that has already imported codeagent and its heavy
dependencies (DuckDB, pyarrow, numpy, tree-sitter) and forks a fresh child for each command.

A fresh `codeagent build` spends about 0.35 s importing before it does any work; through the
daemon a command starts in a few milliseconds. Each command still runs in a process of its
own, forked from the warm server, with the caller's arguments, working directory,
environment, umask and standard streams (passed as file descriptors): output, progress bars,
exit codes and signals behave as without the daemon.

    codeagent daemon start     # from now on every codeagent command goes through it
    codeagent daemon status
    codeagent daemon stop

`CODEAGENT_DAEMON=0` never uses a daemon; `CODEAGENT_DAEMON=1` also starts one when none
runs (that command itself runs in-process). `codeagent serve` and `codeagent daemon` always
run in-process. The server exits after its idle timeout, and as soon as any of its loaded
code changes on disk (that command then runs in-process). One server per user and Python
installation; its socket lives in `CODEAGENT_DAEMON_DIR`, else `$XDG_RUNTIME_DIR/codeagent`,
else `/tmp/codeagent-<uid>` (created 0700; a directory owned by another user is refused).

This module imports only the standard library: the client side runs before anything else.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import os
import select
import signal
import socket
import struct
import sys
import time

DEFAULT_IDLE_TIMEOUT = 3 * 3600.0
REQUEST_TIMEOUT = 5.0  # seconds a connection may take to send its request
LOCK_WAIT = 30.0  # seconds a new daemon waits for a stopping one to finish its commands
NOT_FORWARDED = ("daemon", "serve")
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)
# Imported (or, for "module:function", called) by the server before it forks children: what
# a build or a query would load, with grammars and queries warmed by parsing a line of each.
PRELOAD = (
    "codeagent.cli", "numpy", "numpy.ma", "pyarrow", "pyarrow.compute", "pyarrow.parquet",
    "duckdb", "tree_sitter", "tree_sitter_language_pack", "codeagent.indexer.commands",
    "codeagent.indexer.build", "codeagent.indexer.shard", "codeagent.indexer.assemble",
    "codeagent.indexer.graph", "codeagent.indexer.ann", "codeagent.indexer.vectors",
    "codeagent.query.commands", "codeagent.query.search", "codeagent.indexer.parse:warm",
)
_LEN = struct.Struct("!I")
SUPPORTED = hasattr(socket, "send_fds") and hasattr(os, "fork")  # POSIX: descriptors travel


class DaemonError(Exception):
    pass


# ---- location -------------------------------------------------------------------------------
def socket_dir() -> str:
    base = os.environ.get("CODEAGENT_DAEMON_DIR")
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = (os.path.join(runtime, "codeagent") if runtime
                else os.path.join("/tmp", f"codeagent-{os.getuid()}"))
    return base


def socket_path() -> str:
    """The socket of this user's daemon for this Python installation of codeagent."""
    here = os.path.dirname(os.path.realpath(__file__))
    python = os.path.realpath(sys.executable)  # `python`, `python3` and the entry script agree
    key = hashlib.sha1(f"{sys.prefix}\0{python}\0{here}".encode()).hexdigest()[:12]
    return os.path.join(socket_dir(), f"d-{key}.sock")


def _private_dir(path: str) -> None:
    """Create `path` 0700, or check that an existing one is ours and private."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise DaemonError(f"{path} belongs to another user; set CODEAGENT_DAEMON_DIR")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


# ---- messages: 4-byte length + JSON --------------------------------------------------------
def _send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    payload = _LEN.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [payload], fds)
        if sent < len(payload):  # (never send b"": the peer may have answered and closed)
            sock.sendall(payload[sent:])
    else:
        sock.sendall(payload)


class _Reader:
    """Reads length-prefixed JSON messages from a stream socket, keeping partial ones."""

    INCOMPLETE = object()

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.fds: list[int] = []

    def read(self, with_fds: bool = False, once: bool = False):
        """The next message, or None at end of stream. `once`: at most one receive (for a
        non-blocking socket that select found readable); INCOMPLETE if that was not enough."""
        while True:
            if len(self.buf) >= _LEN.size:
                (n,) = _LEN.unpack_from(self.buf)
                if len(self.buf) >= _LEN.size + n:
                    data, self.buf = self.buf[_LEN.size:_LEN.size + n], self.buf[_LEN.size + n:]
                    return json.loads(data)
            if with_fds and not self.fds:
                chunk, fds, _flags, _addr = socket.recv_fds(self.sock, 1 << 16, 3)
                self.fds = list(fds)
            else:
                chunk = self.sock.recv(1 << 16)
            if not chunk:
                return None
            self.buf += chunk
            if once and (len(self.buf) < _LEN.size
                         or len(self.buf) < _LEN.size + _LEN.unpack_from(self.buf)[0]):
                return self.INCOMPLETE


def _trusted(path: str) -> bool:
    """Whether the socket at `path` and its directory are ours and private: a directory in
    /tmp that another user created first must not receive our environment and terminal."""
    try:
        folder, sock = os.stat(os.path.dirname(path)), os.lstat(path)
    except OSError:
        return False
    uid = os.getuid()
    return folder.st_uid == uid and not folder.st_mode & 0o077 and sock.st_uid == uid


def _request(message: dict, timeout: float = 5.0) -> dict | None:
    """One control request to a running daemon; None when none answers."""
    if not _trusted(socket_path()):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path())
            _send(sock, message)
            return _Reader(sock).read()
        except OSError:
            return None


def status() -> dict | None:
    """The running daemon's pid, start time, commands served and socket; None if none runs."""
    reply = _request({"control": "status"})
    return reply.get("status") if reply else None


def stop() -> bool:
    """Ask the daemon to exit once its running commands finish; False if none was running."""
    return _request({"control": "stop"}) is not None


def spawn(idle_timeout: float = DEFAULT_IDLE_TIMEOUT, wait: float = 0.0) -> dict | None:
    """Start a detached daemon; with `wait`, poll up to that many seconds for it to answer."""
    import subprocess

    _private_dir(socket_dir())
    log = open(socket_path()[:-len(".sock")] + ".log", "ab")
    with log:
        subprocess.Popen([sys.executable, "-m", "codeagent", "daemon", "run",
                          "--idle-timeout", str(idle_timeout)],
                         stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                         env={**os.environ, "CODEAGENT_DAEMON": "0"}, cwd="/")
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        found = status()
        if found:
            return found
        time.sleep(0.05)
    return None


def _debug(text: str) -> None:
    if os.environ.get("CODEAGENT_DAEMON_DEBUG") == "1":
        sys.stderr.write(f"codeagent-daemon[{os.getpid()}]: {text}\n")


def _spawn_quietly() -> None:
    try:
        spawn()
        _debug("started a daemon")
    except (OSError, DaemonError) as exc:
        _debug(f"could not start a daemon: {exc}")


# ---- client ---------------------------------------------------------------------------------
def _command_name(argv: list[str]) -> str | None:
    return next((a for a in argv if not a.startswith("-")), None)


def _prog_name() -> str:
    """The program name click shows in usage lines, as it would detect it in this process."""
    main_module = sys.modules.get("__main__")
    if getattr(main_module, "__package__", None) == "codeagent":
        return "python -m codeagent"
    return os.path.basename(sys.argv[0]) or "codeagent"


def _std_fds() -> list[int]:
    """fds 0-2 to hand over; a closed one is replaced by /dev/null, as the child would see."""
    fds = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
            fds.append(fd)
        except OSError:
            fds.append(os.open(os.devnull, os.O_RDWR))
    return fds


def forward(argv: list[str], autostart: bool = False) -> int | None:
    """Run `codeagent argv` in the daemon; its exit status, or None when no daemon took the
    command (none running, stale code, unreadable cwd) and it must run in-process."""
    try:
        cwd = os.getcwd()
    except OSError:
        return None
    path = socket_path()
    if not _trusted(path):
        _debug(f"no daemon socket of ours at {path}")
        if autostart:
            _spawn_quietly()
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError as exc:
        _debug(f"no daemon at {path}: {exc}")
        sock.close()
        if autostart:
            _spawn_quietly()
        return None
    with sock:
        umask = os.umask(0o022)
        os.umask(umask)
        stream = sys.stdout
        request = {"argv": argv, "cwd": cwd, "env": dict(os.environ), "umask": umask,
                   "prog": _prog_name(),
                   "encoding": getattr(stream, "encoding", None) or "utf-8",
                   "errors": getattr(stream, "errors", None) or "strict"}
        try:
            _send(sock, request, _std_fds())
        except OSError as exc:
            _debug(f"could not send the command: {exc}")
            return None
        reader = _Reader(sock)

        def relay(signum: int, _frame: object) -> None:
            try:
                _send(sock, {"signal": signum})
            except OSError:
                pass

        previous = {s: signal.signal(s, relay) for s in FORWARDED_SIGNALS}
        started = False
        try:
            while True:
                try:
                    message = reader.read()
                except InterruptedError:
                    continue
                except OSError:
                    message = None
                _debug(f"message {message}")
                if message is None:
                    if not started:
                        return None
                    sys.stderr.write("error: the codeagent daemon went away while running the "
                                     "command; run it again (CODEAGENT_DAEMON=0 bypasses the daemon)\n")
                    return 1
                if "stale" in message:  # it stops; start its replacement on the new code
                    _spawn_quietly()
                    return None
                if "foreign" in message:
                    _debug(f"the daemon cannot run this command as this process would: {message['foreign']}")
                    return None
                if "running" in message:
                    started = True
                elif "signal" in message:  # die the way the command died
                    signum = int(message["signal"])
                    for s, handler in previous.items():
                        signal.signal(s, handler)
                    try:
                        signal.signal(signum, signal.SIG_DFL)
                    except (OSError, ValueError):
                        pass  # SIGKILL, SIGSTOP: their disposition is already the default
                    os.kill(os.getpid(), signum)
                    return 128 + signum
                elif "exit" in message:
                    return int(message["exit"])
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)


def main() -> None:
    """The `codeagent` entry point: through the daemon when one runs, else in-process."""
    argv = sys.argv[1:]
    mode = os.environ.get("CODEAGENT_DAEMON", "")
    command = _command_name(argv)
    if mode != "0" and SUPPORTED and command not in NOT_FORWARDED:
        code = forward(argv, autostart=mode == "1")
        if code is not None:
            sys.stdout.flush()
            sys.exit(code)
    if command == "serve":  # a long-lived server with its own shutdown
        from .cli import main as cli_main

        cli_main()
        return
    code = _run_cli()
    _wind_down()
    os._exit(code)


def _run_cli(args: list[str] | None = None, prog_name: str | None = None) -> int:
    """Run the click CLI; its exit status."""
    try:
        from .cli import main as cli_main

        cli_main(args=args, prog_name=prog_name)
        return 0
    except SystemExit as exc:
        return _exit_code(exc.code)
    except KeyboardInterrupt:  # a Ctrl-C while starting, before the CLI handles it
        sys.stderr.write("interrupted: codeagent stopped while starting; nothing was changed\n")
        return 130


def _wind_down() -> None:
    """What an interpreter exit does before its finalization: join non-daemon threads, run
    atexit handlers, flush the streams. The caller then calls os._exit, so daemon threads are
    not unwound and extension modules are not torn down: a daemon thread unwound inside DuckDB
    at shutdown aborts the process with "terminate called without an active exception"
    (duckdb/duckdb#13904; seen once in a full test run, on `codeagent diff`)."""
    import atexit
    import threading

    shutdown = getattr(threading, "_shutdown", None)
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    _flush()


# ---- server ---------------------------------------------------------------------------------
def _code_stamp() -> dict[str, int]:
    """mtime of every loaded module file of codeagent and of the dependencies it preloads."""
    roots = {name.split(".")[0].split(":")[0] for name in PRELOAD} | {"click"}
    stamp = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if path and (name.split(".")[0] in roots):
            try:
                stamp[path] = os.stat(path).st_mtime_ns
            except OSError:
                stamp[path] = -1
    return stamp


def _stale(stamp: dict[str, int]) -> bool:
    for path, mtime in stamp.items():
        try:
            if os.stat(path).st_mtime_ns != mtime:
                return True
        except OSError:
            return True
    return False


def _lock(file: io.TextIOBase, wait: float) -> bool:
    """Take the daemon's lock, waiting up to `wait` seconds for a stopping daemon to exit
    (a live one answers status requests: its successor gives up at once)."""
    import fcntl

    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except OSError:
            if time.monotonic() > deadline or status() is not None:
                return False
            time.sleep(0.05)


def _peer(conn: socket.socket) -> tuple[int | None, int]:
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


def _context(pid: int | str = "self") -> tuple | None:
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


def _interpreter_env(env: dict) -> dict:
    """The environment the interpreter read at start-up that a forked command would not
    re-read: PYTHON* (module paths, hash seed, UTF-8 mode...) and the locale."""
    return {k: v for k, v in env.items()
            if (k.startswith(("PYTHON", "LC_")) or k == "LANG") and k not in _ENV_APPLIED}


def _foreign(peer_pid: int | None, env: dict, context: tuple | None, interpreter: dict) -> str:
    """Why a caller cannot be served like its own process would run ('' when it can)."""
    if _interpreter_env(env) != interpreter:
        return "its PYTHON*/locale environment differs from the daemon's"
    if peer_pid is not None and context is not None and _context(peer_pid) != context:
        return "its credentials, capabilities, namespaces, cgroup or limits differ from the daemon's"
    return ""


class _Server:
    """The daemon's state: its listening socket, lock, running children and counters."""

    def __init__(self, path: str, idle_timeout: float) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        _private_dir(os.path.dirname(path))
        self.lock = open(path[:-len(".sock")] + ".lock", "a")
        if not _lock(self.lock, wait=LOCK_WAIT):
            self.lock.close()
            raise DaemonError(f"a daemon already runs on {path}")
        tmp = f"{path}.{os.getpid()}.tmp"
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        self.listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(tmp)
        self.listener.listen(64)
        os.replace(tmp, path)  # a dead daemon's socket file is replaced, never a live one's
        self.inode = os.stat(path)
        self.stamp = _code_stamp()
        self.context = _context()
        self.interpreter = _interpreter_env(dict(os.environ))
        self.children: dict[int, socket.socket] = {}
        self.info = {"pid": os.getpid(), "started": time.time(), "served": 0, "socket": path,
                     "python": sys.executable}
        self.stop_requested = False
        self.pending: dict[socket.socket, tuple[_Reader, float, int | None]] = {}  # request unread
        self.wake = os.pipe()
        for fd in self.wake:
            os.set_blocking(fd, False)

    def unlisten(self) -> None:
        """Stop taking commands: later callers find no daemon and run in-process."""
        if self.listener is None:
            return
        try:
            if os.path.samestat(os.stat(self.path), self.inode):  # not a successor's
                os.unlink(self.path)
        except OSError:
            pass
        self.listener.close()
        self.listener = None

    def run(self) -> None:
        signal.set_wakeup_fd(self.wake[1])
        signal.signal(signal.SIGCHLD, lambda *_: None)
        signal.signal(signal.SIGTERM, self._request_stop)
        signal.signal(signal.SIGINT, self._request_stop)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        last = time.monotonic()
        pending = self.pending
        try:
            while self.listener is not None or self.children:
                if self.stop_requested and self.listener is not None:
                    self.unlisten()
                    continue
                now = time.monotonic()
                for conn, (reader, since, _pid) in list(pending.items()):
                    if now - since > REQUEST_TIMEOUT:
                        _debug("request timed out")
                        del pending[conn]
                        self._drop(conn, reader)
                if (self.listener is not None and not self.children and not pending
                        and now - last > self.idle_timeout):
                    break
                watched = [self.wake[0], *pending] + ([self.listener] if self.listener else [])
                timeout = (REQUEST_TIMEOUT if pending else None if self.children
                           else max(0.0, self.idle_timeout - (now - last)))
                try:
                    ready, _, _ = select.select(watched, [], [], timeout)
                except InterruptedError:
                    continue
                if self.wake[0] in ready:
                    try:
                        while os.read(self.wake[0], 512):
                            pass
                    except BlockingIOError:
                        pass
                self.reap()
                if self.listener is not None and self.listener in ready:
                    try:
                        conn, _ = self.listener.accept()
                    except OSError:
                        continue
                    last = time.monotonic()
                    try:
                        peer_pid, peer_uid = _peer(conn)
                    except OSError:
                        peer_pid, peer_uid = None, -1
                    if peer_uid != os.getuid():
                        conn.close()
                        continue
                    conn.setblocking(False)
                    pending[conn] = (_Reader(conn), last, peer_pid)
                for conn in [c for c in ready if c in pending]:
                    reader, since, peer_pid = pending[conn]
                    try:
                        request = reader.read(with_fds=True, once=True)
                    except BlockingIOError:
                        continue
                    except (OSError, ValueError) as exc:
                        _debug(f"unreadable request: {exc!r}")
                        request = None
                    if request is _Reader.INCOMPLETE:
                        continue
                    del pending[conn]
                    if isinstance(request, dict):
                        _debug(f"request {request.get('control') or request.get('argv')}")
                    if request is None:
                        self._drop(conn, reader)
                    elif self.handle(conn, reader, request, peer_pid):
                        self.stop_requested = True
        finally:
            for conn, (reader, _since, _pid) in pending.items():
                self._drop(conn, reader)
            self.unlisten()

    def _request_stop(self, *_args: object) -> None:
        self.stop_requested = True

    @staticmethod
    def _drop(conn: socket.socket, reader: _Reader) -> None:
        for fd in reader.fds:
            os.close(fd)
        conn.close()

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is None:
                continue
            message = ({"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status)
                       else {"exit": os.waitstatus_to_exitcode(status)})
            try:
                _send(conn, message)
            except OSError:
                pass
            conn.close()

    def handle(self, conn: socket.socket, reader: _Reader, request: object,
               peer_pid: int | None = None) -> bool:
        """Serve one request; True when the daemon must stop taking commands."""
        fds = reader.fds
        conn.setblocking(True)
        conn.settimeout(REQUEST_TIMEOUT)
        try:
            if not isinstance(request, dict):
                return False
            control = request.get("control")
            if control == "status":
                _send(conn, {"status": {**self.info, "commands_running": len(self.children),
                                        "stale": _stale(self.stamp)}})
                return False
            if control == "stop":
                _send(conn, {"stopping": True})
                return True
            if _stale(self.stamp):
                _send(conn, {"stale": True})
                return True
            if len(fds) != 3:
                return False
            foreign = _foreign(peer_pid, request.get("env", {}), self.context, self.interpreter)
            if foreign:
                _send(conn, {"foreign": foreign})
                return False
            pid = os.fork()
            if pid == 0:
                self._become_child(conn, fds, request)
            self.info["served"] += 1
            conn.settimeout(None)
            _send(conn, {"running": pid})
            self.children[pid] = conn
            conn = None
            return False
        except OSError:
            return False
        finally:
            for fd in fds:
                os.close(fd)
            if conn is not None:
                conn.close()

    def _become_child(self, conn: socket.socket, fds: list[int], request: dict) -> None:
        """Drop the server's descriptors, then run the command (never returns)."""
        try:
            signal.set_wakeup_fd(-1)
            for fd in self.wake:
                os.close(fd)
            self.lock.close()
            if self.listener is not None:
                self.listener.close()
            for other in [*self.children.values(), *self.pending]:
                other.close()
        finally:
            _run_child(conn, fds, request)


def serve_forever(idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
    """Run the daemon in this process until stopped, idle for `idle_timeout` seconds, or its
    code changes on disk."""
    for name in PRELOAD:
        module, _, function = name.partition(":")
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            continue
        if function:
            getattr(loaded, function)()
    server = _Server(socket_path(), idle_timeout)
    sys.stderr.write(f"codeagent daemon {os.getpid()} listening on {server.path}\n")
    sys.stderr.flush()
    server.run()


def _run_child(conn: socket.socket, fds: list[int], request: dict) -> None:
    """In the forked child: become the caller's command, run it, exit with its status."""
    code = 1
    try:
        for s in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        for fd in set(fds) - {0, 1, 2}:
            os.close(fd)
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        os.environ.clear()
        os.environ.update(request["env"])
        _std_streams(request["encoding"], request["errors"],
                     bool(request["env"].get("PYTHONUNBUFFERED")))
        sys.argv = ["codeagent", *request["argv"]]
        _watch_caller(conn)
        try:
            code = _run_cli(request["argv"], request.get("prog") or "codeagent")
        except KeyboardInterrupt:
            _flush()
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGINT)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        _wind_down()
    finally:
        _flush()
        try:  # the caller may go now; the server's later report of this exit is then ignored
            _send(conn, {"exit": code})
        except OSError:
            pass
        os._exit(code)


def _exit_code(value: object) -> int:
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    sys.stderr.write(f"{value}\n")
    return 1


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


def _std_streams(encoding: str, errors: str, unbuffered: bool) -> None:
    """Text streams on fds 0-2 as a fresh interpreter would make them for the caller
    (`unbuffered`: its PYTHONUNBUFFERED)."""
    def text(fd: int, mode: str) -> io.TextIOWrapper:
        raw = io.FileIO(fd, mode, closefd=False)
        tty = raw.isatty()
        buffered = io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)
        return io.TextIOWrapper(buffered, encoding=encoding,
                                errors="backslashreplace" if fd == 2 else errors,
                                line_buffering=tty or fd == 2,
                                write_through=fd == 2 or (unbuffered and mode == "w"))

    sys.stdin, sys.stdout, sys.stderr = text(0, "r"), text(1, "w"), text(2, "w")
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def _watch_caller(conn: socket.socket) -> None:
    """Relay the caller's signals to this process; die with it if it goes away."""
    import threading

    conn.settimeout(None)  # the server's accept timeout must not end the watch

    def watch() -> None:
        reader = _Reader(conn)
        while True:
            try:
                message = reader.read()
            except (OSError, ValueError):
                message = None
            if message is None:
                os.kill(os.getpid(), signal.SIGKILL)
                return
            if "signal" in message:
                os.kill(os.getpid(), int(message["signal"]))

    threading.Thread(target=watch, name="codeagent-caller", daemon=True).start()
