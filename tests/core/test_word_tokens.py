"""`word_tokens` and `split_identifier` match the whole word with the sub-word pattern in one
call; they must give exactly the tokens of splitting on "_" and matching each piece."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.tokenize import _SUBWORD, MAX_TOKEN, MIN_TOKEN, split_identifier, tokenize, word_tokens


def piecewise_split(word: str) -> list[str]:
    """split_identifier as it was written before: split on "_", then match each piece."""
    parts: list[str] = []
    for piece in word.split("_"):
        parts.extend(m.group(0).lower() for m in _SUBWORD.finditer(piece))
    return parts


def reference_tokens(word: str) -> tuple[str, ...]:
    """word_tokens as it was written before: whole word, then split_identifier's sub-words."""
    whole = word.lower().strip("_")
    out = [whole] if MIN_TOKEN <= len(whole) <= MAX_TOKEN else []
    subs = piecewise_split(word)
    if len(subs) > 1:
        out.extend(s for s in subs if len(s) >= MIN_TOKEN and s != whole)
    return tuple(out)


# identifiers built from the pieces that make the pattern's cases: runs of capitals before a
# capitalised word (HTTPResponse), digits after letters, leading/trailing/double underscores
_PIECES = st.sampled_from(["_", "__", "a", "ab", "Ab", "AB", "ABc", "HTTP", "Response", "v", "2",
                           "10", "x1", "X", "parse", "URLs", "É", "é", "ß"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=8).map("".join))
def test_word_tokens_equal_the_piecewise_split(word: str) -> None:
    assert word_tokens.__wrapped__(word) == reference_tokens(word)
    assert split_identifier(word) == piecewise_split(word)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="ascii", categories=["L", "N", "Pc"]), min_size=1, max_size=24))
def test_word_tokens_equal_the_piecewise_split_on_any_ascii_word(word: str) -> None:
    assert word_tokens.__wrapped__(word) == reference_tokens(word)
    assert split_identifier(word) == piecewise_split(word)


def test_known_words() -> None:
    assert word_tokens("parseHTTPResponse_v2") == ("parsehttpresponse_v2", "parse", "http", "response")
    assert word_tokens("__init__") == ("init",)
    assert word_tokens("x") == ()
    assert word_tokens("MAX_TOKEN") == ("max_token", "max", "token")
    assert tokenize("getUser(2024)") == ["getuser", "get", "user", "2024"]
