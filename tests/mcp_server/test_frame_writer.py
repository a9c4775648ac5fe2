"""Frames written to a non-blocking pipe arrive whole and in order, however slowly the other
end reads; a regular file keeps blocking writes."""

from __future__ import annotations

import os
import threading
import time

import anyio

from codeagent.mcp_server.stdio import FrameReader, FrameWriter


def test_frames_larger_than_the_pipe_buffer_arrive_whole_and_in_order():
    r, w = os.pipe()
    frames = [f'{{"id": {i}, "data": "{chr(97 + i % 26) * (i * 9000)}"}}\n' for i in range(12)]
    received = bytearray()

    def slow_reader() -> None:
        while chunk := os.read(r, 4096):
            received.extend(chunk)
            time.sleep(0.0005)

    t = threading.Thread(target=slow_reader)
    t.start()
    writer = FrameWriter(w)
    assert writer.polled and not os.get_blocking(w)

    async def write_all() -> None:
        for f in frames:
            await writer.write(f)
            await writer.flush()

    anyio.run(write_all)
    os.close(w)
    t.join(10)
    os.close(r)
    assert received.decode() == "".join(frames)


def test_reader_on_a_polled_pipe_waits_for_data_without_a_thread():
    r, w = os.pipe()
    reader = FrameReader(r)
    assert reader.polled

    def late_writer() -> None:
        time.sleep(0.2)
        os.write(w, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        os.close(w)

    threading.Thread(target=late_writer).start()

    async def collect() -> list[str]:
        return [f async for f in reader]

    assert anyio.run(collect) == ['{"jsonrpc":"2.0","id":1,"method":"ping"}']
    os.close(r)


def test_regular_file_keeps_blocking_io(tmp_path):
    path = tmp_path / "out.jsonl"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    writer = FrameWriter(fd)
    assert not writer.polled and os.get_blocking(fd)
    anyio.run(writer.write, '{"id": 1}\n')
    os.close(fd)
    assert path.read_text() == '{"id": 1}\n'
