"""query.grep_texts (search_files over live files): a literal is matched by substring in
Python and agrees with RE2 given the same literal escaped; a regex is RE2 over Arrow arrays of
the lines and answers as the SQL scan that ran in an in-memory DuckDB before."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.errors import InvalidParameter
from codeagent.query import grep_texts, textscan
from codeagent.query.grep import _plan
from codeagent.query.globs import escape_re2

line = st.text(alphabet="abcAB .(*x\t", max_size=12)
texts = st.lists(st.tuples(st.from_regex(r"[a-z]{1,4}\.py", fullmatch=True),
                           st.lists(line, max_size=6).map("\n".join)),
                 max_size=5, unique_by=lambda t: t[0])


@settings(max_examples=60, deadline=None)
@given(texts=texts, needle=st.text(alphabet="abAB .(*", min_size=1, max_size=3),
       case_sensitive=st.booleans())
def test_literal_agrees_with_re2(texts, needle, case_sensitive):
    texts = sorted(texts)
    literal = grep_texts(texts, needle, regex=False, case_sensitive=case_sensitive, context=1)
    regex = grep_texts(texts, escape_re2(needle), regex=True, case_sensitive=case_sensitive,
                       context=1)
    assert literal == regex


def test_context_and_cap():
    text = "one\nneedle a\ntwo\nneedle b\nthree\n"
    matches, total, files, truncated = grep_texts([("a.txt", text)], "needle", regex=False,
                                                  context=1, max_results=1)
    assert [(m.line_number, m.line, m.before, m.after) for m in matches] == [
        (2, "needle a", ["one"], ["two"])]
    assert (total, files, truncated) == (2, 1, True)


# The SQL search_files ran before the scan moved to Arrow (an in-memory DuckDB per call): every
# line of each batch of texts, the empty one after a final newline too, ordered by path and
# line within the batch. The answers must not have changed.
_REFERENCE_SQL = """
WITH f AS (SELECT path, string_split(text, chr(10)) AS lines
           FROM (SELECT unnest(?::VARCHAR[]) AS path, unnest(?::VARCHAR[]) AS text)),
l AS (SELECT path, unnest(lines) AS line, generate_subscripts(lines, 1) AS n FROM f)
SELECT path, n, line FROM l WHERE {line_match} ORDER BY path, n
"""


def _line_condition(pattern: str, case_sensitive: bool) -> tuple[str, str]:
    """(the DuckDB condition on a `line`, its parameter) the SQL grep made of a pattern's plan
    (`contains` of its literals first, then RE2), before every grep scanned the resident texts."""
    scan = _plan(pattern, True, case_sensitive)
    if scan.line is None:
        return "contains(line, ?)", pattern
    cond = "regexp_matches(line, ?, 'i')" if scan.ignore_case else "regexp_matches(line, ?, 'c')"
    if scan.literals:
        found = " AND ".join(f"contains(line, '{lit.replace(chr(39), chr(39) * 2)}')" for lit in scan.literals)
        cond = f"CASE WHEN {found} THEN {cond} ELSE false END"
    return cond, scan.line


def _reference_rows(texts, pattern, case_sensitive):
    line_match, line_param = _line_condition(pattern, case_sensitive)
    con = duckdb.connect()
    try:
        rows = []
        for i in range(0, len(texts), textscan.TEXT_BATCH):
            batch = texts[i:i + textscan.TEXT_BATCH]
            rows += con.execute(_REFERENCE_SQL.format(line_match=line_match),
                                [[p for p, _ in batch], [t for _, t in batch], line_param]).fetchall()
        return rows
    finally:
        con.close()


atoms = st.sampled_from(["a", "b", "B", "é", "É", "x", " ", ".", "^", "$", "[ab]", "[^a]", "\\s",
                         "\\w", "\\bab", "(a|b)", "a*", "b+", "x?", "\\.", "\\(", "é+", "(?i)b"])
wide_line = st.text(alphabet="abAB xé É.(\t\r", max_size=10)
wide_texts = st.lists(st.tuples(st.from_regex(r"[a-z]{1,4}\.py", fullmatch=True),
                                st.lists(wide_line, max_size=6).map("\n".join)
                                | st.lists(wide_line, max_size=6).map(lambda ls: "\n".join(ls) + "\n")),
                      max_size=80, unique_by=lambda t: t[0])


@settings(max_examples=150, deadline=None)
@given(texts=wide_texts, pattern=st.lists(atoms, min_size=1, max_size=4).map("".join),
       case_sensitive=st.booleans())
def test_a_regex_answers_as_the_sql_scan_did(texts, pattern, case_sensitive):
    try:
        expected = _reference_rows(texts, pattern, case_sensitive)
    except duckdb.InvalidInputException:
        with pytest.raises(InvalidParameter):
            grep_texts(texts, pattern, case_sensitive=case_sensitive, max_results=10_000)
        return
    matches, total, files, truncated = grep_texts(texts, pattern, case_sensitive=case_sensitive,
                                                  context=0, max_results=10_000)
    assert [(m.path, m.line_number, m.line) for m in matches] == \
        [(p, n, line.rstrip("\r")) for p, n, line in expected]
    assert (total, files, truncated) == (len(expected), len({r[0] for r in expected}), False)


def test_an_invalid_regex_is_a_clear_error():
    with pytest.raises(InvalidParameter) as err:
        grep_texts([("a.py", "x(\n")], "x(", regex=True)
    assert "invalid regular expression 'x('" in err.value.message
    assert "missing )" in err.value.message
