"""The server: preloads what commands import, listens on the socket, forks a child per
command (child.py) and reports its exit; stops when idle, asked, or its code changes on disk."""

from __future__ import annotations

import importlib
import io
import os
import select
import signal
import socket
import sys
import time

from .child import run_child
from .client import status
from .protocol import (DEFAULT_IDLE_TIMEOUT, REQUEST_TIMEOUT, DaemonError, Reader, debug,
                       private_dir, send, socket_path)
from .trust import foreign, interpreter_env, peer, process_context

LOCK_WAIT = 30.0  # seconds a new daemon waits for a stopping one to finish its commands
# Imported (or, for "module:function", called) by the server before it forks children: what
# a build or a query would load, with grammars and queries warmed by parsing a line of each.
# Named rather than imported: runtime/ imports no build side (tests/core/test_layering.py)
# and the daemon's client side runs on the standard library alone.
PRELOAD = (
    "codeagent.cli", "numpy", "numpy.ma", "pyarrow", "pyarrow.compute", "pyarrow.parquet",
    "duckdb", "tree_sitter", "tree_sitter_language_pack", "codeagent.cli.build",
    "codeagent.indexer.build", "codeagent.indexer.shard", "codeagent.indexer.assemble.pipeline",
    "codeagent.cli.search", "codeagent.query.search", "codeagent.runtime.warm",
    "codeagent.cli.context", "codeagent.query.hooks",  # the agents' hooks: 10 ms a call
    "codeagent.indexer.parse:warm",
)


def code_stamp() -> dict[str, int]:
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


def stale(stamp: dict[str, int]) -> bool:
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


class _Server:
    """The daemon's state: its listening socket, lock, running children and counters."""

    def __init__(self, path: str, idle_timeout: float) -> None:
        self.path = path
        self.idle_timeout = idle_timeout
        private_dir(os.path.dirname(path))
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
        self.stamp = code_stamp()
        self.context = process_context()
        self.interpreter = interpreter_env(dict(os.environ))
        self.children: dict[int, socket.socket] = {}
        self.info = {"pid": os.getpid(), "started": time.time(), "served": 0, "socket": path,
                     "python": sys.executable}
        self.stop_requested = False
        self.last = time.monotonic()  # of the last connection: the idle timeout counts from it
        self.pending: dict[socket.socket, tuple[Reader, float, int | None]] = {}  # request unread
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
        self.last = time.monotonic()
        pending = self.pending
        try:
            while self.listener is not None or self.children:
                if self.stop_requested and self.listener is not None:
                    self.unlisten()
                    continue
                now = time.monotonic()
                self._expire(now)
                if (self.listener is not None and not self.children and not pending
                        and now - self.last > self.idle_timeout):
                    break
                watched = [self.wake[0], *pending] + ([self.listener] if self.listener else [])
                timeout = (REQUEST_TIMEOUT if pending else None if self.children
                           else max(0.0, self.idle_timeout - (now - self.last)))
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
                    self._accept()
                self._serve_ready([c for c in ready if c in pending])
        finally:
            for conn, (reader, _since, _pid) in pending.items():
                self._drop(conn, reader)
            self.unlisten()

    def _expire(self, now: float) -> None:
        """Drop connections that took longer than REQUEST_TIMEOUT to send their request."""
        for conn, (reader, since, _pid) in list(self.pending.items()):
            if now - since > REQUEST_TIMEOUT:
                debug("request timed out")
                del self.pending[conn]
                self._drop(conn, reader)

    def _accept(self) -> None:
        """Take a connection of our own user; its request is read when it arrives."""
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        self.last = time.monotonic()
        try:
            peer_pid, peer_uid = peer(conn)
        except OSError:
            peer_pid, peer_uid = None, -1
        if peer_uid != os.getuid():
            conn.close()
            return
        conn.setblocking(False)
        self.pending[conn] = (Reader(conn), self.last, peer_pid)

    def _serve_ready(self, ready: list[socket.socket]) -> None:
        """Read what the `ready` pending connections sent; serve each complete request."""
        for conn in ready:
            reader, since, peer_pid = self.pending[conn]
            try:
                request = reader.read(with_fds=True, once=True)
            except BlockingIOError:
                continue
            except (OSError, ValueError) as exc:
                debug(f"unreadable request: {exc!r}")
                request = None
            if request is Reader.INCOMPLETE:
                continue
            del self.pending[conn]
            if isinstance(request, dict):
                debug(f"request {request.get('control') or request.get('argv')}")
            if request is None:
                self._drop(conn, reader)
            elif self.handle(conn, reader, request, peer_pid):
                self.stop_requested = True

    def _request_stop(self, *_args: object) -> None:
        self.stop_requested = True

    @staticmethod
    def _drop(conn: socket.socket, reader: Reader) -> None:
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
                send(conn, message)
            except OSError:
                pass
            conn.close()

    def handle(self, conn: socket.socket, reader: Reader, request: object,
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
                send(conn, {"status": {**self.info, "commands_running": len(self.children),
                                        "stale": stale(self.stamp)}})
                return False
            if control == "stop":
                send(conn, {"stopping": True})
                return True
            if stale(self.stamp):
                send(conn, {"stale": True})
                return True
            if len(fds) != 3:
                return False
            why = foreign(peer_pid, request.get("env", {}), self.context, self.interpreter)
            if why:
                send(conn, {"foreign": why})
                return False
            pid = os.fork()
            if pid == 0:
                self._become_child(conn, fds, request)
            self.info["served"] += 1
            conn.settimeout(None)
            send(conn, {"running": pid})
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
            run_child(conn, fds, request)


def preload() -> None:
    """Import PRELOAD (and call its functions): what a command forked from here would load."""
    for name in PRELOAD:
        module, _, function = name.partition(":")
        try:
            loaded = importlib.import_module(module)
        except ImportError:
            continue
        if function:
            getattr(loaded, function)()


def serve_forever(idle_timeout: float = DEFAULT_IDLE_TIMEOUT) -> None:
    """Run the daemon in this process until stopped, idle for `idle_timeout` seconds, or its
    code changes on disk."""
    preload()
    server = _Server(socket_path(), idle_timeout)
    sys.stderr.write(f"codeagent daemon {os.getpid()} listening on {server.path}\n")
    sys.stderr.flush()
    server.run()


