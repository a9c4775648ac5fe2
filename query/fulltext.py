"""BM25 full-text search over symbols, chunks and doc sections, computed in DuckDB SQL from
the per-shard postings and the per-manifest statistics (docs, term_df, corpus)."""

from __future__ import annotations

from .index import IndexView
from .results import SearchResponse
from .search import Candidates, SearchRequest, register_retriever


def search_text(view: IndexView, query: str, *, language: str | None = None,
                path: str | None = None, extension: str | None = None,
                doc_kinds: tuple[str, ...] = ("s", "c"), limit: int = 10) -> SearchResponse:
    """BM25-ranked documents (symbols "s", chunks and doc sections "c") for `query`."""
    raise NotImplementedError


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    raise NotImplementedError


register_retriever("text", retrieve)
