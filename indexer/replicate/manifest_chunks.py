"""Manifest delta transfer: a manifest's bytes cut into content-defined chunks.

Two manifests of nearby commits share almost every file entry, but each is one object, so
a branch switch would download the whole new manifest (about 300 bytes per file). Cutting
the canonical bytes before some object ids (those whose id starts with a chosen bit
pattern: content-defined, so an edit moves only nearby cuts) yields chunks that the
manifests a client already has mostly contain. The remote keeps a chunk list per
manifest (`manifests/<id>`); a client fetches only chunks it cannot cut from its own
manifests, then checks that the joined bytes hash to the manifest id.
"""

from __future__ import annotations

import json
import re

from ...errors import RemoteError
from ...hashing import hash_bytes, is_object_id

CHUNK_FORMAT = "codeagent-manifest-chunks"
_ID = re.compile(rb'"[0-9a-f]{64}"')
_CUT_MASK = 0x0F  # cut before one id in 16: about 5 file entries (1.5 KB) per chunk
_MIN_CHUNK = 256


def split(data: bytes) -> list[bytes]:
    """Content-defined chunks whose concatenation is `data`."""
    chunks: list[bytes] = []
    start = 0
    for m in _ID.finditer(data):
        pos = m.start()
        if int(data[pos + 1:pos + 3], 16) & _CUT_MASK == 0 and pos - start >= _MIN_CHUNK:
            chunks.append(data[start:pos])
            start = pos
    chunks.append(data[start:])
    return chunks


def chunk_map(manifests: list[bytes]) -> dict[str, bytes]:
    """chunk id -> bytes for every chunk of the given manifests (what a client already has)."""
    out: dict[str, bytes] = {}
    for data in manifests:
        for chunk in split(data):
            out.setdefault(hash_bytes(chunk), chunk)
    return out


def encode_list(manifest_id: str, chunks: list[bytes]) -> bytes:
    body = {"format": CHUNK_FORMAT, "manifest": manifest_id,
            "size": sum(len(c) for c in chunks), "chunks": [hash_bytes(c) for c in chunks]}
    return json.dumps(body, separators=(",", ":")).encode()


def decode_list(manifest_id: str, data: bytes) -> list[str]:
    """The chunk ids of a chunk list; RemoteError when it is not the list of `manifest_id`."""
    try:
        body = json.loads(data)
        ok = (body.get("format") == CHUNK_FORMAT and body.get("manifest") == manifest_id
              and all(is_object_id(c) for c in body["chunks"]))
    except (ValueError, KeyError, TypeError, AttributeError):
        ok = False
    if not ok:
        raise RemoteError(f"the chunk list of manifest {manifest_id[:12]} is damaged")
    return list(body["chunks"])
