"""Which files to open for a query: evidence gathered per file, not only per chunk.

The right file for a task often holds many moderate matches rather than one perfect chunk.
So a file gets a fielded BM25 over the whole file (its chunks' postings summed, plus its path
tokens), the chunk and symbol hits it holds, a strong bonus when the query names it (a
traceback's `File "pkg/mod.py"`, a `pkg.module` reference, a file name), and a prior from its
role (a test, a mock or a translated README ranks below the source for a task in words).
Scoring is pure (`score_files`); `file_ranking` reads what it needs from the view.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from itertools import chain

from ...roles import CODE_EXTENSIONS, SOURCE
from ...tokenize import tokenize
from ..doctable import chunk_docs
from ..filepostings import body_rows
from ..filters import FileFilter, allowed_paths
from . import learned
from .history import file_activity, history_scores
from ..index import IndexView, sql_literals
from ..navigate import symbols_where
from .bm25 import FILE_B, K1, bm25_term, idf
from ...model import SearchHit
from ..sourcetext import best_window, file_lines, span_text
from ..symbol_table import SymbolTable, resident_table
from ..terms import named_identifiers, query_terms

PATH_FIELD_WEIGHT = 2.0  # a path token counts as this many body occurrences
MENTION_BONUS = 1.0  # added to the normalised score of a file the query names
CHUNK_WEIGHT = 0.35  # the best chunk/symbol hit of a file, at rank 0, against a top BM25 of 1
HISTORY_WEIGHT = 0.3  # the history field's BM25 (history.py), against a top body BM25 of 1
NAME_WEIGHT = 2.0  # a query term that is a word of the file's name: this many times its idf

# How much each role keeps of its score when the query does not ask for it.
ROLE_PRIOR: dict[str, float] = {
    SOURCE: 1.0, "generated": 0.35, "test": 0.45, "mock": 0.3, "fixture": 0.25,
    "benchmark": 0.4, "example": 0.5, "vendored": 0.25, "docs": 0.1, "translated_docs": 0.03,
    "config": 0.15,
}

_PACKAGE_FILES = ("__init__", "mod", "index")  # a module that is its folder: pkg/__init__.py is `pkg`
_FILE_NAME = re.compile(r"\.(?:" + "|".join(sorted(CODE_EXTENSIONS)) + r")$")
_NAME_SEP = re.compile(r"\.|::")


@dataclass
class FileEvidence:
    """What is known of one file for one query."""

    path: str
    length: float = 0.0
    tf: dict[str, float] = field(default_factory=dict)
    role: str = SOURCE
    chunk_rank: int | None = None  # rank of its best hit among the chunk/symbol hits
    named: bool = False


def bm25_file_scores(files: Sequence[FileEvidence], weights: Mapping[str, float], n_docs: int,
                     avgdl: float, df: Mapping[str, int]) -> dict[str, float]:
    """Weighted BM25 (bm25.py, b = FILE_B) of each file over its summed term counts (pure).

    `bm25_term` and `idf` with their per-term and per-file parts computed once (the same
    operations in the same order, so the same floats): this loop runs for every file holding a
    query term, hundreds a query."""
    out: dict[str, float] = {}
    avgdl = avgdl or 1.0
    per_term: dict[str, tuple[float, float]] = {}  # term -> (weight * idf, the name bonus)
    k1_1 = K1 + 1.0
    for f in files:
        s = 0.0
        name = name_words(f.path) if NAME_WEIGHT else frozenset()
        norm = K1 * (1.0 - FILE_B + FILE_B * f.length / avgdl) if avgdl > 0 else K1
        for term, tf in sorted(f.tf.items()):  # one summation order, whatever the source
            got = per_term.get(term)
            if got is None:
                term_idf, weight = idf(n_docs, df.get(term, 1)), weights.get(term, 0.0)
                got = per_term[term] = (weight * term_idf, NAME_WEIGHT * weight * term_idf)
            s += 0.0 if tf <= 0 else got[0] * tf * k1_1 / (tf + norm)
            if term in name:
                s += got[1]
        out[f.path] = s
    return out


def word_tokens_of_name(path: str) -> list[str]:
    """Tokens of a file's name without its extension (`_log_render.py`: log_render, log, render)."""
    return tokenize(path.rsplit("/", 1)[-1].rsplit(".", 1)[0])


@lru_cache(maxsize=1 << 16)
def name_words(path: str) -> frozenset[str]:
    """`word_tokens_of_name` as a set, memoised: the same paths come back query after query."""
    return frozenset(word_tokens_of_name(path))


ASKED_PRIOR = 0.6  # a role the query asks for: close to the source, which may still be meant


def role_prior(role: str, asked: frozenset[str]) -> float:
    prior = ROLE_PRIOR.get(role, 1.0)
    return max(prior, ASKED_PRIOR) if role in asked else prior


def score_files(files: Sequence[FileEvidence], bm25: Mapping[str, float],
                asked: frozenset[str], history: Mapping[str, float] | None = None) -> list[tuple[str, float]]:
    """Files best first: normalised BM25 of the body and of the history field plus the
    chunk-hit evidence, times the role prior, plus the bonus of a file the query names (pure;
    ties by path)."""
    top = max(bm25.values(), default=0.0) or 1.0
    history = history or {}
    htop = max(history.values(), default=0.0) or 1.0
    scored = []
    for f in files:
        s = bm25.get(f.path, 0.0) / top + HISTORY_WEIGHT * history.get(f.path, 0.0) / htop
        if f.chunk_rank is not None:
            s += CHUNK_WEIGHT / (1.0 + f.chunk_rank / 3.0)
        s *= role_prior(f.role, asked)
        if f.named:
            s += MENTION_BONUS
        scored.append((f.path, s))
    return sorted(scored, key=lambda kv: (-kv[1], kv[0]))


def _common_tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def names_file(path: str, mentions: Iterable[str]) -> bool:
    """Whether a mention names `path` (pure): a path that ends like it (`frames.py`,
    `/venv/lib/pkg/wire/frames.py`: the whole of one, or a folder and the file name), or a
    dotted or `::` name whose module part is its path without the extension (`pkg.wire.frames`,
    `pkg.wire.frames.read_frame`, `tokio::runtime::handle::Handle`)."""
    parts = path.split("/")
    stemmed = path.rsplit(".", 1)[0].split("/")
    if stemmed[-1] in _PACKAGE_FILES:
        stemmed = stemmed[:-1]
    for m in mentions:
        if "/" in m or _FILE_NAME.search(m):
            written = m.split("/")
            tail = _common_tail(parts, written)
            if tail and (tail in (len(parts), len(written)) or tail >= 2):
                return True
        names = _NAME_SEP.split(m)
        for k in range(len(names), 1, -1):  # pkg.mod.Class.method: the longest module prefix
            if _common_tail(stemmed, names[:k]) == k:
                return True
    return False


LATER_HIT_DECAY = 0.85  # a file's next hit stands where a file of this share of its score would


def order_by_files(hits: Sequence[SearchHit], ranked: Sequence[tuple[str, float]],
                   file_hits: Mapping[str, SearchHit], per_file: int) -> list[SearchHit]:
    """`hits` in the order of the file ranking (pure). A ranked file's first `per_file` hits
    (its `file_hits` entry when it has none) take the file's score; each later one a share
    LATER_HIT_DECAY of the one before, so a strong file's second hit comes before a much
    weaker file's first; hits of files the ranking left out come last. Files first appear in
    ranking order, every hit is kept, and scores never rise down the list."""
    by_path = dict(group_by_file(hits))
    keyed: list[tuple[float, int, SearchHit]] = []
    for path, score in ranked:
        own = by_path.get(path) or ([file_hits[path]] if path in file_hits else [])
        for j, h in enumerate(own):
            s = score * LATER_HIT_DECAY ** max(j - per_file + 1, 0)
            keyed.append((s, len(keyed), replace(h, score=s)))
    keyed.sort(key=lambda k: (-k[0], k[1]))
    ranked_paths = {p for p, _ in ranked}
    ordered = [h for _, _, h in keyed] + [h for h in hits if h.path not in ranked_paths]
    floor = math.inf
    out = []
    for h in ordered:
        floor = min(floor, h.score)
        out.append(h if h.score == floor else replace(h, score=floor))
    return out


def group_by_file(hits: Sequence[SearchHit]) -> list[tuple[str, list[SearchHit]]]:
    """(path, its hits in their order) in the order each file first appears (pure): every
    hit lands in exactly one group."""
    groups: dict[str, list[SearchHit]] = {}
    for hit in hits:
        groups.setdefault(hit.path, []).append(hit)
    return list(groups.items())


# ---- reading the evidence from a view ------------------------------------------------------


@dataclass
class PathIndex:
    """The indexed paths of a manifest, looked up by path token and by file-name stem."""

    by_token: dict[str, list[str]]
    by_stem: dict[str, list[str]]
    indexed: frozenset[str] = frozenset()

    @classmethod
    def of(cls, paths: Iterable[str]) -> "PathIndex":
        by_token: dict[str, list[str]] = {}
        by_stem: dict[str, list[str]] = {}
        for path in paths:
            for tok in dict.fromkeys(tokenize(path)):
                by_token.setdefault(tok, []).append(path)
            parts = path.rsplit(".", 1)[0].split("/")
            stem = parts[-2] if parts[-1] in _PACKAGE_FILES and len(parts) > 1 else parts[-1]
            by_stem.setdefault(stem, []).append(path)
        return cls(by_token, by_stem, frozenset(paths))

    def named(self, mentions: Sequence[str]) -> set[str]:
        """The paths a mention names (`names_file`), found through their stems."""
        out: set[str] = set()
        for m in mentions:
            found: set[str] = set()
            for part in dict.fromkeys(_NAME_SEP.split(m.rsplit("/", 1)[-1].rsplit(".", 1)[0]) + _NAME_SEP.split(m)):
                found.update(p for p in self.by_stem.get(part, ()) if p not in found and names_file(p, [m]))
            if len(found) > 1 and "/" not in m and _FILE_NAME.search(m):
                continue  # a bare `main.py` that several files share: most often the reporter's own
            out |= found
        return out


def _corpus(view: IndexView) -> tuple[int, float, PathIndex]:
    """(files with text, their mean length in tokens, the indexed paths), memoised on the view."""
    got = view.cache.get("file_corpus")
    if got is None:
        n, avg = view.sql("SELECT count(*), coalesce(avg(dl), 0) FROM (SELECT sum(length) AS dl "
                          "FROM docs WHERE doc_kind = 'c' GROUP BY path)")[0]
        paths = [r[0] for r in view.sql("SELECT path FROM files WHERE status = 'indexed'")]
        got = view.cache["file_corpus"] = (int(n), float(avg), PathIndex.of(paths))
    return got


# Each chunk's share of the query in the given files; the best chunk's lines come from
# `chunk_docs` (in memory for long-lived views), not from a join over every matching chunk.
_CHUNK_MATCH_SQL = """
SELECT path, doc, count(*) AS matched, sum(tf) AS tf FROM term_postings
WHERE term IN ({terms}) AND doc_kind = 'c' AND path IN (SELECT unnest(?::VARCHAR[]))
GROUP BY ALL
"""


def file_hits(view: IndexView, paths: list[str], query: str) -> list[SearchHit]:
    """A hit for each of `paths` (files ranked for their whole text, no chunk or symbol hit of
    their own): the best window of the chunk holding most of the query's terms (then the most
    occurrences, then the first), named after the innermost definition that holds it (gin's
    `node.getValue` for a window in its body), else after the file."""
    if not paths:
        return []
    terms = query_terms(query).weights
    best: dict[str, tuple[int, float, int]] = {}
    for path, doc, matched, tf in view.sql(_CHUNK_MATCH_SQL.format(terms=sql_literals(terms)), [paths]):
        key = (matched, tf, -doc)
        if key > best.get(path, (0, 0.0, 0)):
            best[path] = key
    spans = chunk_docs(view, [(path, -key[2]) for path, key in best.items()])
    lines, defined = file_lines(view, paths), _definitions(view, paths)
    out = []
    for path in paths:
        text = lines.get(path)
        if text is None:
            continue
        row = spans.get((path, -best[path][2])) if path in best else None
        start, end = (row.line_start, row.line_end) if row else (1, len(text))
        a, b = best_window(text, start, end, set(terms))
        hit = SearchHit(path=path, line_start=a, line_end=b, kind="file",
                        name=path.rsplit("/", 1)[-1], qualified_name=path, symbol_id=None,
                        symbol_stable_id=None, score=0.0, snippet=span_text(text, a, b),
                        result_type="file", result_id=path, match="file_bm25")
        around = min((s for s in defined.get(path, ()) if s.line_start <= a and b <= s.line_end),
                     key=lambda s: s.line_end - s.line_start, default=None)
        if around is not None:
            hit = replace(hit, kind=around.kind, name=around.name,
                          qualified_name=around.fq_name or around.qualified_name,
                          symbol_id=around.symbol_id, symbol_stable_id=around.symbol_stable_id)
        out.append(hit)
    return out


def _definitions(view: IndexView, paths: list[str]) -> dict[str, list]:
    """The symbols each of `paths` defines: from the view's symbol table when it keeps one,
    else in one SQL query."""
    table = resident_table(view)
    if table is not None:
        return {p: table.infos(table.where("path", p)) for p in paths}
    out: dict[str, list] = {}
    for s in symbols_where(view, "path IN (SELECT unnest(?::VARCHAR[]))", [paths], limit=1_000_000):
        out.setdefault(s.path, []).append(s)
    return out


def roles_of(view: IndexView, paths: list[str]) -> dict[str, str]:
    """The role of each path, as the assembly decided it (`files.role`); every file's role is
    read once per view."""
    roles = view.cache.get("file_roles")
    if roles is None:
        roles = view.cache["file_roles"] = {p: r or SOURCE for p, r in view.sql("SELECT path, role FROM files")}
    return {p: roles[p] for p in paths if p in roles}


def file_ranking(view: IndexView, query: str, filt: FileFilter | None = None,
                 chunk_paths: Sequence[str] = (), limit: int = 50,
                 use_history: bool = True) -> list[tuple[str, float]]:
    """The files of `view` ranked for `query`, best first, with their scores: the shipped
    model's (query/learned.py) over each file's evidence, else the hand-set score.

    `chunk_paths`: the paths of the chunk/symbol hits already found, best first.
    `use_history`: add the history field (off for the ablation).
    """
    cands = file_candidates(view, query, filt, chunk_paths, limit, use_history)
    return learned.rank(cands, learned.shipped_model() if use_history else None)[:limit]


def file_candidates(view: IndexView, query: str, filt: FileFilter | None = None,
                    chunk_paths: Sequence[str] = (), limit: int = 50,
                    use_history: bool = True) -> list[learned.Candidate]:
    """The files that can make the answer, each with its evidence (see `file_ranking`)."""
    qt = query_terms(query)
    if not qt.weights or not view.has_table("docs"):
        return []
    n_docs, avgdl, paths = _corpus(view)
    where, params = (filt or FileFilter()).where("path")
    allowed = allowed_paths(view, filt) if filt is not None else None
    rows = body_rows(view, list(qt.weights), where, params, allowed)
    evidence = {path: FileEvidence(path, float(dl), dict(zip(terms, tfs))) for path, dl, terms, tfs in rows}
    df = Counter(chain.from_iterable(terms for _, _, terms, _ in rows))  # files holding each term
    for term in qt.weights:
        for path in paths.by_token.get(term, ()):
            if allowed is None or path in allowed:
                ev = evidence.setdefault(path, FileEvidence(path, avgdl))
                ev.tf[term] = ev.tf.get(term, 0.0) + PATH_FIELD_WEIGHT
    for rank, path in enumerate(dict.fromkeys(chunk_paths)):
        evidence.setdefault(path, FileEvidence(path, avgdl)).chunk_rank = rank
    for path in paths.named(qt.mentions):
        if allowed is None or path in allowed:
            evidence.setdefault(path, FileEvidence(path, avgdl)).named = True
    history = _history(view, qt.weights, paths, allowed) if use_history else {}
    for path in history:
        evidence.setdefault(path, FileEvidence(path, avgdl))
    bm25 = bm25_file_scores(list(evidence.values()), qt.weights, max(n_docs, 1), avgdl, df)
    # roles only for the files that can still make the answer: the prior at most keeps a score
    top = max(bm25.values(), default=0.0) or 1.0
    htop = max(history.values(), default=0.0) or 1.0
    head = sorted(evidence.values(), key=lambda f: -(bm25.get(f.path, 0.0) / top + (1e9 if f.named else 0)
                                                      + HISTORY_WEIGHT * history.get(f.path, 0.0) / htop
                                                      + (1e6 if f.chunk_rank is not None else 0)))
    keep = head[:max(limit * 4, 200)]
    roles = roles_of(view, [f.path for f in keep])
    for f in keep:
        f.role = roles.get(f.path, SOURCE)
    hand = dict(score_files(keep, bm25, qt.asked_roles, history))
    activity = file_activity(view) if use_history else {}
    defines = _definers(view, named_identifiers(query), [f.path for f in keep])
    return [learned.Candidate(f.path, hand[f.path], bm25.get(f.path, 0.0) / top, history.get(f.path, 0.0) / htop,
                              f.chunk_rank, f.named, role_prior(f.role, qt.asked_roles), f.length,
                              learned.coverage(f.tf, qt.weights), *activity.get(f.path, (None, 0)),
                              defines=defines.get(f.path, 0.0))
            for f in keep]


def _definers(view: IndexView, names: Sequence[str], paths: Sequence[str]) -> dict[str, float]:
    """path -> 1 / the number of `paths` defining it, for the most specific of `names` each of
    `paths` defines (a symbol of that exact name): one file defining `NestedContainer` says
    more than twelve defining `to_dict`."""
    if not names or not paths:
        return {}
    table = SymbolTable.load(view)
    wanted = set(paths)
    best: dict[str, float] = {}
    for name in names:
        definers = {table.rows[i].path for i in table.where("name", name)} & wanted
        for path in definers:
            best[path] = max(best.get(path, 0.0), 1.0 / len(definers))
    return best


def _history(view: IndexView, weights: Mapping[str, float], paths: "PathIndex",
             allowed: set[str] | None) -> dict[str, float]:
    """The history field's scores of the indexed (and allowed) files."""
    scores = history_scores(view, weights)
    indexed = paths.indexed
    return {p: s for p, s in scores.items() if p in indexed and (allowed is None or p in allowed)}
