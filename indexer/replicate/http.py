"""A read-only remote over http(s): plain GET against a static file server.

Serve a directory remote with any static server (nginx, `python -m http.server`, an S3
bucket website). Each thread keeps one keep-alive connection. A token in
CODEAGENT_REMOTE_TOKEN is sent as `Authorization: Bearer ...`.
"""

from __future__ import annotations

import http.client
import os
import socket
import threading
from urllib.parse import quote, urlsplit

from ...errors import InvalidParameter, RemoteError

TIMEOUT = 60.0


class _Connection(http.client.HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # many small GETs


class _TLSConnection(http.client.HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class HttpBackend:
    writable = False

    def __init__(self, url: str, *, timeout: float = TIMEOUT) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidParameter(f"not an http(s) URL: {url!r}")
        self.label = url
        self.scheme = parts.scheme
        self.netloc = parts.netloc
        self.base = parts.path.rstrip("/")
        self.timeout = timeout
        self.headers = {"User-Agent": "codeagent", "Accept-Encoding": "identity"}
        token = os.environ.get("CODEAGENT_REMOTE_TOKEN")
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()
        self._all: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    def _conn(self) -> http.client.HTTPConnection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            cls = _TLSConnection if self.scheme == "https" else _Connection
            conn = cls(self.netloc, timeout=self.timeout)
            self._local.conn = conn
            with self._lock:
                self._all.append(conn)
        return conn

    def _request(self, method: str, key: str) -> tuple[int, bytes]:
        conn = self._conn()
        try:
            conn.request(method, f"{self.base}/{quote(key)}", headers=self.headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.will_close:
                conn.close()
            return resp.status, body
        except (OSError, http.client.HTTPException) as exc:
            conn.close()
            raise RemoteError(f"{method} {key} from {self.label} failed: {exc!r}",
                              hint="check the network and retry; verified objects are kept") from exc

    def read(self, key: str) -> bytes | None:
        status, body = self._request("GET", key)
        if status == 200:
            return body
        if status in (404, 410):
            return None
        raise RemoteError(f"GET {key} from {self.label} answered HTTP {status}",
                          hint="check the URL and the server's access rules"
                          if status in (401, 403) else "retry later")

    def exists(self, key: str) -> bool:
        status, _ = self._request("HEAD", key)
        if status in (200, 404, 410):
            return status == 200
        raise RemoteError(f"HEAD {key} from {self.label} answered HTTP {status}")

    def write(self, key: str, data: bytes) -> None:
        raise RemoteError(f"{self.label} is read-only (http remotes are served, not written)")

    def list(self, prefix: str) -> None:
        return None

    def close(self) -> None:
        with self._lock:
            for conn in self._all:
                conn.close()
            self._all.clear()
