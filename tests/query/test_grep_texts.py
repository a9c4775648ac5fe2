"""query.grep_texts (search_files over live files): a literal is matched by substring in
Python and agrees with RE2 (through DuckDB) given the same literal escaped."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.query import grep_texts
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
