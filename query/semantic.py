"""Vector search over a manifest's vector artifact, and `find_similar` by symbol.

Registers the "semantic" retriever, which `search` fuses with the lexical ones (hybrid and
auto modes). Small indexes are searched exactly (one matrix product); larger ones through
the usearch HNSW file, over-fetching when filters may drop candidates. Layout: `format.py`.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from .. import format as fmt
from ..embedding import Embedder, check_same_embedder, get_embedder, resolve_embedder_id
from ..errors import IndexIncompatible, IndexMissing
from .filters import kinds_for
from .index import IndexView
from .navigate import resolve_symbol
from .sourcetext import chunk_slice
from ..model import SearchHit, SearchResponse
from .retrieval import Candidates, SearchRequest

OVERFETCH = 4  # candidates fetched per wanted hit when filters apply
_KINDS = ("s", "c")  # row kind codes (format.VECTOR_ROWS)
_load_lock = threading.Lock()


class VectorArtifact:
    """One manifest's vectors: rows (path, doc_kind, ordinal), matrix, optional ANN index."""

    def __init__(self, directory: Path) -> None:
        meta_path = directory / fmt.VECTORS_META
        if not meta_path.exists():
            raise IndexMissing("this index has no vectors",
                               hint="build them with `codeagent build --embedder hash` (or minilm)")
        self.meta = json.loads(meta_path.read_text())
        self.embedder_id: str = self.meta["embedder_id"]
        if not (directory / fmt.VECTOR_FILES).exists():
            raise IndexIncompatible("this index's vectors are in an older layout",
                                    hint="rebuild with `codeagent build --embedder NAME`")
        files = json.loads((directory / fmt.VECTOR_FILES).read_text())["files"]
        self.file_paths = [f[0] for f in files]
        self.file_first = np.asarray([f[2] for f in files], dtype=np.int64)
        self.span_of = {f[0]: (f[2], f[3]) for f in files}
        rows = np.load(directory / fmt.VECTOR_ROWS)
        self.kinds = rows["kind"]
        self.ordinals = rows["ordinal"]
        self.keys = rows["key"]
        self._row_of_key = np.argsort(self.keys)
        self.matrix = np.load(directory / fmt.VECTORS_MATRIX, mmap_mode="r")
        self._dense: np.ndarray | None = None
        self.ann = None
        if self.meta.get("ann") and (directory / fmt.ANN_FILE).exists():
            from usearch.index import Index

            self.ann = Index.restore(str(directory / fmt.ANN_FILE), view=True)

    def item(self, row: int) -> tuple[str, str, int]:
        """(path, doc_kind "s" | "c", ordinal) of a row."""
        f = int(np.searchsorted(self.file_first, row, side="right")) - 1
        return self.file_paths[f], _KINDS[int(self.kinds[row])], int(self.ordinals[row])

    def row_of(self, path: str, doc_kind: str, ordinal: int) -> int | None:
        first, count = self.span_of.get(path, (0, 0))
        code = _KINDS.index(doc_kind)
        for row in range(first, first + count):
            if self.kinds[row] == code and self.ordinals[row] == ordinal:
                return row
        return None

    def __len__(self) -> int:
        return int(self.matrix.shape[0])

    def dense(self) -> np.ndarray:
        if self._dense is None:
            self._dense = np.asarray(self.matrix, dtype=np.float32)
        return self._dense

    def exact(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k rows by cosine (vectors are unit length), best first."""
        if len(self) == 0 or k <= 0:
            return []
        scores = self.dense() @ query.astype(np.float32)
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.lexsort((top, -scores[top]))]
        return [(int(r), float(scores[r])) for r in top]

    def nearest(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        """Top-k rows: through the ANN index when there is one, else exactly."""
        if self.ann is None or len(self) == 0:
            return self.exact(query, k)
        found = self.ann.search(query.astype(np.float32), min(k, len(self)))
        keys = np.asarray(found.keys, dtype=np.int64)
        pos = np.searchsorted(self.keys, keys, sorter=self._row_of_key)
        rows = self._row_of_key[np.minimum(pos, len(self.keys) - 1)]
        return [(int(r), 1.0 - float(d)) for r, d, key in zip(rows, found.distances, keys)
                if self.keys[r] == key]  # a key the rows do not hold is never a hit


def vector_artifact(view: IndexView) -> VectorArtifact:
    """The view's vector artifact, loaded once per manifest (raises IndexMissing without one)."""
    cached = view.cache.get("vectors")
    if cached is None:
        with _load_lock:
            cached = view.cache.get("vectors")
            if cached is None:
                try:
                    cached = VectorArtifact(view.store.assembled_dir(view.manifest_id))
                except (IndexMissing, IndexIncompatible) as exc:
                    # a manifest's artifacts never change: remember why there are none
                    cached = (type(exc), exc.message, exc.hint)
                view.cache["vectors"] = cached
    if isinstance(cached, tuple):
        kind, message, hint = cached
        raise kind(message, hint=hint)  # a fresh one: a re-raised object keeps growing its traceback
    return cached


def query_embedder(view: IndexView, embedder: str | None = None) -> Embedder:
    """The embedder that made the index's vectors; `embedder` (a name) must agree with it."""
    art = vector_artifact(view)
    if embedder:
        check_same_embedder(art.embedder_id, resolve_embedder_id(embedder))
    return get_embedder(art.embedder_id)


def _filters(req: SearchRequest) -> tuple[str, list]:
    where, params = req.file_filter().where("path")
    kinds = kinds_for(req.kind)
    if kinds:
        where += " AND kind IN (SELECT unnest(?))"
        params.append(list(kinds))
    return where, params


_ITEMS_SQL = """
WITH c AS (SELECT unnest(?) AS path, unnest(?) AS doc_kind, unnest(?) AS ordinal, unnest(?) AS score)
SELECT * FROM (
  SELECT c.score, 's' AS doc_kind, s.path, s.language, s.kind, s.name, s.qualified_name,
         s.symbol_id, s.stable_id, s.start_line, s.end_line, coalesce(s.signature, '') AS signature,
         coalesce(nullif(s.signature, ''), s.name) AS snippet, NULL::BIGINT AS start_byte,
         NULL::BIGINT AS end_byte, c.ordinal
  FROM c JOIN symbols s ON c.doc_kind = 's' AND s.path = c.path AND s.ordinal = c.ordinal
  UNION ALL
  SELECT c.score, 'c', k.path, f.language, k.kind, coalesce(k.heading, ''), coalesce(k.heading, ''),
         NULL, NULL, k.start_line, k.end_line, '', left(k.text, 200), k.start_byte, k.end_byte, c.ordinal
  FROM c JOIN chunks k ON c.doc_kind = 'c' AND k.path = c.path AND k.ordinal = c.ordinal
  JOIN files f ON f.path = k.path
) WHERE {where} ORDER BY score DESC, path, ordinal
"""
_SNIPPET_CHARS = 200


def chunk_result_id(path: str, ordinal: int) -> str:
    return f"{path}#c{ordinal}"  # the form fulltext.py gives chunks, so fusion merges them


def _hits(view: IndexView, art: VectorArtifact, scored: list[tuple[int, float]],
          req: SearchRequest) -> list[SearchHit]:
    if not scored:
        return []
    where, params = _filters(req)
    items = [art.item(r) for r, _ in scored]
    rows = view.sql(_ITEMS_SQL.format(where=where), [
        [i[0] for i in items], [i[1] for i in items], [i[2] for i in items],
        [s for _, s in scored], *params])
    hits = []
    for (score, dk, path, lang, kind, name, qname, sid, stable, l0, l1, sig, snippet, b0, b1, ordinal) in rows:
        if snippet is None:  # a slice of its file's text (format/assembly.py, version 5)
            snippet = chunk_slice(view, path, b0, b1)[:_SNIPPET_CHARS]
        hits.append(SearchHit(
            path=path, line_start=l0, line_end=l1, kind=kind, name=name, qualified_name=qname,
            symbol_id=sid, symbol_stable_id=stable, score=float(score), snippet=snippet.strip(),
            result_type="symbol" if dk == "s" else ("doc" if kind == "doc_section" else "chunk"),
            result_id=sid if dk == "s" else chunk_result_id(path, ordinal), language=lang,
            signature=sig, match="semantic"))
    return hits


def _filtered(req: SearchRequest) -> bool:
    return bool(req.language or req.kind or req.path or req.extension)


def search_vectors(view: IndexView, vector: np.ndarray, req: SearchRequest,
                   exclude: set[int] = frozenset()) -> Candidates:  # type: ignore[assignment]
    """Hits nearest to `vector`, filtered like `req`, best first."""
    art = vector_artifact(view)
    want = req.limit + len(exclude)
    k = want * (OVERFETCH if _filtered(req) else 1)
    while True:
        scored = [(r, s) for r, s in art.nearest(vector, k) if r not in exclude]
        hits = _hits(view, art, scored, req)
        if len(hits) >= req.limit or k >= len(art):
            return Candidates(hits[:req.limit], len(hits))
        k *= 4


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    """The "semantic" retriever: embed the query with the index's embedder, search vectors."""
    emb = query_embedder(view)
    return search_vectors(view, emb.embed([req.query])[0], req)


def semantic_search(view: IndexView, query: str, *, limit: int = 10,
                    embedder: str | None = None, **filters: str | None) -> SearchResponse:
    """Symbols and chunks nearest in meaning to `query` (filters: language, kind, path, extension)."""
    import time

    started = time.perf_counter()
    req = SearchRequest(query, mode="semantic", limit=limit, **filters)
    emb = query_embedder(view, embedder)
    cand = search_vectors(view, emb.embed([query])[0], req)
    return SearchResponse(results=cand.hits, query_intent="natural_language",
                          total_count=cand.total, metadata=view.metadata(), mode="semantic",
                          latency_ms=(time.perf_counter() - started) * 1000)


def find_similar(view: IndexView, symbol: str, *, limit: int = 10,
                 **filters: str | None) -> SearchResponse:
    """Symbols and chunks whose vectors are nearest to `symbol`'s (a handle), itself excluded."""
    import time

    started = time.perf_counter()
    sym = resolve_symbol(view, symbol)
    art = vector_artifact(view)
    ordinal = view.sql("SELECT ordinal FROM symbols WHERE symbol_id = ?", [sym.symbol_id])[0][0]
    row = art.row_of(sym.path, "s", int(ordinal))
    if row is None:
        raise IndexMissing(f"symbol {sym.qualified_name} has no vector in this index",
                           hint="rebuild with `codeagent build --embedder NAME`")
    req = SearchRequest(sym.qualified_name, mode="semantic", limit=limit, **filters)
    cand = search_vectors(view, np.asarray(art.matrix[row], dtype=np.float32), req, {row})
    return SearchResponse(results=cand.hits, query_intent="symbol", total_count=cand.total,
                          metadata=view.metadata(), mode="similar",
                          latency_ms=(time.perf_counter() - started) * 1000)
