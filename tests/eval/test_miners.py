"""Dataset miners on temp repositories with a scripted history."""

from __future__ import annotations

import ast
import subprocess

import pytest

from codeagent.eval.cases import DocSpan, EvalCase, GoldSymbol, case_from_dict, dump_jsonl, load_jsonl
from codeagent.eval.datasets import load_dataset, mine_commits, mine_definitions, mine_descriptions
from codeagent.eval.gitdata import read_blob, read_commits, variant_commit
from codeagent.eval.mine_definitions import ctags_available
from codeagent.eval.mine_commits import CommitFilter, clean_message, commit_cases, is_test_path
from codeagent.eval.mine_descriptions import strip_spans
from codeagent.errors import InvalidParameter

needs_ctags = pytest.mark.skipif(not ctags_available(),
                                 reason="universal-ctags not installed (apt-get install universal-ctags)")

PARSER = '''"""Parsing."""


def tokenize(text):
    """Split the input text into words separated by blanks."""
    return text.split()


class Reader:
    """Reads records from a stream of lines, one per call."""

    def next_record(self):
        """Return the following record or None at the end of the stream."""
        return None

    def close(self):
        """Close."""
'''
RENDER = "def render(rows):\n    return '\\n'.join(rows)\n"
C_FILE = """#include <stdio.h>

/* Compute the checksum of a block of bytes
 * using the additive rule. */
int block_checksum(const char *p, int n) {
    return 0;
}
"""


@pytest.fixture
def history(git_repo):
    """A small project whose commits exercise every filter of the commits miner."""
    r = git_repo
    r.write_many({"pkg/parser.py": PARSER, "pkg/render.py": RENDER, "tests/test_parser.py": "def test(): pass\n",
                  "README.md": "# project\n", "lib/sum.c": C_FILE})
    shas = {"root": r.commit("Initial import of the project")}
    r.write("pkg/parser.py", PARSER + "\n# empty input\n")
    r.write("tests/test_parser.py", "def test(): assert True\n")
    shas["fix"] = r.commit("Handle empty input in the tokenizer (#12)\n\nSee https://example.com/x for "
                           "details.\n\nSigned-off-by: Dev <dev@example.com>")
    r.write("README.md", "# project\n\nmore docs\n")
    shas["docs"] = r.commit("Document the project layout and its goals")
    r.write("tests/test_parser.py", "def test(): assert 1\n")
    shas["tests"] = r.commit("Make the parser test stricter than before")
    r.write("pkg/parser.py", PARSER + "\n# named\n")
    shas["named"] = r.commit("Fix a crash in parser.py when input is empty")
    r.write("pkg/new.py", "x = 1\n")
    shas["added"] = r.commit("Add a brand new module for later work")
    r.write_many({"pkg/render.py": RENDER + "# a\n", "pkg/parser.py": PARSER + "# b\n", "lib/sum.c": C_FILE + "\n"})
    shas["wide"] = r.commit("Touch rendering and parsing and summing all at once")
    r.checkout("feature", create=True)
    r.write("pkg/render.py", RENDER + "# feature\n")
    shas["feature"] = r.commit("Render rows with a trailing newline on the feature branch")
    r.checkout("main")
    r.repo.git.merge("feature", "--no-ff", "-m", "Merge the feature branch into main for release")
    shas["merge"] = r.repo.head.commit.hexsha
    return r, shas


def test_clean_message_drops_trailers_urls_and_issue_numbers():
    msg = "Fix the frobnicator (#123)\n\nCloses #7, see https://x.org/a?b=1 and GH-9.\n\nCo-authored-by: A <a@b>\nSigned-off-by: B <b@c>"
    assert clean_message(msg) == "Fix the frobnicator, see and."
    assert clean_message("Only a subject line: keep it") == "Only a subject line: keep it"


def test_test_paths():
    assert is_test_path("tests/x.py") and is_test_path("pkg/test_x.py") and is_test_path("a/b_test.go")
    assert is_test_path("web/app.spec.ts") and is_test_path("conftest.py")
    assert not is_test_path("pkg/contest.py") and not is_test_path("src/testimony.py")


def test_commits_miner_applies_every_filter(history):
    repo, shas = history
    commits = read_commits(repo.path, "HEAD")
    assert {c.sha for c in commits} == set(shas.values())
    cases = {c.id: c for c in commit_cases(commits)}
    fix = cases.pop(f"commit-{shas['fix'][:12]}")
    assert fix.query == "Handle empty input in the tokenizer See for details."
    assert fix.gold_files == ("pkg/parser.py",) and fix.ref == shas["root"] and fix.kind == "commits"
    wide = cases.pop(f"commit-{shas['wide'][:12]}")
    assert wide.gold_files == ("lib/sum.c", "pkg/parser.py", "pkg/render.py")
    feature = cases.pop(f"commit-{shas['feature'][:12]}")
    assert feature.gold_files == ("pkg/render.py",)
    assert cases == {}  # root, docs-only, test-only, file named, only-added, merge: all filtered
    narrow = {c.id for c in commit_cases(commits, CommitFilter(max_changed_files=2))}
    assert f"commit-{shas['wide'][:12]}" not in narrow
    assert len(mine_commits(repo.path, "HEAD", limit=2, seed=1)) == 2


def test_commits_miner_skips_and_takes_the_newest(history):
    repo, _ = history
    newest_first = [c.id for c in commit_cases(read_commits(repo.path, "HEAD"))]
    assert len(newest_first) == 3
    assert [c.id for c in mine_commits(repo.path, "HEAD", None, 0, newest=True)] == newest_first
    assert [c.id for c in mine_commits(repo.path, "HEAD", 1, 0, newest=True)] == newest_first[:1]
    assert [c.id for c in mine_commits(repo.path, "HEAD", 1, 0, skip=1, newest=True)] == newest_first[1:2]
    assert [c.id for c in mine_commits(repo.path, "HEAD", None, 0, skip=2)] == newest_first[2:]
    assert mine_commits(repo.path, "HEAD", None, 0, skip=3) == []
    with pytest.raises(InvalidParameter, match="select commits by age"):
        load_dataset("definitions", repo.path, "HEAD", None, 0, skip=1)


@needs_ctags
def test_definitions_miner_uses_ctags_ground_truth(history):
    repo, shas = history
    cases = {c.query: c for c in mine_definitions(repo.path, "HEAD", limit=None, seed=0)}
    assert cases["tokenize"].gold_symbols == (GoldSymbol("pkg/parser.py", "tokenize", 4),)
    assert cases["next_record"].gold_symbols == (GoldSymbol("pkg/parser.py", "next_record", 12),)
    assert cases["block_checksum"].gold_files == ("lib/sum.c",)
    assert cases["Reader"].ref == repo.repo.head.commit.hexsha
    assert "test" not in cases  # defined in a test file only
    assert not any(q.startswith("__") for q in cases)
    sampled = mine_definitions(repo.path, "HEAD", limit=2, seed=5)
    assert len(sampled) == 2 and sampled == mine_definitions(repo.path, "HEAD", limit=2, seed=5)


@needs_ctags
def test_descriptions_miner_and_doc_stripping(history):
    repo, shas = history
    cases = {c.gold_symbols[0].name: c for c in mine_descriptions(repo.path, "HEAD", limit=None, seed=0)}
    tok = cases["tokenize"]
    assert tok.query == "Split the input text into words separated by blanks."
    assert tok.strip_docs == (DocSpan("pkg/parser.py", 5, 5, "..."),)
    assert cases["Reader"].query == "Reads records from a stream of lines, one per call."
    assert cases["block_checksum"].query == "Compute the checksum of a block of bytes using the additive rule."
    assert cases["block_checksum"].strip_docs == (DocSpan("lib/sum.c", 3, 4, ""),)
    assert "close" not in cases  # "Close." is too short to be a description
    spans = [s for c in cases.values() for s in c.strip_docs if s.path == "pkg/parser.py"]
    stripped = strip_spans(PARSER, spans)
    assert len(stripped.splitlines()) == len(PARSER.splitlines())
    ast.parse(stripped)
    assert "Split the input" not in stripped and "def tokenize(text):\n    ...\n" in stripped


def test_variant_commit_leaves_the_original_alone(history):
    repo, shas = history
    head = repo.repo.head.commit.hexsha
    variant = variant_commit(repo.path, head, {"pkg/parser.py": b"stripped\n"})
    assert read_blob(repo.path, variant, "pkg/parser.py") == b"stripped\n"
    assert read_blob(repo.path, variant, "pkg/render.py") == read_blob(repo.path, head, "pkg/render.py")
    assert repo.repo.head.commit.hexsha == head
    assert subprocess.run(["git", "-C", str(repo.path), "status", "--porcelain"], capture_output=True,
                          text=True).stdout == ""
    assert variant_commit(repo.path, head, {"pkg/parser.py": b"stripped\n"}) == variant  # deterministic


def test_jsonl_round_trip_and_validation(tmp_path):
    case = EvalCase("find the parser", "abc123", ("a.py",), (GoldSymbol("a.py", "parse", 3),), kind="user",
                    strip_docs=(DocSpan("a.py", 4, 5, "..."),))
    path = tmp_path / "d.jsonl"
    path.write_text(dump_jsonl([case]))
    [back] = load_jsonl(path)
    assert back.gold_symbols == case.gold_symbols and back.strip_docs == case.strip_docs
    only_symbols = case_from_dict({"query": "q", "ref": "HEAD", "gold_symbols": ["b.py::mod.Cls.meth"]})
    assert only_symbols.gold_files == ("b.py",) and only_symbols.gold_symbols == (GoldSymbol("b.py", "meth"),)
    for bad in ({"ref": "HEAD", "gold_files": ["a"]}, {"query": "q", "ref": "HEAD"},
                {"query": "q", "gold_files": ["a"]}, {"query": "q", "ref": "H", "gold_files": "a.py"}):
        with pytest.raises(InvalidParameter):
            case_from_dict(bad)
    assert case_from_dict({"query": "q", "gold_files": ["a"]}, default_ref="main").ref == "main"
