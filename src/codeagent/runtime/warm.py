"""A warm reader per repository for searches run through the daemon.

The daemon forks a fresh child per command, so each `codeagent search` opened the index
cold: a natural-language search loads the name index and symbol table first, about 1 s on
the standard library before it answers in 30 ms. A child running `search` under the daemon
hands the request to this repository's warm reader instead: a process that keeps an
`IndexFollower` per ref (the server's long-lived reader: answers from the newest complete
manifest, tables in memory), started by the first such search, which itself runs in the
child as before. The reader's answer is printed by the child, so output and exit codes are
those of an in-process search; any failure on the way (no reader yet, a reader that went
away, an error inside it) falls back to searching in the child.

Its socket lives beside the daemon's (same private directory, same trust checks). The
reader exits when the daemon is gone, when its code changed on disk, or after IDLE_TIMEOUT.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import os
import pickle
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path

from .. import refs as refnames
from .daemon import child, protocol, trust
from .daemon.server import code_stamp, stale
from ..query.follower import IndexFollower
from ..query.index import open_store
from ..model import SearchResponse
from ..query.search import SearchRequest, search

IDLE_TIMEOUT = 15 * 60.0
CONNECT_TIMEOUT = 0.5
ANSWER_TIMEOUT = 30.0
_LEN = struct.Struct("!I")  # the daemon protocol's frame (protocol.send), carrying a pickle


def _key(root: Path, store: Path) -> str:
    here = os.path.dirname(os.path.realpath(__file__))
    raw = f"{os.path.realpath(root)}\0{os.path.realpath(store)}\0{sys.prefix}\0{here}"
    return hashlib.sha1(raw.encode()).hexdigest()[:16]


def socket_path(root: Path, store: Path) -> str:
    return os.path.join(protocol.socket_dir(), f"q-{_key(root, store)}.sock")


def _send(sock: socket.socket, data: bytes) -> None:
    sock.sendall(_LEN.pack(len(data)) + data)


def _recv(sock: socket.socket) -> bytes | None:
    buf = b""
    while len(buf) < _LEN.size or len(buf) < _LEN.size + _LEN.unpack_from(buf)[0]:
        chunk = sock.recv(1 << 20)
        if not chunk:
            return None
        buf += chunk
    return buf[_LEN.size:]


def search_warm(repo: Path | None, store_dir: Path | None, ref: str | None,
                request: SearchRequest) -> SearchResponse | None:
    """The warm reader's answer to `request`, or None: search in this process (and, under the
    daemon, start the reader for the next search)."""
    if not child.IN_CHILD:  # only under the daemon is a warm reader worth its start
        return None
    store, root = open_store(repo, store_dir)
    if root is None:
        return None
    ref_name, _ = refnames.resolve(store, ref, root)
    return ask_warm(root, store.root, ref_name, request)


def ask_warm(root: Path, store: Path, ref_name: str | None,
             request: SearchRequest) -> SearchResponse | None:
    """search_warm for a caller that found the store and ref itself (the hook finds them
    without running git): the reader's answer, or None (and the reader started)."""
    if not child.IN_CHILD:
        return None
    path = socket_path(root, store)
    answer = _ask(path, {"ref": ref_name, "request": dataclasses.asdict(request)})
    if answer is None:
        _start(root, store, ref_name)
    protocol.debug(f"search {'answered by the warm reader' if answer else 'in the child'} ({path})")
    return answer


def _ask(path: str, message: dict) -> SearchResponse | None:
    if not os.path.exists(path) or not trust.trusted(path):
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(CONNECT_TIMEOUT)
            sock.connect(path)
            sock.settimeout(ANSWER_TIMEOUT)
            protocol.send(sock, message)
            data = _recv(sock)
    except OSError:
        return None
    if not data:
        return None
    status, value = pickle.loads(data)  # our own user's process, behind the trust checks
    return value if status == "ok" else None


def _start(root: Path, store: Path, ref_name: str) -> None:
    """Start the reader, detached; it warms up before it listens (the lock keeps it single)."""
    try:
        subprocess.Popen([sys.executable, "-m", "codeagent.runtime.warm", str(root), str(store), ref_name],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, close_fds=True)
    except OSError:
        pass


class Reader:
    """The warm reader's state: a follower per ref name."""

    def __init__(self, root: Path, store: Path) -> None:
        self.root, self.store = root, store
        self.followers: dict = {}

    def answer(self, message: dict) -> tuple[str, object]:
        ref = message["ref"]
        follower = self.followers.get(ref)
        if follower is None:
            follower = self.followers[ref] = IndexFollower(self.root, self.store, ref=ref)
        fields = dict(message["request"])
        fields["roles"] = tuple(fields.get("roles") or ())
        request = SearchRequest(**fields)
        try:
            with follower.view() as view:
                return "ok", search(view, request)
        except Exception as exc:  # the child searches itself and reports it as usual
            return "error", repr(exc)

    def warm(self, ref: str) -> None:
        for query in ("warm up the reader", "warm_up"):
            self.answer({"ref": ref, "request": dataclasses.asdict(SearchRequest(query))})


def serve(root: Path, store: Path, ref: str) -> None:
    path = socket_path(root, store)
    protocol.private_dir(os.path.dirname(path))
    lock = open(path + ".lock", "a+")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return  # another reader is starting or serving
    reader = Reader(root, store)
    reader.warm(ref)
    stamp = code_stamp()
    daemon_socket = protocol.socket_path()
    if os.path.exists(path):
        os.unlink(path)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(path)
        sock.listen(16)
        sock.settimeout(2.0)
        last = time.monotonic()
        try:
            while time.monotonic() - last < IDLE_TIMEOUT:
                if not os.path.exists(daemon_socket) or stale(stamp):
                    break
                try:
                    conn, _ = sock.accept()
                except socket.timeout:
                    continue
                last = time.monotonic()
                with conn:
                    _serve_one(reader, conn)
        finally:
            if os.path.exists(path):
                os.unlink(path)


def _serve_one(reader: Reader, conn: socket.socket) -> None:
    try:
        conn.settimeout(protocol.REQUEST_TIMEOUT)
        if trust.peer(conn)[1] != os.getuid():
            return
        message = protocol.Reader(conn).read()
        if not isinstance(message, dict):
            return
        conn.settimeout(ANSWER_TIMEOUT)
        _send(conn, pickle.dumps(reader.answer(message)))
    except (OSError, ValueError, TypeError, KeyError):
        pass


if __name__ == "__main__":
    serve(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3])
