"""A real HTTP server on 127.0.0.1 serving a directory remote, with injectable faults.

`FaultPlan.faults[object_id]` is a list of faults applied to successive GETs of that object
("truncate", "flip", "wrong", "abort"; "always:<fault>" repeats forever); `fail_after`
makes every object GET after the Nth abort mid-transfer (an interrupted sync).
"""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class FaultPlan:
    faults: dict[str, list[str]] = field(default_factory=dict)
    fail_after: int | None = None
    delay: float = 0.0  # seconds before each object GET (slow network)
    bytes_served: int = 0
    object_gets: list[str] = field(default_factory=list)  # ids whose full, good bytes were sent
    requests: Counter = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.faults.clear()
            self.fail_after = None
            self.bytes_served = 0
            self.object_gets.clear()
            self.requests.clear()

    def next_fault(self, object_id: str) -> str | None:
        with self.lock:
            self.requests[object_id] += 1
            if self.fail_after is not None and len(self.object_gets) >= self.fail_after:
                return "abort"
            queue = self.faults.get(object_id)
            if not queue:
                return None
            if queue[0].startswith("always:"):
                return queue[0].split(":", 1)[1]
            return queue.pop(0)


def _damage(fault: str, data: bytes, root: Path, object_id: str) -> bytes:
    if fault == "truncate":
        return data[: len(data) // 2]
    if fault == "flip":
        i = len(data) // 2
        return data[:i] + bytes([data[i] ^ 0x04]) + data[i + 1:]
    if fault == "wrong":
        for other in sorted((root / "objects").glob("*/*")):
            if other.name != object_id:
                return other.read_bytes()
    return data


class FaultyHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, like a real server

    def __init__(self, *args, plan: FaultPlan, **kwargs) -> None:
        self.plan = plan
        super().__init__(*args, **kwargs)

    def log_message(self, *args) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_GET(self) -> None:
        parts = self.path.split("?")[0].strip("/").split("/")
        path = Path(self.directory).joinpath(*parts)
        if not path.is_file():
            self.send_error(404)
            return
        data = path.read_bytes()
        if parts[0] == "objects" and self.plan.delay:
            time.sleep(self.plan.delay)
        fault = self.plan.next_fault(parts[-1]) if parts[0] == "objects" else None
        body = _damage(fault, data, Path(self.directory), parts[-1]) if fault else data
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if fault == "abort":
            body = body[: len(body) // 3]
            self.close_connection = True
        self.wfile.write(body)
        with self.plan.lock:
            self.plan.bytes_served += len(body)
            if parts[0] == "objects" and fault is None:
                self.plan.object_gets.append(parts[-1])


@contextmanager
def serve(directory: Path, plan: FaultPlan | None = None):
    """Yield (base URL, plan) for an HTTP server on an ephemeral port serving `directory`."""
    plan = plan or FaultPlan()
    handler = partial(FaultyHandler, plan=plan, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", plan
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
