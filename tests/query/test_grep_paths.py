"""grep answers the same on the index file (whole-text match, then split lines) and on the
in-memory copy (pre-split lines; literal-only file prefilter when RE2 has no literal prefix),
for random patterns, and both agree with a line-by-line oracle."""

from __future__ import annotations

import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codeagent.query import grep, open_index

from .conftest import build_repo

WORDS = ["raise", "Error(", "def ", "class ", "ValueError", "_handler(", "self", "x = 1", "ABC_DEF = 42",
         "return", "  ", "\t", "(", ")", "import os", "OSError", "it's", "a", "Z", "9"]


def _corpus(seed: int = 7, files: int = 48) -> dict[str, str]:
    rnd = random.Random(seed)
    out = {}
    for i in range(files):
        lines = ["".join(rnd.choice(WORDS) for _ in range(rnd.randint(0, 6))) for _ in range(rnd.randint(0, 40))]
        text = "\n".join(lines) + ("\n" if rnd.random() < 0.7 else "")
        out[f"pkg{i % 3}/m{i:02d}.py"] = text if i != 5 else "it's a 'quoted' path\n"
    out["empty.py"] = ""
    return out


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    repo = build_repo(tmp_path_factory.mktemp("greppaths") / "repo", _corpus())
    with open_index(repo.path, ref="main") as disk, open_index(repo.path, ref="main") as mem:
        mem.keep_text_in_memory = True
        yield disk, mem, repo


# Pieces whose meaning is the same in RE2 and Python's `re` on ASCII lines without newlines.
ATOMS = ["raise", "Error\\(", "def ", "class ", "Value", "_handler\\(", "self", "ABC", "42", "it's",
         "\\w+", "\\s*", "\\d+", "[A-Z]{3,}", "[a-z]+", " = ", "\\(", "x", "os", ".", ".*"]
PATTERNS = st.builds(
    lambda anchor, atoms, alt, end: anchor + ("|".join(alt) if alt else "".join(atoms)) + end,
    st.sampled_from(["", "^", "^\\s*"]), st.lists(st.sampled_from(ATOMS), min_size=1, max_size=4),
    st.one_of(st.just([]), st.lists(st.sampled_from(ATOMS), min_size=2, max_size=3)),
    st.sampled_from(["", "", "$"]))


def _oracle(repo, pattern: str, case_sensitive: bool) -> list[tuple[str, int]]:
    rx = re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)
    out = []
    for path, text in sorted(_corpus().items()):
        for n, line in enumerate(text.split("\n")[:len(text.splitlines())], 1):
            if rx.search(line):
                out.append((path, n))
    return out


def _answer(view, pattern: str, **kw) -> tuple:
    r = grep(view, pattern, max_results=kw.pop("max_results", 10_000), **kw)
    return [m.to_dict() for m in r.matches], r.total_matches, r.files_matched, r.truncated


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=PATTERNS, case_sensitive=st.booleans(), context=st.integers(0, 2))
def test_memory_copy_answers_like_the_index_file_and_the_oracle(views, pattern, case_sensitive, context):
    disk, mem, repo = views
    a = _answer(disk, pattern, case_sensitive=case_sensitive, context=context)
    b = _answer(mem, pattern, case_sensitive=case_sensitive, context=context)
    assert a == b
    assert [(m["path"], m["line_number"]) for m in a[0]] == _oracle(repo, pattern, case_sensitive)
    assert a[1] == len(a[0]) and a[2] == len({m["path"] for m in a[0]})


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(pattern=PATTERNS, max_results=st.integers(1, 30))
def test_capped_answers_agree_and_count_every_matching_file(views, pattern, max_results):
    disk, mem, repo = views
    a = _answer(disk, pattern, max_results=max_results, context=0)
    b = _answer(mem, pattern, max_results=max_results, context=0)
    assert a[0] == b[0] and a[3] == b[3]
    files = len({p for p, _ in _oracle(repo, pattern, True)})
    if a[3]:  # truncated: unread files counted by their whole text (a superset) or exactly
        assert a[2] >= files and b[2] >= files
    else:
        assert a[2] == b[2] == files


def test_literal_only_prefilter_is_taken_and_exact(views):
    disk, mem, _ = views
    from codeagent.query.grep import _plan

    assert not _plan(r"^\s*raise \w+Error\(", True, True, whole_text=False).by_match
    assert _plan(r"^\s*raise \w+Error\(", True, True).by_match
    for pattern in [r"^\s*raise \w+Error\(", r"[A-Z]{3,}_[A-Z]+ = \d+", "it's", r"\(x"]:
        assert _answer(disk, pattern, context=1) == _answer(mem, pattern, context=1)
