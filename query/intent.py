"""Query intent: what a query looks like decides which index answers first (CodeCompass).

| intent           | looks like                                   | ranks first     |
| symbol           | an identifier: CamelCase, snake_case, a.b.c  | symbols         |
| path             | contains `/`, or ends in a file extension    | files           |
| error            | quotes, stack-trace lines, error codes       | text snippets   |
| natural_language | anything else                                | all, fused      |
"""

from __future__ import annotations

import re

SYMBOL = "symbol"
PATH = "path"
ERROR = "error"
NATURAL_LANGUAGE = "natural_language"
INTENTS = (SYMBOL, PATH, ERROR, NATURAL_LANGUAGE)

_IDENT = re.compile(r"[A-Za-z_$][\w$]*(?:(?:\.|::|#|->)[A-Za-z_$][\w$]*)*(?:\(\))?")
_EXTENSIONS = frozenset("""py pyi js jsx ts tsx mjs cjs go rs java kt kts scala c h cc cpp cxx hpp hh
cs rb php swift m mm lua sh bash zsh pl r jl ex exs erl hs ml mli clj dart vue svelte md rst txt
json yaml yml toml ini cfg conf xml html htm css scss sql proto gradle cmake mk lock""".split())
_PATHLIKE = re.compile(r"^[\w.@~+-]*(?:/[\w.@*+-]*)+/?$|^[\w@+-]+(?:[.-][\w@+-]+)*\.(\w{1,6})$")
_ERROR_MARKERS = re.compile(
    r"""Traceback \(most recent call last\)|\bFile "[^"]+", line \d+|^\s*at [\w.$<>]+\(|"""
    r"""\b\w*(?:Error|Exception|Exit|Fault|Panic|Warning)\b\s*:|\bpanicked at\b|\bsegmentation fault\b|"""
    r"""\b[A-Z]{1,4}\d{3,5}\b|\bE[A-Z]{3,}\b|:\d+:\d+\b|\berrno\b|["'`].{3,}["'`]""",
    re.IGNORECASE | re.MULTILINE)


def _is_identifier(q: str) -> bool:
    return bool(_IDENT.fullmatch(q))


def _is_path(q: str) -> bool:
    if " " in q:
        return False
    m = _PATHLIKE.match(q)
    if not m:
        return False
    ext = m.group(1)
    return ext is None or ext.lower() in _EXTENSIONS


def classify_intent(query: str) -> str:
    """One of INTENTS for a raw query string. Pure."""
    q = query.strip()
    if not q:
        return NATURAL_LANGUAGE
    if _is_path(q):
        return PATH
    if _is_identifier(q):
        return SYMBOL
    if _ERROR_MARKERS.search(q):
        return ERROR
    words = q.split()
    if len(words) <= 3 and all(_is_identifier(w) for w in words) and any(map(_looks_coded, words)):
        return SYMBOL
    return NATURAL_LANGUAGE


def _looks_coded(word: str) -> bool:
    """snake_case, camelCase, PascalCase with several humps, or dotted: not an English word."""
    humps = sum(1 for a, b in zip(word, word[1:]) if a.islower() and b.isupper())
    return "_" in word or "." in word or "::" in word or humps >= 1
