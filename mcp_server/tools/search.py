"""Search tools: adapters over `codeagent.query` search.

Each method is one MCP tool; its signature is the input schema, its return type the output
schema. Every query runs under a deadline on the view that answered it, and the response's
metadata names that view's manifest.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import Field

from ...errors import IndexMissing
from ...model import shallow_dict
from ...query import SearchRequest, find_symbols, read_lines, search, search_text
from ...query.filters import checked_kind, checked_language
from ..budget import skipped
from ..schemas import FileHit, Hit, NextAction, SearchResults
from ..state import ServerState, metadata_of

QUERY_TIMEOUT = 20.0
POOL_PER_FILE, MAX_POOL = 4, 200  # candidates asked for per hit kept when hits are grouped by file
EXACT_POOL = 200  # name matches lookup_symbol narrows to the exact qualified name
DOC_EXTENSIONS = "md,markdown,rst,rest"

Handle = Annotated[str, Field(min_length=1, max_length=1000,
                              description="symbol_id, symbol_stable_id or qualified name")]
Query = Annotated[str, Field(min_length=1, max_length=1000)]
Limit = Annotated[int, Field(ge=1, le=50)]
Language = Annotated[str | None, Field(description="Only this language (e.g. python, rust)")]
PathGlob = Annotated[str | None, Field(description="Only paths matching this glob (src/**/*.py)")]
Ref = Annotated[str | None, Field(max_length=256, description="Branch, tag, sha or ref")]
Kind = Annotated[str | None, Field(description="Only this symbol kind (function, class, method...)")]


def id_of(hit) -> tuple:
    return (hit.path, hit.line_start, hit.result_id)


def per_file_hits(results: list, per_file: int) -> tuple[list, dict[tuple, int]]:
    """The first `per_file` hits of each file, in rank order, and for each kept file's last
    kept hit how many of that file's hits were left out (0 keeps all)."""
    if per_file == 0:
        return list(results), {}
    kept, seen, last = [], {}, {}
    more: dict[tuple, int] = {}
    for h in results:
        n = seen.get(h.path, 0)
        seen[h.path] = n + 1
        if n < per_file:
            kept.append(h)
            last[h.path] = id_of(h)
        else:
            more[last[h.path]] = more.get(last[h.path], 0) + 1
    return kept, more


def scored(out: list[Hit]) -> list[Hit]:
    """`out` with scores in 0..1 (the seeds' similarity): relative to the answer's best."""
    top = max((h.score for h in out), default=1.0)
    for h in out:
        h.score = round(max(h.score, 0.0) / max(top, 1.0), 4)
    return out


def hits(results) -> list[Hit]:
    """Result models. Secret files need no filter here: the build decides what is a secret
    (by name and by content) and indexes nothing of it, so no hit comes from one."""
    return [Hit.model_validate(h.to_dict(True)) for h in results]


def search_results(resp, view, *, actions: bool = True, context: tuple[int, int] = (0, 0),
                   started: float | None = None) -> SearchResults:
    out = scored(hits(resp.results))
    if context != (0, 0):
        _add_context(view, out, *context)
    took = (time.perf_counter() - started) * 1000 if started is not None else resp.latency_ms
    files = None
    if resp.files is not None:
        files = [FileHit.model_validate({**f.to_dict(True), "spans": [h.model_dump() for h in hits(f.spans)]})
                 for f in resp.files]
    return SearchResults(results=out, total_count=resp.total_count,
                         query_intent=resp.query_intent, mode=resp.mode,
                         latency_ms=int(round(took)),
                         suggested_next_actions=_next_actions(out) if actions else [],
                         metadata=metadata_of(view, resp.metadata.completeness), files=files,
                         skipped=[shallow_dict(f) for f in resp.skipped], skipped_count=resp.skipped_count)


def _add_context(view, out: list[Hit], before: int, after: int) -> None:
    for h in out:
        if before and h.line_start > 1:
            h.context_before = read_lines(view, h.path, max(1, h.line_start - before), h.line_start - 1)
        if after:
            h.context_after = read_lines(view, h.path, h.line_end + 1, h.line_end + after)


def _next_actions(out: list[Hit]) -> list[NextAction]:
    top = next((h for h in out if h.symbol_id), None)
    actions = []
    if top is not None:
        actions.append(NextAction(tool="get_symbol", arguments={"symbol_id": top.symbol_id}))
        actions.append(NextAction(tool="get_callers", arguments={"symbol_id": top.symbol_id}))
    if out:
        h = out[0]
        actions.append(NextAction(tool="read_file", arguments={
            "path": h.path, "line_start": h.line_start, "line_end": max(h.line_end, h.line_start)}))
    return actions


class SearchTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def search_code(
        self, query: Query,
        semantic_weight: Annotated[float | None, Field(ge=0, le=1, description="Vector weight "
                                   "in hybrid fusion (needs vectors)")] = None,
        mode: Literal["auto", "hybrid", "symbol", "text", "regex", "path", "semantic"] = "auto",
        language: Language = None,
        extensions: Annotated[str | None, Field(description="Comma-separated extensions: py,pyi")] = None,
        path_filter: PathGlob = None,
        kind: Kind = None,
        limit: Limit = 10,
        context_before: Annotated[int, Field(ge=0, le=20)] = 0,
        context_after: Annotated[int, Field(ge=0, le=20)] = 0, ref: Ref = None,
        roles: Annotated[list[str] | None, Field(description="Only these file roles (source, test, "
                         "mock, docs, config, generated...)")] = None,
        group_by: Annotated[Literal["file", "symbol"] | None, Field(description="file: the files "
                            "to open for a task, each with its best spans; symbol: the functions to look at")] = None,
        per_file: Annotated[int, Field(ge=0, le=50, description="Hits per file (the rest: "
                            "more_in_file); 0: all")] = 1,
    ) -> SearchResults:
        """Ranked search over symbols, text and paths, steered by what the query looks like;
        one hit per file. Use it as the default search (and group_by); hits carry symbol_id
        handles for get_symbol."""
        started = time.perf_counter()
        wanted = limit + skipped()
        pool = wanted if per_file == 0 else min(wanted * POOL_PER_FILE, MAX_POOL)
        req = SearchRequest(query, mode=mode, language=language, kind=kind, path=path_filter,
                            extension=extensions, limit=max(pool, wanted), semantic_weight=semantic_weight,
                            roles=tuple(roles or ()), group_by=group_by)
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            resp = search(view, req)
            kept, more = per_file_hits(resp.results, 0 if group_by == "symbol" else per_file)
            resp = replace(resp, results=kept[:wanted])
            out = search_results(resp, view, context=(context_before, context_after), started=started)
            for h in out.results:
                h.more_in_file = more.get(id_of(h), 0)
            return out

    def search_symbols(
        self, query: Query,
        match: Literal["auto", "exact", "prefix", "fuzzy"] = "auto",
        kind: Kind = None, language: Language = None, path_filter: PathGlob = None,
        limit: Limit = 20, ref: Ref = None,
    ) -> SearchResults:
        """Symbol definitions by name: exact, prefix, sub-token and fuzzy matches.
        Use it when you know (part of) a function, class or method name."""
        started = time.perf_counter()
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            language, kind = checked_language(view, language), checked_kind(view, kind)
            resp = find_symbols(view, query, match=match, language=language, kind=kind,
                                path=path_filter, limit=limit + skipped(), include_references=False)
            return search_results(resp, view, started=started)

    def locate_symbol(
        self, name: Query, kind: Kind = None, language: Language = None, limit: Limit = 10, ref: Ref = None,
    ) -> SearchResults:
        """file:line of a symbol's definitions and then its references, by name or
        qualified name. Use it to jump to where something is defined or used."""
        started = time.perf_counter()
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            language, kind = checked_language(view, language), checked_kind(view, kind)
            resp = find_symbols(view, name, match="auto", language=language, kind=kind,
                                limit=limit + skipped(), include_references=True)
            return search_results(resp, view, started=started)

    def lookup_symbol(
        self, qualified_name: Query, language: Language = None, limit: Limit = 20, ref: Ref = None,
    ) -> SearchResults:
        """The symbols whose qualified name is exactly this (pkg.mod.Class.method); several
        only for overloads. Use it when you know the full name; nothing else matches."""
        started = time.perf_counter()
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            resp = find_symbols(view, qualified_name, match="exact", language=language,
                                limit=EXACT_POOL, include_references=False)
            exact = [h for h in resp.results if h.qualified_name == qualified_name]
            resp = replace(resp, results=exact[:limit + skipped()], total_count=len(exact))
            return search_results(resp, view, actions=False, started=started)

    def search_docs(
        self, query: Query, path_filter: PathGlob = None, limit: Limit = 10, ref: Ref = None,
    ) -> SearchResults:
        """Full-text search over documentation sections (Markdown, reStructuredText). Use
        it for how-to and design questions the docs answer."""
        started = time.perf_counter()
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            resp = search_text(view, query, path=path_filter, extension=DOC_EXTENSIONS,
                               doc_kinds=("c",), limit=limit + skipped())
            return search_results(resp, view, actions=False, started=started)

    def find_similar(self, symbol_id: Handle, limit: Limit = 10, ref: Ref = None) -> SearchResults:
        """Symbols whose embedding is closest to this one's. Use it to find code that
        does the same thing elsewhere (needs an index built with an embedder)."""
        try:
            from ...query import semantic  # type: ignore[attr-defined]  # numpy, the embedders: +65-140 ms, only when asked
        except ImportError:
            semantic = None
        fn = getattr(semantic, "find_similar", None)
        if fn is None:
            raise IndexMissing("similarity search is not available: the index has no vectors",
                               hint="build with an embedder: `codeagent build --embedder NAME`")
        started = time.perf_counter()
        with self.state.view(ref) as view, view.deadline(QUERY_TIMEOUT):
            return search_results(fn(view, symbol_id, limit=limit + skipped()), view, started=started)
