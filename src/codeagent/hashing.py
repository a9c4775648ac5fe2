"""blake3 content hashes: the names of every object in the store."""

from __future__ import annotations

from typing import BinaryIO

import blake3

HASH_HEX_LEN = 64


def hash_bytes(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def hash_stream(stream: BinaryIO, chunk_size: int = 1 << 20) -> str:
    h = blake3.blake3()
    while True:
        block = stream.read(chunk_size)
        if not block:
            return h.hexdigest()
        h.update(block)


def hash_parts(*parts: str | bytes) -> str:
    """Hash of a tuple of fields, unambiguous because each part is length-prefixed."""
    buf = bytearray()
    for part in parts:
        b = part.encode("utf-8") if isinstance(part, str) else part
        buf += len(b).to_bytes(8, "little")
        buf += b
    return blake3.blake3(buf).hexdigest()


def short_id(*parts: str | bytes, length: int = 16) -> str:
    return hash_parts(*parts)[:length]


def is_object_id(text: str) -> bool:
    return len(text) == HASH_HEX_LEN and not text.strip("0123456789abcdef")
