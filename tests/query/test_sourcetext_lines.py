"""A reader's file lines (`sourcetext.Lines`, cut from the mapped UTF-8 bytes) read
exactly as `text.split("\\n")` does, for long-lived and one-shot readers, and the mapped column
hands out each text's bytes."""

from __future__ import annotations

import os
import time

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from codeagent.format.resident import StringColumn
from codeagent.indexer.build import BuildOptions, build
from codeagent.query import open_index
from codeagent.query.assembly_check import _verified
from codeagent.query.memtext import mapped_texts
from codeagent.query.sourcetext import Lines, best_window, file_lines, snippet, span_text

# Lines of any code points (multi-byte ones too), empty lines, CRLF endings.
TEXTS = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(["", "\r", "é ü", "中文", "a\r"])),
                 max_size=12).map("\n".join)
INDEXES = st.integers(min_value=-15, max_value=15)


@settings(max_examples=200, deadline=None)
@given(TEXTS, INDEXES, INDEXES, st.sampled_from([None, 1, 2, -1]))
def test_lines_read_like_the_split_text(text, a, b, step):
    want = text.split("\n")
    got = Lines(memoryview(text.encode("utf-8")))
    assert len(got) == len(want)
    assert list(got) == want
    assert [got[i] for i in range(len(want))] == want
    assert [got[-i] for i in range(1, len(want) + 1)] == [want[-i] for i in range(1, len(want) + 1)]
    assert got[a:b:step] == want[a:b:step]


@settings(max_examples=100, deadline=None)
@given(TEXTS, st.integers(1, 14), st.integers(0, 14), st.sets(st.sampled_from(["a", "b", "x1", "中文"])))
def test_snippets_cut_from_lines_match_the_list(text, start, end, terms):
    want, got = text.split("\n"), Lines(text.encode("utf-8"))
    assert span_text(got, start, end) == span_text(want, start, end)
    assert best_window(got, start, max(end, start), terms) == best_window(want, start, max(end, start), terms)
    assert snippet(got, start, max(end, start), terms) == snippet(want, start, max(end, start), terms)


def test_lines_out_of_range_raise_index_error():
    got = Lines(b"one\ntwo")
    assert got[1] == "two" and got[-2] == "one"
    for bad in (2, -3):
        try:
            got[bad]
        except IndexError:
            continue
        raise AssertionError(f"index {bad} did not raise")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=20)), max_size=20), st.booleans())
def test_string_column_raw_is_each_values_utf8(values, dictionary):
    array = pa.array(values, pa.string())
    if dictionary:
        array = array.dictionary_encode()
    column = StringColumn(array)
    for i, value in enumerate(values):
        raw = column.raw(i)
        assert (None if raw is None else bytes(raw).decode("utf-8")) == value


def _flip(path, at: int) -> None:
    """One byte changed in place, mtime put back (only the ctime moves)."""
    st = path.stat()
    with open(path, "r+b") as fh:
        fh.seek(at)
        byte = fh.read(1)
        fh.seek(at)
        fh.write(bytes([byte[0] ^ 0xFF]))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_one_shot_reader_cuts_lines_from_the_mapped_texts_and_falls_back_to_the_shards(git_repo):
    text = "def alpha():\n    return 'é'\r\n\nclass Beta:\n    pass\n"
    git_repo.write("m.py", text)
    git_repo.write("n.py", "x = 1\n")
    git_repo.commit()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    time.sleep(0.15)  # past the stamp's ctime margin
    with open_index(git_repo.path) as view:
        got = file_lines(view, ["m.py", "n.py", "absent.py"])
        assert isinstance(got["m.py"], Lines) and list(got["m.py"]) == text.split("\n")
        assert list(got["n.py"]) == ["x = 1", ""] and "absent.py" not in got
        array = view.path.parent / "resident.texts.blocks.arrow"
    _flip(array, at=array.stat().st_size // 2)
    _verified.clear()  # a new process: nothing checked yet
    with open_index(git_repo.path) as view:  # a damaged texts array: the file's shard answers alike
        got = file_lines(view, ["m.py"])
        assert mapped_texts(view) is None and list(got["m.py"]) == text.split("\n")
