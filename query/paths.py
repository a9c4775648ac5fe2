"""Path retriever: files whose path matches the query (for path-like queries)."""

from __future__ import annotations

from .index import IndexView
from .search import Candidates, SearchRequest, register_retriever


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    raise NotImplementedError


register_retriever("path", retrieve)
