"""Symbol search: exact qualified name, name, prefix, sub-token and fuzzy matches, definitions
ranked before references.

Tiers, best first (score): exact qualified name (1.0; 0.91 for a bare name: a top-level
definition, only a little ahead of a member of that name), qualified suffix `path.join`
(0.95), exact name (0.9, 0.88 ignoring case), prefix (0.7-0.8), sub-tokens `parse response` ->
`parseResponse` (0.55-0.65), fuzzy typos (0.5 - 0.1 per edit; only when nothing better
matched, or with match="fuzzy"), references (0.3).
Within a tier, top-level definitions, functions/classes, non-test paths and short
qualified names come first; then among definitions of one name the one a bare name means:
public and documented, in a source file, beats a crate-private shim, an undocumented copy, a
mock or a test double (`_standing`), unless the query asks for those ("mock JoinHandle",
"test parse", "shim"). A leading kind word (`struct JoinHandle`, `fn spawn`) prefers that
kind; such hint words no name contains are dropped from the name looked up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ..errors import InvalidParameter
from ..roles import BENCHMARK, EXAMPLE, FIXTURE, GENERATED, MOCK, TEST, VENDORED, file_role
from ..tokenize import split_identifier
from .filters import KIND_ALIASES, FileFilter, allowed_paths, kinds_for, make_filter, skipped_files
from .index import IndexView
from .intent import SYMBOL
from .names import NameIndex, SymbolRow
from .ref_table import RefTable
from ..model import COMPLETE, PARTIAL, SearchHit, SearchResponse
from .retrieval import Candidates, SearchRequest
from .sourcetext import file_lines, snippet
from .symbol_table import SymbolTable

MATCHES = ("auto", "exact", "prefix", "fuzzy")
_PRIMARY_KINDS = {"function", "method", "class", "struct", "interface", "trait", "enum", "type",
                  "module", "constructor"}
_SPLIT_QUERY = re.compile(r"[\s,;]+")
_SEPARATORS = re.compile(r"::|->|#")
# Roles whose definitions are seldom the one a bare name means; a query word naming the role
# asks for them (issue 45: tokio's `fs/mocks.rs` JoinHandle above the real one).
_ASIDE_ROLES = frozenset({TEST, MOCK, FIXTURE, BENCHMARK, EXAMPLE, GENERATED, VENDORED})
_ROLE_WORDS = {"test": TEST, "tests": TEST, "mock": MOCK, "mocks": MOCK, "fake": MOCK, "fakes": MOCK,
               "stub": MOCK, "stubs": MOCK, "fixture": FIXTURE, "fixtures": FIXTURE,
               "example": EXAMPLE, "examples": EXAMPLE, "bench": BENCHMARK, "benchmark": BENCHMARK,
               "vendored": VENDORED, "generated": GENERATED}
# Words asking for what is not the public definition: a shim, a private or internal copy.
_SHIM_WORDS = frozenset({"shim", "shims", "private", "internal", "compat", "alias", "reexport"})
_KIND_WORDS = frozenset(k for k in KIND_ALIASES if k not in ("var", "variable", "const", "constant"))
# Tie-breaks between same-name definitions: smaller than the gaps between match tiers.
ASIDE, ASKED, PUBLIC, DOCUMENTED, KIND_HINT = -0.015, 0.03, 0.008, 0.008, 0.03
_PUBLIC = frozenset({"public", "open", "export", "exported"})


@dataclass(frozen=True)
class _Asked:
    """What the query's hint words ask for: roles, shims, kinds (`mock`, `shim`, `struct`)."""

    roles: frozenset[str] = frozenset()
    shims: bool = False
    kinds: tuple[str, ...] = ()
    bare: str = ""  # the query without its hint words ("" when it has none)


def _asked(query: str) -> _Asked:
    words = [w for w in _SPLIT_QUERY.split(query.strip()) if w]
    lowered = [w.lower() for w in words]
    roles = frozenset(_ROLE_WORDS[w] for w in lowered if w in _ROLE_WORDS)
    kinds = kinds_for(lowered[0]) if len(words) > 1 and lowered[0] in _KIND_WORDS else None
    hints = set(_ROLE_WORDS) | _SHIM_WORDS | ({lowered[0]} if kinds else set())
    bare = [w for w, low in zip(words, lowered) if low not in hints]
    return _Asked(roles, any(w in _SHIM_WORDS for w in lowered), kinds or (),
                  " ".join(bare) if bare and len(bare) < len(words) else "")


def _bonus(row: SymbolRow) -> float:
    b = 0.0
    b += 0.02 if row.top_level else 0.0
    b += 0.015 if row.kind in _PRIMARY_KINDS else 0.0
    b += 0.0 if row.in_tests else 0.01
    b -= min(row.qualified_name.count("."), 5) * 0.002
    return b


@lru_cache(maxsize=65536)
def _role(path: str) -> str:
    return file_role(path)


def _standing(scored: dict[int, tuple[float, str]], table: SymbolTable, asked: _Asked) -> None:
    """Add to each scored row what decides between definitions of one name: its file's role
    (a mock, a test double... stays behind unless asked for), public visibility and a doc
    comment (a crate-private shim or an undocumented copy stays behind unless the query asks
    for a shim), the kind a leading kind word names."""
    rows = list(scored)
    for i, (visibility, documented) in zip(rows, table.standing(rows)):
        row = table.rows[i]
        role = _role(row.path)
        b = ASKED if role in asked.roles else ASIDE if role in _ASIDE_ROLES else 0.0
        public = (visibility or "").split(" ")[0] in _PUBLIC
        b += PUBLIC if public != asked.shims else 0.0  # asked for a shim: the private one first
        b += DOCUMENTED if documented != asked.shims else 0.0
        b += KIND_HINT if row.kind in asked.kinds else 0.0
        score, how = scored[i]
        scored[i] = (score + b, how)


def _dotted(name: str) -> str:
    return _SEPARATORS.sub(".", name)


def _fuzzy_budget(query: str) -> int:
    n = len(query)
    return 0 if n < 4 else 1 if n < 7 else 2


class _Collector:
    """Ranked, de-duplicated symbol rows passing the filters."""

    def __init__(self, index: NameIndex, allowed: set[str] | None, kinds: tuple[str, ...] | None,
                 language: str | None) -> None:
        self.index = index
        self.allowed = allowed
        self.kinds = kinds
        self.language = language.lower() if language else None
        self.scored: dict[int, tuple[float, str]] = {}

    def ok(self, row: SymbolRow) -> bool:
        return ((self.allowed is None or row.path in self.allowed)
                and (self.kinds is None or row.kind in self.kinds)
                and (self.language is None or row.language.lower() == self.language))

    def add(self, ids, score: float, how: str) -> None:
        for i in ids:
            row = self.index.rows[i]
            if i in self.scored or not self.ok(row):
                continue
            self.scored[i] = (score + _bonus(row), how)

    def add_names(self, names, score_of, how: str, stop_at: int | None = None) -> None:
        for name in names:
            if stop_at is not None and len(self.scored) >= stop_at:
                break
            self.add(self.index.by_name.get(name, ()), score_of(name), how)


@lru_cache(maxsize=1 << 16)
def _subwords(word: str) -> tuple[str, ...]:
    """`split_identifier`, memoised: a bug report repeats its words hundreds of times."""
    return tuple(split_identifier(word))


def _collect(index: NameIndex, query: str, match: str, c: _Collector, limit: int) -> None:
    q = query.strip().removesuffix("()")
    qualified = index.exact_qualified(q)
    dotted = _dotted(q)  # `JoinHandle::abort` is `JoinHandle.abort` written the Rust way
    # A bare name's exact qualified match is a top-level definition of the name: not a better
    # match than a member of that name, only a little ahead of it, so `_standing` decides
    # between them (tokio's test function `blocking_recv` is not what `blocking_recv` means).
    bare = not any(sep in q for sep in (".", "::", "#", "->"))
    c.add([i for i in qualified
           if dotted in (_dotted(index.rows[i].qualified_name), _dotted(index.rows[i].fq_name))],
          0.91 if bare else 1.0, "exact_qualified")
    c.add(qualified, 0.89, "exact_qualified_ignore_case")
    if any(sep in q for sep in (".", "::", "#", "->")):
        c.add(index.qualified_suffix(q), 0.95, "qualified_suffix")
        q = re.split(r"\.|::|#|->", q)[-1]
    exact = index.exact_name(q)
    c.add([i for i in exact if index.rows[i].name == q], 0.9, "exact")
    c.add(exact, 0.88, "exact_ignore_case")
    if match == "exact":
        return
    if len(q) >= 2:
        # shortest names first and they score highest: enough of them fill the page
        c.add_names(index.prefix(q), lambda n: 0.7 + 0.1 * len(q) / len(n), "prefix",
                    stop_at=len(c.scored) + 4 * limit)
    if match == "prefix":
        return
    tokens = [t for w in _SPLIT_QUERY.split(query) if w for t in _subwords(w)]
    if len(tokens) > 1 or (tokens and match == "fuzzy"):
        c.add_names(index.subtoken_names(tokens),
                    lambda n: 0.55 + 0.1 * len(tokens) / max(len(_subwords(n)), 1), "subtoken")
    budget = _fuzzy_budget(q) if not _SPLIT_QUERY.search(q) else 0
    if budget and (match == "fuzzy" or not c.scored):  # typos only when nothing else matched
        for name, dist in index.fuzzy_names(q, budget):
            c.add(index.by_name.get(name, ()), 0.5 - 0.1 * dist, "fuzzy")


def _hit(row: SymbolRow, score: float, how: str, lines: list[str] | None) -> SearchHit:
    snip = snippet(lines, row.line_start, row.line_end) if lines else ""
    return SearchHit(path=row.path, line_start=row.line_start, line_end=row.line_end, kind=row.kind,
                     name=row.name, qualified_name=row.fq_name or row.qualified_name,
                     symbol_id=row.symbol_id, symbol_stable_id=row.stable_id, score=score,
                     snippet=snip, result_type="symbol", result_id=row.symbol_id,
                     language=row.language, signature=row.signature, match=how)


def _reference_rows(view: IndexView, name: str, filt: FileFilter, limit: int) -> list[tuple]:
    """(path, language, kind, target, start_line, end_line) of uses of `name` (no dot)."""
    if view.keep_text_in_memory:  # a long-lived reader: see ref_table.py
        return RefTable.load(view).uses(name, allowed_paths(view, filt), limit)
    where, params = filt.where("r.path")
    return view.sql(f"""
        SELECT r.path, r.language, r.kind, r.target, r.start_line, r.end_line
        FROM refs r WHERE (r.target = ? OR ends_with(r.target, ?)) AND {where}
        ORDER BY r.path, r.start_line, r.ordinal LIMIT {int(limit)}""", [name, "." + name, *params])


def _reference_hits(view: IndexView, name: str, filt: FileFilter, limit: int) -> list[SearchHit]:
    """Uses of `name` (calls, imports, type references) from the refs table."""
    rows = _reference_rows(view, name, filt, limit)
    lines = file_lines(view, [r[0] for r in rows])
    return [SearchHit(path=p, line_start=ls, line_end=le, kind=kind, name=name, qualified_name=target,
                      symbol_id=None, symbol_stable_id=None, score=0.3,
                      snippet=snippet(lines[p], ls, le) if p in lines else "",
                      result_type="reference", result_id=f"{p}#ref:{ls}:{target}", language=lang,
                      match="reference")
            for p, lang, kind, target, ls, le in rows]


def symbol_candidates(view: IndexView, query: str, *, match: str = "auto", language: str | None = None,
                      kind: str | None = None, filt: FileFilter | None = None, limit: int = 10,
                      include_references: bool = True) -> Candidates:
    if match not in MATCHES:
        raise InvalidParameter(f"unknown match {match!r}; choose one of {', '.join(MATCHES)}")
    # Every file filter (roles too) through `allowed_paths`, but the language on each symbol
    # row: a file's language is not always its symbols' (embedded languages).
    filt = replace(filt or FileFilter(), language=None)
    table = SymbolTable.load(view)
    index = table.names
    c = _Collector(index, allowed_paths(view, filt), kinds_for(kind), language)
    _collect(index, query, match, c, limit)
    asked = _asked(query)
    if not c.scored and asked.bare:  # no name holds the hint words: look up the rest
        _collect(index, asked.bare, match, c, limit)
    _standing(c.scored, table, asked)
    ranked = sorted(c.scored.items(), key=lambda kv: (-kv[1][0], index.rows[kv[0]].path,
                                                      index.rows[kv[0]].line_start))
    top = ranked[:limit]
    lines = file_lines(view, [index.rows[i].path for i, _ in top])
    hits = [_hit(index.rows[i], s, how, lines.get(index.rows[i].path)) for i, (s, how) in top]
    total = len(ranked)
    if include_references and len(hits) < limit and not kind:
        name = re.split(r"\.|::|#|->", (asked.bare or query).strip().removesuffix("()"))[-1]
        refs = _reference_hits(view, name, replace(filt, language=language), limit - len(hits))
        hits.extend(refs)
        total += len(refs)
    completeness = COMPLETE if index.rows or view.count("files") == 0 else PARTIAL
    return Candidates(hits, total, completeness)


def find_symbols(view: IndexView, name: str, *, match: str = "auto", language: str | None = None,
                 kind: str | None = None, path: str | None = None, extension: str | None = None,
                 limit: int = 10, include_references: bool = True) -> SearchResponse:
    """Definitions (then references) whose name fits `name`.

    match: exact (qualified name or name), prefix, fuzzy (typos, sub-tokens), or auto (all,
    fuzzy only when the better tiers leave room). Filters: language, kind, path glob, extension.
    """
    if not name.strip():
        raise InvalidParameter("empty symbol name")
    filt = make_filter(None, path, extension)
    cand = symbol_candidates(view, name, match=match, language=language, kind=kind,
                             filt=filt, limit=limit, include_references=include_references)
    return SearchResponse(cand.hits, SYMBOL, cand.total, view.metadata(cand.completeness), "symbol",
                          **skipped_files(view, filt))


def retrieve(view: IndexView, req: SearchRequest) -> Candidates:
    """Definitions only: in fused modes, uses of a name come through the text retriever, and
    the refs scan would cost more than the whole name lookup."""
    return symbol_candidates(view, req.query, language=req.language, kind=req.kind,
                             filt=req.file_filter(), limit=req.limit,
                             include_references=req.mode == "symbol")
