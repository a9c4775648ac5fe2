"""Path retriever: files whose path matches the query (`auth/jwt.rs`, `jwt.rs`, `auth jwt`).

Tiers: exact path (1.0), path suffix (0.9), same file name (0.85), substring (0.7), every
query word in the path (0.5); shorter paths first within a tier.
"""

from __future__ import annotations

from ..tokenize import tokenize
from .index import IndexView
from ..model import COMPLETE, SearchHit
from .retrieval import Candidates, SearchRequest
from .sourcetext import file_lines, snippet

_PATHS_SQL = """
WITH q AS (SELECT ?::VARCHAR AS q)
SELECT path, language, line_count,
  CASE WHEN path = q.q THEN 1.0
       WHEN ends_with(path, '/' || q.q) THEN 0.9
       WHEN lower(regexp_extract(path, '[^/]*$')) = lower(q.q) THEN 0.85
       WHEN contains(lower(path), lower(q.q)) THEN 0.7
       ELSE 0.5 END AS score
FROM files, q
WHERE status = 'indexed' AND {where}
  AND (contains(lower(path), lower(q.q)) OR ({tokens}))
ORDER BY score DESC, length(path), path
"""


def path_candidates(view: IndexView, query: str, req: SearchRequest) -> Candidates:
    q = query.strip().lstrip("./") if query.strip().startswith("./") else query.strip()
    words = list(dict.fromkeys(tokenize(q)))[:8]
    token_sql = " AND ".join("contains(lower(path), ?)" for _ in words) or "FALSE"
    if not _may_match(view, q, words):
        return Candidates([], 0, COMPLETE)
    where, params = req.file_filter().where("path")
    rows = view.sql(_PATHS_SQL.format(where=where, tokens=token_sql), [q, *params, *words])
    top = rows[:req.limit]
    lines = file_lines(view, [r[0] for r in top])
    hits = []
    for path, lang, line_count, score in top:
        end = max(line_count or 1, 1)
        text = lines.get(path)
        hits.append(SearchHit(path=path, line_start=1, line_end=end, kind="file",
                              name=path.rsplit("/", 1)[-1], qualified_name=path, symbol_id=None,
                              symbol_stable_id=None, score=float(score),
                              snippet=snippet(text, 1, end) if text else "", result_type="file",
                              result_id=path, language=lang or "", match="path"))
    return Candidates(hits, len(rows), COMPLETE)


def _may_match(view: IndexView, q: str, words: list[str]) -> bool:
    """False when no indexed path can pass _PATHS_SQL's match (a query in words most often:
    then the SQL round trip is skipped), decided on the indexed paths lower-cased: only for
    ASCII paths and queries, where Python's lower() is DuckDB's, and for long-lived views (a
    one-shot view would read every path for one query). True means "run the SQL"."""
    if not view.keep_text_in_memory and "path_text" not in view.cache:
        return True
    if "path_text" not in view.cache:
        paths = [r[0] for r in view.sql("SELECT path FROM files WHERE status = 'indexed'")]
        text = "\n".join(paths)
        # all paths joined first: a word no path holds is ruled out with one search
        view.cache["path_text"] = (text.lower(), [p.lower() for p in paths]) if text.isascii() else None
    got = view.cache["path_text"]
    if got is None or not q.isascii():
        return True
    joined, lowered = got
    q = q.lower()
    if q not in joined and not (words and all(w in joined for w in words)):
        return False
    return any(q in p or (words and all(w in p for w in words)) for p in lowered)


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    return path_candidates(view, req.query, req)
