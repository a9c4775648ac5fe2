"""`search`: one entry point over every retriever, with modes and intent-steered fusion.

A retriever is `fn(view, request) -> Candidates` (retrieval.py), named in the table
`RETRIEVERS`. Modes `symbol`, `text`, `regex`, `path`, `semantic` call one retriever;
`auto` and `hybrid` fuse several with `ranking.fuse.fuse`, weighted by the query intent.
"""

from __future__ import annotations

import time
from dataclasses import replace

from ..errors import IndexMissing, InvalidParameter
from .filters import check_roles, checked_kind, checked_language, skipped_files
from .fulltext import retrieve as text_retriever
from .grep import retrieve as regex_retriever
from .index import IndexView
from .intent import ERROR, NATURAL_LANGUAGE, classify_intent
from .paths import retrieve as path_retriever
from .ranking.files import file_candidates, file_hits, file_ranking, group_by_file, order_by_files, roles_of
from .ranking.fuse import blend_weights, fuse
from ..model import COMPLETE, PARTIAL, TRUNCATED, FileResult, SearchHit, SearchResponse
from .retrieval import Candidates, Retriever, SearchRequest, check_applies, unapplied_filters
from .sourcetext import window_snippets
from .symbols import retrieve as symbol_retriever
from .terms import chunk_terms

MODES = ("auto", "symbol", "text", "regex", "path", "semantic", "hybrid")
# CodeCompass "index priority": for these intents, the strong hits (score >= STRONG) of one
# retriever come first in its own order; everything else is fused.
PRIORITY = {"symbol": "symbol", "path": "path"}
STRONG = 0.7
# Intents whose answer is ordered by the file ranking (a task or an error in words). Each
# ranked file's best hit comes first, so the first hits name as many files as they can; a
# file-grouped answer shows up to SPANS_PER_FILE of each file's hits.
FILE_RANKED_INTENTS = (NATURAL_LANGUAGE, ERROR)
SPANS_PER_FILE = 3
HITS_PER_FILE = 1
GROUPS = (None, "file", "symbol")  # symbol: the functions and methods to look at (ranking/functions.py)


def _semantic(view: IndexView, req: SearchRequest) -> Candidates:
    from . import semantic  # numpy and the embedders: +65-140 ms on importing codeagent.query

    return semantic.retrieve(view, req)


# mode -> its retriever; `auto` and `hybrid` fuse several.
RETRIEVERS: dict[str, Retriever] = {"symbol": symbol_retriever, "text": text_retriever,
                                    "regex": regex_retriever, "path": path_retriever,
                                    "semantic": _semantic}


def _fused(view: IndexView, req: SearchRequest, intent: str, names: list[str]) -> Candidates:
    wide = replace(req, limit=max(req.limit * 3, 30))
    lists: dict[str, list[str]] = {}
    by_key: dict[str, SearchHit] = {}
    total = 0
    completeness = COMPLETE
    weights = blend_weights(intent, req.semantic_weight)
    for name in names:
        if weights.get(name, 0.0) <= 0 or unapplied_filters(name, req):
            continue
        try:
            cand = RETRIEVERS[name](view, wide)
        except IndexMissing:
            if req.mode == "hybrid" and name == "semantic":
                raise
            continue
        total = max(total, cand.total)
        if cand.completeness != COMPLETE:
            completeness = PARTIAL
        keys = []
        for hit in cand.hits:
            key = hit.result_id or f"{hit.path}:{hit.line_start}"
            by_key.setdefault(key, hit)
            keys.append(key)
        lists[name] = keys
    fused = fuse(lists, weights)
    first = _priority_keys(intent, lists, by_key)
    rest = [(k, s) for k, s in fused if k not in first][:max(req.limit - len(first), 0)]
    scale = rest[0][1] if rest else 1.0
    hits = [replace(by_key[k], score=1.0 + (len(first) - i) / len(first)) for i, k in enumerate(first)]
    hits += [replace(by_key[k], score=s / scale) for k, s in rest]
    return Candidates(hits[:req.limit], max(total, len(fused)), completeness)


def _by_file(view: IndexView, req: SearchRequest, cand: Candidates, per_file: int) -> Candidates:
    """The fused hits in the order of the file ranking (`ranking.files.order_by_files`; a ranked
    file no hit came from is shown through its best chunk)."""
    depth = max(req.limit, 10)
    ranked = file_ranking(view, req.query, req.file_filter(),
                          [h.path for h in cand.hits], limit=depth, use_history=req.history)
    seen = {h.path for h in cand.hits}
    made = {h.path: h for h in file_hits(view, [p for p, _ in ranked if p not in seen], req.query)}
    hits = order_by_files(cand.hits, ranked, made, per_file)
    return Candidates(hits[:req.limit], max(cand.total, len(ranked)), cand.completeness, cand.notes)


def file_evidence(view: IndexView, request: SearchRequest) -> list:
    """The candidate files `auto` ranks for a task-like query, with their evidence
    (`learned.Candidate`s), as `search` sees them; [] for other intents (training data for the
    file model: eval/train_ranker.py)."""
    intent = request.intent or classify_intent(request.query)
    if intent not in FILE_RANKED_INTENTS:
        return []
    wide = replace(request, limit=max(request.limit * 3, 30))
    cand = _fused(view, wide, intent, ["symbol", "path", "text", "semantic"])
    return file_candidates(view, request.query, request.file_filter(), [h.path for h in cand.hits],
                           limit=max(request.limit, 10), use_history=request.history)


def _functions(view: IndexView, req: SearchRequest, intent: str) -> Candidates:
    """The functions and methods of the best files (ranking/functions.py), best first."""
    from .ranking.functions import rank_functions  # only --group symbols ranks functions

    wide = replace(req, limit=max(req.limit * 3, 30))
    cand = _fused(view, wide, intent, ["symbol", "path", "text", "semantic"])
    ranked = file_ranking(view, req.query, req.file_filter(), [h.path for h in cand.hits],
                          limit=max(req.limit, 10), use_history=req.history)
    hits = rank_functions(view, req.query, ranked, req.limit)
    return Candidates(hits, len(hits), cand.completeness)


def _priority_keys(intent: str, lists: dict[str, list[str]], by_key: dict[str, SearchHit]) -> list[str]:
    name = PRIORITY.get(intent)
    if name is None:
        return []
    return [k for k in lists.get(name, []) if by_key[k].score >= STRONG]


def _is_text(value: str) -> bool:
    """UTF-8 encodable (no lone surrogates, as undecodable argv bytes become) and NUL-free."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return "\x00" not in value


def search(view: IndexView, request: SearchRequest) -> SearchResponse:
    """Run one search over `view`; see SearchRequest for the knobs and MODES for the modes."""
    if not request.query.strip():
        raise InvalidParameter("empty query")
    for name in ("query", "language", "kind", "path", "extension"):
        value = getattr(request, name)
        if value is not None and not _is_text(value):
            raise InvalidParameter(f"{name} is not valid UTF-8 text (undecodable bytes or a NUL)")
    if request.mode not in MODES:
        raise InvalidParameter(f"unknown search mode {request.mode!r}; choose one of {', '.join(MODES)}")
    if request.limit < 1:
        raise InvalidParameter("limit must be at least 1")
    check_roles(request.roles)
    if request.group_by not in GROUPS:
        raise InvalidParameter(f"unknown group_by {request.group_by!r}; use 'file', 'symbol' or leave it out")
    request = replace(request, language=checked_language(view, request.language),
                      kind=checked_kind(view, request.kind))
    started = time.perf_counter()
    intent = request.intent or classify_intent(request.query)
    asked = request
    if request.group_by == "file":
        request = replace(request, limit=request.limit * SPANS_PER_FILE)
    if request.group_by == "symbol":
        cand = _functions(view, request, intent)
    elif request.mode == "auto":
        by_file = intent in FILE_RANKED_INTENTS and not unapplied_filters("filerank", request)
        wide = replace(request, limit=max(request.limit * 3, 30)) if by_file else request
        cand = _fused(view, wide, intent, ["symbol", "path", "text", "semantic"])
        if by_file:
            cand = _by_file(view, request, cand, SPANS_PER_FILE if asked.group_by else HITS_PER_FILE)
    elif request.mode == "hybrid":
        cand = _fused(view, request, intent, ["symbol", "text", "semantic"])
    else:
        check_applies(request.mode, request)
        cand = RETRIEVERS[request.mode](view, request)
    completeness = cand.completeness
    if completeness == COMPLETE and cand.total > len(cand.hits) and request.mode == "regex":
        completeness = TRUNCATED
    results = window_snippets(view, cand.hits[:request.limit], set(chunk_terms(request.query)))
    files = None
    if asked.group_by == "file":
        files = _file_results(view, results, asked.limit)
        results = [h for f in files for h in f.spans]
    skipped = {} if request.mode == "path" else skipped_files(view, request.file_filter())
    return SearchResponse(results=results, query_intent=intent,
                          total_count=cand.total, metadata=view.metadata(completeness),
                          mode=request.mode, latency_ms=(time.perf_counter() - started) * 1000,
                          files=files, **skipped)


def _file_results(view: IndexView, hits: list[SearchHit], limit: int) -> list[FileResult]:
    groups = group_by_file(hits)[:limit]
    roles = roles_of(view, [path for path, _ in groups])
    return [FileResult(path, group[0].score, group[0].language, roles.get(path, ""),
                       group[:SPANS_PER_FILE], len(group),
                       list(dict.fromkeys(h.match or h.result_type for h in group)))
            for path, group in groups]
