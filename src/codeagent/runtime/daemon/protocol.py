"""The daemon's wire: where its socket lives, and messages (4-byte length + JSON, with
file descriptors alongside) between a caller and the server. Standard library only."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import struct
import sys

DEFAULT_IDLE_TIMEOUT = 3 * 3600.0


REQUEST_TIMEOUT = 5.0  # seconds a connection may take to send its request


_LEN = struct.Struct("!I")


SUPPORTED = hasattr(socket, "send_fds") and hasattr(os, "fork")  # POSIX: descriptors travel


class DaemonError(Exception):
    pass


def socket_dir() -> str:
    base = os.environ.get("CODEAGENT_DAEMON_DIR")
    if not base:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = (os.path.join(runtime, "codeagent") if runtime
                else os.path.join("/tmp", f"codeagent-{os.getuid()}"))
    return base


def socket_path() -> str:
    """The socket of this user's daemon for this Python installation of codeagent."""
    # the codeagent package (runtime/daemon/ is two folders below it), as hook_runner.py finds it
    here = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    python = os.path.realpath(sys.executable)  # `python`, `python3` and the entry script agree
    key = hashlib.sha1(f"{sys.prefix}\0{python}\0{here}".encode()).hexdigest()[:12]
    return os.path.join(socket_dir(), f"d-{key}.sock")


def private_dir(path: str) -> None:
    """Create `path` 0700, or check that an existing one is ours and private."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    st = os.stat(path)
    if st.st_uid != os.getuid():
        raise DaemonError(f"{path} belongs to another user; set CODEAGENT_DAEMON_DIR")
    if st.st_mode & 0o077:
        os.chmod(path, 0o700)


def send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = json.dumps(message).encode()
    payload = _LEN.pack(len(data)) + data
    if fds:
        sent = socket.send_fds(sock, [payload], fds)
        if sent < len(payload):  # (never send b"": the peer may have answered and closed)
            sock.sendall(payload[sent:])
    else:
        sock.sendall(payload)


class Reader:
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


def debug(text: str) -> None:
    if os.environ.get("CODEAGENT_DAEMON_DEBUG") == "1":
        sys.stderr.write(f"codeagent-daemon[{os.getpid()}]: {text}\n")
