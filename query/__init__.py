"""The read side: queries over one manifest's assembled index (never imports `indexer`).

    from codeagent.query import open_index, search, SearchRequest
    with open_index(repo) as view:
        response = search(view, SearchRequest("parse_args", limit=5))

Long-lived callers (the MCP server) use `IndexFollower(repo).view()` per request.
Retrievers are named in `search.RETRIEVERS` (what each is asked and answers:
retrieval.py); fusion is `ranking.fuse.fuse`. Importing the package loads the read side whole
(~100-200 ms): every read command and the server use most of it; the semantic retriever
(numpy, the embedders) loads on first use.
"""

from __future__ import annotations

from .graph import (EDGE_KINDS, callees, callers, dependencies, dependents, implementations,
                    neighbors, references, traverse)
from .grep import grep, grep_texts, matching_files
from .follower import IndexFollower
from .index import IndexView, open_index
from .intent import INTENTS, classify_intent
from .navigate import file_outline, get_symbol, read_lines, resolve_symbol, source_spans
from .ranking.fuse import fuse
from ..model import (COMPLETE, PARTIAL, TRUNCATED, GraphEdge, GraphNode, GraphResponse,
                      GrepMatch, GrepResponse, Metadata, Outline, SearchHit, SearchResponse,
                      SourceSpan, SymbolDetail, SymbolInfo)
from .retrieval import Candidates, SearchRequest
from .search import MODES, search
from .fulltext import search_text
from .symbols import find_symbols

__all__ = [
    "open_index", "IndexView", "IndexFollower", "search", "SearchRequest", "MODES",
    "Candidates", "fuse", "classify_intent", "INTENTS",
    "find_symbols", "search_text", "grep", "grep_texts", "matching_files",
    "file_outline", "get_symbol", "resolve_symbol", "source_spans", "read_lines",
    "neighbors", "callers", "callees", "references", "implementations", "dependencies",
    "dependents", "traverse", "EDGE_KINDS",
    "Metadata", "SearchHit", "SearchResponse", "GrepMatch", "GrepResponse", "SymbolInfo",
    "SymbolDetail", "SourceSpan", "Outline", "GraphNode", "GraphEdge", "GraphResponse",
    "COMPLETE", "PARTIAL", "TRUNCATED",
]
