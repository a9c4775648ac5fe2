"""Pure parts of the query engine: intent classification, globs, rank fusion."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.errors import InvalidParameter
from codeagent.query.globs import escape_re2, glob_to_regex
from codeagent.query.intent import ERROR, NATURAL_LANGUAGE, PATH, SYMBOL, classify_intent
from codeagent.query.ranking.fuse import blend_weights, fuse


@pytest.mark.parametrize("query,intent", [
    ("parse_http_response", SYMBOL), ("HttpClient", SYMBOL), ("os.path.join", SYMBOL),
    ("auth::jwt::validate_token", SYMBOL), ("fetchJson()", SYMBOL), ("RateLimiter check", SYMBOL),
    ("src/auth/jwt.rs", PATH), ("client.ts", PATH), ("app/", PATH), ("docs/guide.md", PATH),
    ('Traceback (most recent call last):\n  File "x.py", line 3', ERROR),
    ("KeyError: 'missing'", ERROR), ("error E0308 mismatched types", ERROR),
    ('"connection refused"', ERROR), ("panicked at src/main.rs:10:5", ERROR),
    ("where is rate limiting implemented", NATURAL_LANGUAGE), ("how do we parse config", NATURAL_LANGUAGE),
    ("", NATURAL_LANGUAGE),
])
def test_classify_intent(query, intent):
    assert classify_intent(query) == intent


@settings(deadline=None)
@given(st.text(max_size=200))
def test_classify_intent_is_total(query):
    assert classify_intent(query) in (SYMBOL, PATH, ERROR, NATURAL_LANGUAGE)


GLOB_CASES = [
    ("*.py", "a/b/c.py", True), ("*.py", "c.py", True), ("*.py", "c.pyi", False),
    ("src/**/*.ts", "src/a/b/x.ts", True), ("src/**/*.ts", "src/x.ts", True),
    ("src/**/*.ts", "lib/src/x.ts", False), ("src/*.ts", "src/a/x.ts", False),
    ("docs/", "docs/guide.md", True), ("docs", "docs/guide.md", True),
    ("*.{md,txt}", "notes.txt", True), ("*.{md,txt}", "a.rs", False),
    ("test_?.py", "t/test_1.py", True), ("[ab].py", "a.py", True), ("[!ab].py", "a.py", False),
    ("**/**/**/x", "a/b/x", True), ("a+b.py", "a+b.py", True), ("a+b.py", "aab.py", False),
]


def test_globs_in_duckdb():
    con = duckdb.connect()
    for glob, path, expected in GLOB_CASES:
        got = con.execute("SELECT regexp_full_match(?, ?)", [path, glob_to_regex(glob)]).fetchone()[0]
        assert got == expected, (glob, path)
    with pytest.raises(InvalidParameter):
        glob_to_regex("{a,b")


CON = duckdb.connect()


@settings(deadline=None)
@given(st.text(max_size=30))
def test_escape_re2_matches_itself_literally(text):
    assert CON.execute("SELECT regexp_full_match(?, ?, 's')", [text, escape_re2(text)]).fetchone()[0]


@settings(deadline=None)
@given(st.dictionaries(st.sampled_from(["symbol", "text", "path"]),
                       st.lists(st.integers(0, 20), unique=True, max_size=15), min_size=1),
       st.floats(0.1, 2.0))
def test_fuse_properties(lists, w):
    weights = {"symbol": w, "text": 1.0, "path": 0.5}
    fused = fuse(lists, weights)
    keys = [k for k, _ in fused]
    assert len(keys) == len(set(keys)) == len(set().union(*map(set, lists.values())))
    scores = [s for _, s in fused]
    assert scores == sorted(scores, reverse=True)
    for name, items in lists.items():
        if len(lists) == 1 and items:
            assert keys == items  # one list: order kept


def test_fuse_rewards_agreement_and_ignores_zero_weights():
    fused = dict(fuse({"a": [1, 2, 3], "b": [3, 4]}, {"a": 1.0, "b": 1.0}))
    assert fused[3] > fused[2]
    assert 4 in fused
    assert fuse({"a": [1], "b": [2]}, {"a": 1.0, "b": 0.0}) == [(1, 1.0 / 61)]


def test_blend_weights_semantic_share():
    assert blend_weights(NATURAL_LANGUAGE, 1.0)["text"] == 0.0
    assert blend_weights(NATURAL_LANGUAGE, 0.0)["semantic"] == 0.0
    assert blend_weights(SYMBOL)["symbol"] > blend_weights(SYMBOL)["text"]


@pytest.mark.parametrize("pattern,literal", [
    (r"def \w+_handler\(", "_handler("), (r"^\s*raise \w+Error\(", "raise "), ("OrderedDict", "OrderedDict"),
    ("colou?r", "colo"), ("ab*cdef", "cdef"), ("foo|bar", None), ("x(abc)?yyy", None),
    (r"a\.b\.c", "a.b.c"), ("fo{2,}bar", "bar"), (r"\x41BCD", None), ("[A-Z]+_FOO", None), ("ab", None),
])
def test_required_literal_examples(pattern, literal):
    from codeagent.query.literals import required_literal

    assert required_literal(pattern) == literal


ATOMS = ["a", "b", "c", "ab", "abc", r"\.", ".", "a*", "b?", "c+", r"\w", "[ab]", "(ab)?", "b{2}",
         "^", "$", " ", r"\s+", "(a|b)"]


@settings(deadline=None, max_examples=200)
@given(st.lists(st.sampled_from(ATOMS), min_size=1, max_size=6).map("".join),
       st.lists(st.text(alphabet="abc. x", max_size=12), min_size=1, max_size=20))
def test_required_literal_is_in_every_match(pattern, texts):
    from codeagent.query.literals import required_literal

    literal = required_literal(pattern)
    if literal is None:
        return
    for text in texts:
        if CON.execute("SELECT regexp_matches(?, ?)", [text, pattern]).fetchone()[0]:
            assert literal in text, (pattern, literal, text)


def test_glob_matcher_agrees_with_the_duckdb_translation():
    from codeagent.query.globs import glob_matcher

    for glob, path, expected in GLOB_CASES:
        assert glob_matcher(glob)(path) == expected, (glob, path)


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet="ab/*?.[]!", min_size=1, max_size=10), st.text(alphabet="ab/.", max_size=12))
def test_glob_matcher_equals_re2_translation(glob, path):
    """Negation included: a leading `!` is applied by the caller of the RE2 pattern
    (filters.FileFilter.where) and by the matcher itself."""
    from codeagent.query.globs import glob_matcher, negated

    try:
        positive, negate = negated(glob)
        rx = glob_to_regex(positive)
        matcher = glob_matcher(glob)
    except InvalidParameter:
        return
    try:
        want = CON.execute("SELECT regexp_full_match(?, ?)", [path, rx]).fetchone()[0] != negate
    except duckdb.Error:
        return  # a class RE2 rejects (e.g. `[]`): not a glob anyone can use
    assert matcher(path) == want, (glob, rx, path)


def test_glob_matcher_is_linear_on_hostile_globs():
    import time

    from codeagent.query.globs import glob_matcher

    started = time.process_time()  # CPU seconds: a loaded machine stretches wall time only
    assert not glob_matcher("*a*a*a*a*a*a*a*a*a*a*b")("a" * 300)
    assert time.process_time() - started < 1.0


def _osa(a: str, b: str) -> int:
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[-1][-1]


@settings(deadline=None, max_examples=300)
@given(st.text(alphabet="abc_", max_size=9), st.text(alphabet="abc_", max_size=9), st.integers(0, 3))
def test_banded_damerau_levenshtein_matches_the_full_table(a, b, limit):
    from codeagent.query.names import damerau_levenshtein

    assert damerau_levenshtein(a, b, limit) == min(_osa(a, b), limit + 1)
