"""What every embedder shares: the Embedder protocol, its id (name, version, dimension), row
normalisation and the per-process count of texts embedded."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..errors import InvalidParameter

if TYPE_CHECKING:
    import numpy as np

MAX_TEXT_CHARS = 2000  # what an item contributes to its vector; long bodies are cut here

# Embedding calls per process (texts embedded), so tests and logs can show reuse.
EMBED_COUNTER: Counter[str] = Counter()


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into unit vectors of a fixed dimension."""

    name: str
    version: int
    dim: int

    @property
    def id(self) -> str: ...

    def embed(self, texts: list[str]) -> "np.ndarray": ...


def embedder_id(name: str, version: int, dim: int) -> str:
    return f"{name}-v{version}-d{dim}"


_ID = re.compile(r"^([a-z0-9_]+)-v(\d+)-d(\d+)$")


def parse_embedder_id(value: str) -> tuple[str, int, int]:
    m = _ID.match(value)
    if not m:
        raise InvalidParameter(f"not an embedder id: {value!r}",
                               hint="use a name (hash, minilm) or an id like hash-v1-d256")
    return m.group(1), int(m.group(2)), int(m.group(3))


def normalize_rows(matrix: "np.ndarray") -> "np.ndarray":
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)
