"""The history translation trial: commit records from a real repository's diffs, nothing from
past the task's commit, and the word -> identifier associations they give."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from codeagent.eval import try_translation as tr
from tests.repo_helpers import GitRepo


def test_records_hold_the_message_words_and_the_changed_identifiers(tmp_path: Path) -> None:
    repo = GitRepo.create(tmp_path / "r")
    repo.write("net.py", "def fetch_url(url):\n    return open_socket(url)\n")
    first = repo.commit("Add downloading over sockets")
    repo.write("net.py", "def fetch_url(url):\n    return retry_socket(url)\n")
    second = repo.commit("Retry when the connection drops\n\nbody line mentions \x1e nothing")
    repo.write("ui.py", "def paint_red(text):\n    return text\n")
    repo.commit("Colours for the terminal")
    records = tr.commit_records(repo.path, [second])
    assert set(records) == {first, second}  # the later commit is not reachable from `second`
    words, idents = records[second]
    assert {"retry", "connection", "drops"} <= words and "the" not in words
    assert idents == {"return", "open_socket", "retry_socket", "url"}  # the changed lines only
    assert tr.reachable(repo.path, second, 1) == [second]


def test_a_word_translates_to_what_changes_with_it_more_than_at_all() -> None:
    rec = lambda words, idents: (frozenset(words), frozenset(idents))  # noqa: E731
    records = [rec({"retry"}, {"retry_socket", "url"}), rec({"retry", "timeout"}, {"retry_socket", "url"}),
               rec({"colour"}, {"paint_red", "url"}), rec({"colour"}, {"paint_red"})] + [rec({"docs"}, {"readme"})] * 6
    trans = tr.translations(records, {"retry", "colour", "missing"})
    assert set(trans) == {"retry", "colour"}  # a word seen in fewer than 2 commits says nothing
    idf, a = trans["retry"]
    assert idf == pytest.approx(math.log(10 / 2))
    assert a == {"retry_socket": pytest.approx(2 / (2 + tr.MU) - 2 / 10)}  # url changes as often without it
    mx, sm, norm = tr.file_scores(trans, {"retry_socket", "paint_red", "other"})
    assert mx == sm and norm == pytest.approx(sm / 3 ** 0.5)
    assert tr.file_scores(trans, {"nothing"}) == (0.0, 0.0, 0.0)
