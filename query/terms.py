"""Query analysis: what a query asks for, as terms. One function per use:

- `query_terms(query) -> QueryTerms`: weighted terms of a task-like query (boilerplate words
  weigh little, stop words nothing, identifiers a lot, other forms of a word a share), the
  files it names and the roles it asks for; the file, function and history rankings use it.
- `chunk_terms(query) -> list[str]`: the chunk retriever's terms (fulltext.py), distinct, in
  query order; also the words a snippet window looks for.

Pure: no view, no I/O. Tokens are `codeagent.tokenize`'s, as the index stores them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from ..tokenize import tokenize, word_tokens

# Words of commit messages and bug reports that say what kind of change it is, not where:
# they are rare in code, so BM25's idf would make them the query's strongest terms.
TASK_WORDS = frozenset("""fix fixes fixed fixing add adds added adding update updates updated
remove removes removed removing support supports allow allows allowed make makes ensure improve
improved improves refactor refactored cleanup clean minor typo change changes changed bump
bumped issue issues bug bugs pr merge merged revert reverts reverted correctly properly instead
now also new should when doesn doesn't don dont can cannot not no use used uses using via per
into like so more less some any all only just than then there these those would could which
while after before because since still even get gets got set sets way case cases work works
working handle handles handled better different correct incorrect wrong avoid avoids possible
missing unnecessary unused error errors""".split())
STOPWORDS = frozenset("""a an and are as at be by do does for from how i if in is it its of on or
the this that to was were what when where which who why with we you your our my me he she they
them their has have had been being will""".split())
TASK_WORD_WEIGHT = 0.3
VARIANT_WEIGHT = 0.6  # another form of a plain query word (`parsing` for `parse`), of its weight
IDENTIFIER_WEIGHT = 1.6  # a query token that is a whole identifier (camelCase, snake_case)
MAX_TERMS = 256

# Query words that ask for a role: then the file ranking's role prior keeps most of its score.
ROLE_WORDS: dict[str, frozenset[str]] = {
    "test": frozenset("test tests testing unittest pytest spec specs".split()),
    "mock": frozenset("mock mocks mocking fake fakes stub stubs".split()),
    "fixture": frozenset("fixture fixtures testdata golden snapshot".split()),
    "benchmark": frozenset("bench benchmark benchmarks perf".split()),
    "example": frozenset("example examples sample samples demo".split()),
    "docs": frozenset("doc docs documentation readme guide changelog".split()),
    "translated_docs": frozenset("translation translations translated i18n".split()),
    "config": frozenset("config configuration json yaml yml toml settings".split()),
    "generated": frozenset("generated codegen protobuf proto".split()),
    "vendored": frozenset("vendor vendored".split()),
}

_PATH_MENTION = re.compile(r"[\w@~+.-]*(?:/[\w@~+.-]+)+|[\w@+-]+\.[A-Za-z]{1,6}\b")
_DOTTED = re.compile(r"\b[A-Za-z_][\w]*(?:(?:\.|::)[A-Za-z_]\w*)+\b")
_CODED = re.compile(r"[a-z][A-Z]|[A-Za-z]_[A-Za-z]|^[A-Z][a-z]+[A-Z]")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class QueryTerms:
    """A query's terms with their weights, and the files it names."""

    weights: dict[str, float]
    mentions: tuple[str, ...] = ()  # path fragments and dotted names, as written
    asked_roles: frozenset[str] = frozenset()


def word_variants(word: str) -> list[str]:
    """Other forms of an English word that code may spell it in (pure, light stemming):
    `parsing` -> pars, parse; `matches` -> match; `retries` -> retry; `parse` -> parses,
    parsed, parser, parsing. Only words of 5+ letters; stems keep 3+ letters; `-er` is never
    stripped (header, buffer, number are words of their own)."""
    if len(word) < 5 or not word.isalpha():
        return []
    out: list[str] = []
    if word.endswith(("ies", "ied")):
        out.append(word[:-3] + "y")
    elif word.endswith("ations"):
        out += [word[:-6] + "e", word[:-1]]
    elif word.endswith("ation"):
        out.append(word[:-5] + "e")
    elif word.endswith("ing"):
        out += _stems(word[:-3])
    elif word.endswith("ed"):
        out += _stems(word[:-2])
    elif word.endswith("es"):
        out += [word[:-2], word[:-1]]
    elif word.endswith("s") and not word.endswith("ss"):
        out.append(word[:-1])
    elif word.endswith("ly"):
        out.append(word[:-2])
    else:
        base = word[:-1] if word.endswith("e") else word
        out += [word + "s", base + "ed", base + "ing", base + "er"]
    return [v for v in dict.fromkeys(out) if v != word and len(v) >= 3]


def _stems(stem: str) -> list[str]:
    """`pars` -> pars, parse; `runn` -> runn, run."""
    out = [stem, stem + "e"]
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "ls":
        out.append(stem[:-1])
    return out


# An issue template's furniture: checklist items, HTML comments, Markdown headings. Their words
# ("search", "documentation", "version", "behavior") are the template's, not the report's.
_TEMPLATE = re.compile(r"^[ \t]*[-*][ \t]*\[[ xX]\].*$|^[ \t]*#{1,6}[ \t].*$", re.M)
_COMMENT = re.compile(r"<!--.*?-->", re.S)


REPORT_CHARS = 200  # a longer query is a report: its template's furniture goes, its title weighs more


def without_template(report: str) -> str:
    """A bug report without its template's furniture (pure); a short query is left as it is."""
    return _TEMPLATE.sub(" ", _COMMENT.sub(" ", report)) if len(report) > REPORT_CHARS else report


# A report's first line is its title: what it is about, in the reporter's fewest words. The body
# around it (logs, environment, steps to reproduce) holds many more words, most about other code.
# On the bug-report development set (140 reports, 12 repositories) 2 and 3 both helped, 3 more.
TITLE_WEIGHT = 3.0


def report_title(query: str) -> str:
    """The first line of a report (a query longer than REPORT_CHARS, of several lines), else "" (pure)."""
    text = query.strip()
    return text.partition("\n")[0] if len(text) > REPORT_CHARS and "\n" in text else ""


def word_scales(query: str) -> dict[str, float]:
    """The words of a query whose weight is scaled, with the factor (pure): a report's title
    words TITLE_WEIGHT."""
    return dict.fromkeys(_WORD.findall(report_title(query)), TITLE_WEIGHT)


# One search asks for a query's terms several times (the text retriever, the file ranking, its
# file hits, the snippets): a bug report's analysis costs ~10 ms each, so the last few are kept.
# Small on purpose: it serves one search, not a cache of past queries.
_RECENT = 4


@lru_cache(maxsize=_RECENT)
def query_terms(query: str) -> QueryTerms:
    """Weighted terms of a task-like query (pure): boilerplate words weigh little, stop words
    nothing, identifiers a lot. The answer is shared between callers: read it, never change it."""
    query = without_template(query)
    scales = word_scales(query)
    weights: dict[str, float] = {}
    for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+", query):
        scale = scales.get(word, 1.0)
        toks = word_tokens(word)
        if not toks:
            continue
        coded = bool(_CODED.search(word)) and len(toks) > 1
        for i, tok in enumerate(toks):
            if tok in STOPWORDS or tok.isdigit():
                continue
            w = TASK_WORD_WEIGHT if tok in TASK_WORDS else 1.0
            if coded and i == 0:
                w = IDENTIFIER_WEIGHT
            w *= scale
            weights[tok] = max(weights.get(tok, 0.0), w)
            if not coded and VARIANT_WEIGHT:
                for var in word_variants(tok):
                    weights[var] = max(weights.get(var, 0.0), w * VARIANT_WEIGHT)
    if len(weights) > MAX_TERMS:
        weights = dict(sorted(weights.items(), key=lambda kv: -kv[1])[:MAX_TERMS])
    lowered = {t.lower() for t in re.findall(r"[A-Za-z]+", query)}
    asked = frozenset(role for role, words in ROLE_WORDS.items() if lowered & words)
    mentions = tuple(dict.fromkeys(m.strip("./") for m in _PATH_MENTION.findall(query) + _DOTTED.findall(query)
                                   if len(m.strip("./")) > 2))
    return QueryTerms(weights, mentions, asked)


MAX_CHUNK_TERMS = 32  # the chunk retriever's share of a long query


MAX_IDENTIFIERS = 32


def named_identifiers(query: str) -> tuple[str, ...]:
    """The identifiers a query writes out whole (`NestedContainer`, `to_container`,
    `parseHeader`: 4+ characters, two or more sub-words), in order of first use, at most
    MAX_IDENTIFIERS (pure). A report naming one often asks about the file that defines it."""
    found = [w for w in _WORD.findall(without_template(query))
             if len(w) >= 4 and _CODED.search(w) and len(word_tokens(w)) > 1]
    return tuple(dict.fromkeys(found))[:MAX_IDENTIFIERS]


def chunk_terms(query: str) -> list[str]:
    """The chunk retriever's query terms: distinct tokens (identifier-aware), stop words
    dropped when others remain; of a long query (a bug report, a traceback) the
    MAX_CHUNK_TERMS that weigh most (`query_terms`), in query order (pure)."""
    return list(_chunk_terms(query))


@lru_cache(maxsize=_RECENT)  # see _RECENT
def _chunk_terms(query: str) -> tuple[str, ...]:
    terms = list(dict.fromkeys(tokenize(without_template(query))))
    content = [t for t in terms if t not in STOPWORDS]
    terms = content or terms
    if len(terms) > MAX_CHUNK_TERMS:
        weights = query_terms(query).weights
        keep = set(sorted(terms, key=lambda t: -weights.get(t, 0.0))[:MAX_CHUNK_TERMS])
        terms = [t for t in terms if t in keep]
    return tuple(terms)
