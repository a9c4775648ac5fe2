"""query.overview: counts over the entries it is given; languages by extension without an
index, largest first and capped."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from codeagent.query.overview import MAX_LANGUAGES, overview
from codeagent.query.sandbox import Entry

entry = st.builds(Entry, path=st.from_regex(r"[a-z]{1,6}(/[a-z]{1,6}){0,2}(\.[a-z]{1,3})?", fullmatch=True),
                  type=st.sampled_from(["file", "directory"]), size=st.integers(0, 10**6))


@given(st.lists(entry, max_size=60))
def test_counts_add_up(entries):
    o = overview(entries, None)
    files = [e for e in entries if e.type != "directory"]
    assert (o.total_files, o.total_directories) == (len(files), len(entries) - len(files))
    assert o.total_bytes == sum(e.size for e in files)
    assert [s.bytes for s in o.languages] == sorted((s.bytes for s in o.languages), reverse=True)
    assert len(o.languages) <= MAX_LANGUAGES
    if len({s.language for s in o.languages}) < MAX_LANGUAGES:
        assert sum(s.files for s in o.languages) == len(files)


def test_by_extension_without_an_index():
    o = overview([Entry("a.py", "file", 10), Entry("b/c.PY", "file", 5), Entry("b", "directory"),
                  Entry("Makefile", "file", 3)], None)
    assert [(s.language, s.files, s.bytes) for s in o.languages] == [(".py", 2, 15), ("Makefile", 1, 3)]
