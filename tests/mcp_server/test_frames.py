"""Malformed and oversized stdio frames: answered (or ignored) without stopping the server,
and an oversized frame never buffered whole."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

import anyio
import pytest

from codeagent.mcp_server.stdio import FrameReader, classify_frame

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


def test_classify_frame():
    text, reply = classify_frame(json.dumps(INIT).encode())
    assert text is not None and reply is None
    _, reply = classify_frame(b"{not json")
    assert reply.message.error.code == -32700 and reply.message.id is None
    _, reply = classify_frame(b'{"jsonrpc":"2.0","id":7,"method":5}')
    assert reply.message.error.code == -32600 and reply.message.id == 7
    _, reply = classify_frame(b'[{"jsonrpc":"2.0","id":1,"method":"ping"}]')
    assert reply.message.error.code == -32600
    assert classify_frame(b'{"jsonrpc":"2.0","method":7}') == (None, None)
    _, reply = classify_frame(b"\xff\xfe{}")
    assert reply.message.error.code == -32700
    deep = b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}}"
    _, reply = classify_frame(deep)
    assert reply.message.error.code == -32600 and reply.message.id == 9


@pytest.mark.parametrize("rid", ["[1]", '{"a":1}', "1.5", "null", "true", "false"])
def test_a_request_with_an_impossible_id_is_answered_invalid_with_a_null_id(rid):
    """JSON-RPC: an id is a string or an integer. One that is an object, a list, a fraction,
    a boolean or null is an invalid request (-32600, answered with id null), not a
    notification left unanswered."""
    text, reply = classify_frame(b'{"jsonrpc":"2.0","id":%s,"method":"ping"}' % rid.encode())
    assert text is None and reply is not None
    assert reply.message.error.code == -32600 and reply.message.id is None


def test_a_notification_mentioning_id_in_its_params_passes():
    frame = b'{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"id",' \
            b'"progress":1,"message":"\\"id\\": 5"}}'
    text, reply = classify_frame(frame)
    assert reply is None and text == frame.decode()


@pytest.mark.anyio
async def test_an_oversized_frame_keeps_an_id_written_after_its_params():
    r, w = os.pipe()
    big = b'{"jsonrpc":"2.0","method":"ping","params":{"x":"' + b"a" * 200_000 + b'"},"id":77}\n'

    def writer() -> None:
        with os.fdopen(w, "wb") as fh:
            fh.write(big)

    threading.Thread(target=writer).start()
    reader = FrameReader(r, 64 * 1024)
    replies = []

    async def reply(msg) -> None:
        replies.append(msg.message)

    reader.reply = reply
    assert [f async for f in reader] == []
    os.close(r)
    assert [(m.id, m.error.code) for m in replies] == [(77, -32600)]


@pytest.mark.anyio
async def test_frame_reader_bounds_memory_and_recovers():
    r, w = os.pipe()
    max_frame = 64 * 1024
    big = b'{"jsonrpc":"2.0","id":"big","method":"ping","params":{"x":"' + b"a" * (max_frame * 20)

    def writer() -> None:
        with os.fdopen(w, "wb") as fh:
            fh.write(b"garbage\n")
            fh.write(big + b'"}}\n')
            fh.write(b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n')

    threading.Thread(target=writer).start()
    reader = FrameReader(r, max_frame)
    replies = []

    async def reply(msg) -> None:
        replies.append(msg.message)

    reader.reply = reply
    frames = [f async for f in reader]
    os.close(r)
    assert frames == ['{"jsonrpc":"2.0","id":2,"method":"ping"}']
    assert [m.error.code for m in replies] == [-32700, -32600]
    assert replies[1].id == "big" and "limit" in replies[1].error.message


def _read_until(proc, want_id, seen: list) -> dict:
    while True:
        line = proc.stdout.readline()
        assert line, f"server closed stdout; stderr: {proc.stderr.read()[-2000:]}"
        msg = json.loads(line)  # anything on stdout must be protocol JSON
        seen.append(msg)
        if msg.get("id") == want_id and ("result" in msg or "error" in msg):
            return msg


def _peak_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc for memory use")
def test_raw_malformed_frames_against_the_real_server(indexed_repo):
    proc = subprocess.Popen([sys.executable, "-m", "codeagent", "serve", "--repo", str(indexed_repo.path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: list = []
    try:
        def send(raw: bytes) -> None:
            proc.stdin.write(raw)
            proc.stdin.flush()

        send(json.dumps(INIT).encode() + b"\n")
        _read_until(proc, 1, seen)
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        send(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_directory","arguments":{}}}\n')
        _read_until(proc, 2, seen)
        baseline = _peak_rss_kb(proc.pid)
        send(b"\x00\x01\x02 not json at all\n")
        send(b'{"jsonrpc": "2.0", "id": 3, "method": ')
        send(b"\n")
        send(b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"oops"}\n')
        chunk = b"x" * (1024 * 1024)
        send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"')
        for _ in range(40):  # a 40 MiB frame: ten times the limit
            send(chunk)
        send(b'"}}\n')
        assert _read_until(proc, 5, seen)["error"]["code"] == -32600
        send(b'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}\n')
        answer = _read_until(proc, 6, seen)
        assert "A demo repository" in answer["result"]["structuredContent"]["content"]
        codes = {m.get("id"): m["error"]["code"] for m in seen if "error" in m}
        assert codes[None] == -32700 and codes[4] == -32600
        growth_mb = (_peak_rss_kb(proc.pid) - baseline) / 1024
        assert growth_mb < 30, f"peak memory grew {growth_mb:.0f} MiB for a 40 MiB frame"
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    assert proc.returncode == 0


@pytest.mark.parametrize("version,expected", [("2024-11-05", "2024-11-05"), ("2025-06-18", "2025-06-18"),
                                              ("1999-01-01", None)])
def test_protocol_version_negotiation(sample_repo, version, expected):
    init = {**INIT, "params": {**INIT["params"], "protocolVersion": version}}
    proc = subprocess.run([sys.executable, "-m", "codeagent", "serve", "--repo", str(sample_repo.path)],
                          input=json.dumps(init).encode() + b"\n", capture_output=True, timeout=60)
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(replies) == 1 and proc.returncode == 0
    negotiated = replies[0]["result"]["protocolVersion"]
    assert negotiated == (expected or negotiated) and negotiated >= "2024-11-05"


def _frames_of(chunks: list[bytes], max_frame: int) -> tuple[list[str], list[int]]:
    r, w = os.pipe()

    def writer() -> None:
        with os.fdopen(w, "wb", buffering=0) as fh:
            for c in chunks:
                fh.write(c)

    t = threading.Thread(target=writer)
    t.start()
    reader = FrameReader(r, max_frame)
    codes: list[int] = []

    async def reply(msg) -> None:
        codes.append(msg.message.error.code)

    reader.reply = reply

    async def collect() -> list[str]:
        return [f async for f in reader]

    frames = anyio.run(collect)
    t.join()
    os.close(r)
    return frames, codes


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_MESSAGES = st.one_of(
    st.integers(1, 10**6).map(lambda i: json.dumps({"jsonrpc": "2.0", "id": i, "method": "ping"})),
    st.text(alphabet="abc{}[]\"", max_size=30).filter(lambda s: "\n" not in s and s.strip()),
    st.integers(300, 600).map(lambda n: json.dumps({"jsonrpc": "2.0", "id": "big", "method": "x" * n})),
)


@given(st.lists(_MESSAGES, max_size=8), st.lists(st.integers(1, 200), min_size=1, max_size=20))
@settings(max_examples=60, deadline=None)
def test_frames_do_not_depend_on_how_the_stream_is_cut(messages, cuts):
    stream = "".join(m + "\n" for m in messages).encode()
    chunks, pos = [], 0
    for c in cuts * (len(stream) // max(sum(cuts), 1) + 1):
        if pos >= len(stream):
            break
        chunks.append(stream[pos:pos + c])
        pos += c
    chunks.append(stream[pos:])
    whole = _frames_of([stream], 256)
    assert _frames_of(chunks, 256) == whole
    small = [m for m in messages if len(m.encode()) <= 256 and m.startswith('{"jsonrpc"')]
    assert whole[0] == small
    assert len(whole[0]) + len(whole[1]) == len(messages)  # each one passed on or answered
