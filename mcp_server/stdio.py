"""The stdio transport with bounded frames, around the SDK's `stdio_server`.

The SDK reads stdin line by line with no size limit and silently drops lines it cannot parse.
`FrameReader` reads the raw descriptor in fixed chunks and keeps at most `max_frame` bytes of
one line: a longer line is discarded as it streams in (memory stays bounded) and answered with
an error. A line that is not JSON gets a parse error (id null); JSON that is not a valid
JSON-RPC message gets an invalid-request error carrying its id when it has one. Only valid
messages reach the SDK, so a malformed frame never stops the server.

Pipes are read and written without a worker thread (non-blocking descriptors polled by the
event loop): a thread hop per read, write and flush cost three thread wake-ups per request,
which on a loaded machine was most of a symbol lookup's round trip. Terminals and files keep
blocking I/O in a worker thread (a non-blocking flag would leak to the shell's terminal).
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

MAX_FRAME = 4 * 1024 * 1024
READ_CHUNK = 64 * 1024
_ID_IN_HEAD = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')
_ID_AT_END = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})\s*\}\s*$')
TAIL = 4096  # bytes of a discarded frame's end kept to read its id

Reply = Callable[[SessionMessage], Awaitable[None]]


def error_message(request_id: str | int | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id,
                                             error=types.ErrorData(code=code, message=message)))


def classify_frame(line: bytes) -> tuple[str | None, SessionMessage | None]:
    """(text to pass on, or None; error reply, or None) for one complete frame. Pure."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None, error_message(None, types.PARSE_ERROR, "Parse error: frame is not UTF-8")
    try:
        msg = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
        if not (isinstance(msg, types.JSONRPCNotification) and b'"id"' in line):
            return text, None
    except Exception:
        pass
    try:
        raw = json.loads(text)
    except RecursionError:  # a few KB of [[[[... must not take the server down
        return None, error_message(_head_id(line[:4096]), types.INVALID_REQUEST,
                                   "Invalid request: JSON nested too deeply")
    except ValueError:
        return None, error_message(None, types.PARSE_ERROR, "Parse error: frame is not JSON")
    if isinstance(raw, list):
        return None, error_message(None, types.INVALID_REQUEST, "Invalid request: batches are not supported")
    if isinstance(raw, dict) and "method" in raw and "id" not in raw:
        if text is not None and _is_notification(raw):
            return text, None  # a notification ("id" only inside its params)
        return None, None  # a malformed notification: JSON-RPC says never answer one
    rid = raw.get("id") if isinstance(raw, dict) else None
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        # an id that is an object, a list, a fraction, true or null: invalid, answered with
        # a null id (the client cannot be answered under an id it cannot have sent)
        return None, error_message(None, types.INVALID_REQUEST,
                                   "Invalid request: `id` must be a string or an integer")
    return None, error_message(rid, types.INVALID_REQUEST, "Invalid request: not a valid JSON-RPC 2.0 message")


def _is_notification(raw: dict) -> bool:
    try:
        types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
        return True
    except Exception:
        return False


def _head_id(head: bytes) -> str | int | None:
    """The request id written near the start of a frame that cannot be parsed whole."""
    m = _ID_IN_HEAD.search(head)
    try:
        return json.loads(m.group(1)) if m else None
    except ValueError:
        return None


def _tail_id(tail: bytes) -> str | int | None:
    """The request id written at the end of a frame (after its params), if readable."""
    found = list(_ID_AT_END.finditer(tail))
    try:
        return json.loads(found[-1].group(1)) if found else None
    except ValueError:
        return None


def _oversized_reply(head: bytes, max_frame: int, tail: bytes = b"") -> SessionMessage:
    rid = _head_id(head)
    return error_message(rid if rid is not None else _tail_id(tail), types.INVALID_REQUEST,
                         f"Invalid request: frame exceeds the {max_frame}-byte limit and was discarded")


class FrameReader:
    """Newline-delimited frames from a file descriptor, each at most `max_frame` bytes."""

    def __init__(self, fd: int, max_frame: int = MAX_FRAME) -> None:
        self.fd = fd
        self.max_frame = max_frame
        self.reply: Reply | None = None
        self.polled = _make_polled(fd)

    async def _send(self, msg: SessionMessage | None) -> None:
        if msg is not None and self.reply is not None:
            await self.reply(msg)

    async def _read(self) -> bytes:
        if not self.polled:
            return await anyio.to_thread.run_sync(os.read, self.fd, READ_CHUNK, abandon_on_cancel=True)
        while True:
            try:
                return os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)

    async def __aiter__(self) -> AsyncIterator[str]:
        buf = bytearray()
        head: bytes | None = None  # set while discarding an oversized frame
        tail = b""  # the discarded frame's last bytes
        while True:
            chunk = await self._read()
            if not chunk:
                break
            for i, piece in enumerate(chunk.split(b"\n")):
                if i > 0:  # a newline ended the previous piece's frame
                    if head is not None:
                        await self._send(_oversized_reply(head, self.max_frame, tail))
                        head, tail = None, b""
                    elif buf.strip():
                        text, reply = classify_frame(bytes(buf))
                        await self._send(reply)
                        if text is not None:
                            yield text
                    buf.clear()
                if head is not None:
                    tail = (tail + piece)[-TAIL:]
                    continue
                if len(buf) + len(piece) > self.max_frame:
                    head = bytes(buf[:4096]) if buf else piece[:4096]
                    tail = (bytes(buf[-TAIL:]) + piece)[-TAIL:]
                    buf.clear()
                else:
                    buf += piece
        if head is None and buf.strip():
            text, reply = classify_frame(bytes(buf))
            await self._send(reply)
            if text is not None:
                yield text


def _make_polled(fd: int) -> bool:
    """Switch a pipe or socket to non-blocking I/O for the event loop; False for anything
    else (terminal, file) or on Windows, which then keeps blocking I/O in a worker thread."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    os.set_blocking(fd, False)
    return True


class FrameWriter:
    """Text frames written to a file descriptor (the `stdout` the SDK's stdio_server takes)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.polled = _make_polled(fd)

    async def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        while data:
            if not self.polled:
                data = data[await anyio.to_thread.run_sync(os.write, self.fd, data):]
                continue
            try:
                data = data[os.write(self.fd, data):]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)

    async def flush(self) -> None:
        """Nothing is buffered: `write` returns once every byte is in the descriptor."""


def take_stdout() -> int:
    """A private duplicate of fd 1; fd 1 itself then writes to stderr, so stray prints (ours
    or a library's) can never tear a protocol frame."""
    private = os.dup(1)
    os.set_inheritable(private, False)
    os.dup2(2, 1)
    return private


def take_stdin() -> int:
    """A private duplicate of fd 0; fd 0 itself then reads /dev/null, so child processes
    (git, builds) can never consume protocol bytes."""
    private = os.dup(0)
    os.set_inheritable(private, False)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    return private


async def serve_stdio(server, max_frame: int = MAX_FRAME,
                      beside: Callable[[Reply], Awaitable[None]] | None = None) -> None:
    """Run a low-level MCP `Server` over this process's stdin/stdout with bounded frames;
    `beside(send)` runs along (cancelled when the client goes) and may send notifications."""
    from mcp.server.stdio import stdio_server

    reader = FrameReader(take_stdin(), max_frame)
    writer = FrameWriter(take_stdout())
    async with stdio_server(stdin=reader, stdout=writer) as (read_stream, write_stream):  # type: ignore[arg-type]
        replies = write_stream.clone()
        reader.reply = replies.send
        try:
            async with anyio.create_task_group() as tg:
                if beside is not None:
                    tg.start_soon(beside, replies.send)
                await server.run(read_stream, write_stream, server.create_initialization_options())
                tg.cancel_scope.cancel()
        finally:
            replies.close()
