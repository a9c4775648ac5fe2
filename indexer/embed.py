"""The embeddings step of a build: which embedder it uses, and the vectors it attaches."""

from __future__ import annotations

from collections.abc import Callable

from ..format.manifest import Manifest
from ..store import Store


def embedder_of(requested: str | None, previous: Manifest | None) -> str | None:
    """The embedder a build uses: --embedder (`requested`), else the one the ref's previous
    manifest used; None for none."""
    embedder = requested or (previous.embedder_id.split("-v")[0]
                             if previous is not None and previous.embedder_id else None)
    return None if not embedder or embedder == "none" else embedder


def attach_vectors(store: Store, manifest: Manifest, requested: str | None, previous: Manifest | None,
                   progress: Callable | None) -> Manifest:
    """The embeddings step (vectors are content-addressed objects listed in extras). Without
    --embedder a ref keeps the embedder its previous manifest used; `none` drops it."""
    embedder = embedder_of(requested, previous)
    if embedder is None:
        return manifest
    from .assemble.vectors import attach_vectors as attach  # numpy and the embedders: only with an embedder

    return attach(store, manifest, embedder, previous, progress)
