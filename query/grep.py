"""Regex and literal search over file contents with RE2 (DuckDB's regexp functions): linear
time, so no user pattern can backtrack catastrophically."""

from __future__ import annotations

from .index import IndexView
from .results import GrepResponse
from .search import Candidates, SearchRequest, register_retriever

DEFAULT_MAX_RESULTS = 50
DEFAULT_MAX_BYTES = 512 * 1024
DEFAULT_TIMEOUT = 10.0


def grep(view: IndexView, pattern: str, *, regex: bool = True, case_sensitive: bool = True,
         glob: str | None = None, language: str | None = None, context: int = 2,
         max_results: int = DEFAULT_MAX_RESULTS, max_bytes: int = DEFAULT_MAX_BYTES,
         timeout: float | None = DEFAULT_TIMEOUT) -> GrepResponse:
    """Matching lines with `context` lines around them, in path then line order.

    `regex=False` searches `pattern` literally. Stops at `max_results` matches or
    `max_bytes` of output (truncated=True); raises Timeout after `timeout` seconds and
    InvalidParameter for a pattern RE2 rejects.
    """
    raise NotImplementedError


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    raise NotImplementedError


register_retriever("regex", retrieve)
