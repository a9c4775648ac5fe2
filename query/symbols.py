"""Symbol search: exact qualified name, name, prefix, sub-token and fuzzy matches, definitions
ranked before references."""

from __future__ import annotations

from .index import IndexView
from .results import SearchResponse
from .search import Candidates, SearchRequest, register_retriever

MATCHES = ("auto", "exact", "prefix", "fuzzy")


def find_symbols(view: IndexView, name: str, *, match: str = "auto", language: str | None = None,
                 kind: str | None = None, path: str | None = None, extension: str | None = None,
                 limit: int = 10, include_references: bool = True) -> SearchResponse:
    """Definitions (then references) whose name fits `name`.

    match: exact (qualified name or name), prefix, fuzzy (typos, sub-tokens), or auto (all,
    best tier first). Filters: language, kind, path glob, extension.
    """
    raise NotImplementedError


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    raise NotImplementedError


register_retriever("symbol", retrieve)
