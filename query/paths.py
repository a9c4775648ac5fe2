"""Path retriever: files whose path matches the query (`auth/jwt.rs`, `jwt.rs`, `auth jwt`).

Tiers: exact path (1.0), path suffix (0.9), same file name (0.85), substring (0.7), every
query word in the path (0.5); shorter paths first within a tier.
"""

from __future__ import annotations

import bisect
import itertools

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
        starts = list(itertools.accumulate((len(p) + 1 for p in paths[:-1]), initial=0))
        view.cache["path_text"] = (text.lower(), [p.lower() for p in paths], starts) if text.isascii() else None
    got = view.cache["path_text"]
    if got is None or not q.isascii():
        return True
    joined, lowered, starts = got
    q = q.lower()
    if q in joined and ("\n" not in q or any(q in p for p in lowered)):
        return True  # without a newline, a match in the joined paths lies within one path
    if not words:
        return False
    held = [_holding(joined, starts, w) for w in words]  # tokens: [a-z0-9_], no newline
    return bool(set.intersection(*held))


def _holding(joined: str, starts: list[int], word: str) -> set[int]:
    """The numbers of the paths (as joined, starting at `starts`) that hold `word`."""
    out, at = set(), joined.find(word)
    while at != -1:
        out.add(bisect.bisect_right(starts, at) - 1)
        at = joined.find(word, at + 1)
    return out


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    return path_candidates(view, req.query, req)
