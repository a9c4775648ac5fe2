"""The offline semantic-feature trial: which text of a file feeds each vector, files read at a
commit with git, and the cosine columns on a real repository's files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeagent.eval import try_semantic
from tests.repo_helpers import GitRepo

CODE = '''"""Parse the configuration file."""
import os

# read the settings from disk
def load_settings(path):
    value = os.environ.get("HOME")  # fall back to home
    return value

class ConfigParser:
    """Holds parsed options."""
    x = 1
'''


def test_prose_is_comments_and_docstrings_or_a_whole_document() -> None:
    prose = try_semantic.prose_lines("cfg.py", CODE)
    assert "Parse the configuration file" in prose and "read the settings from disk" in prose
    assert "fall back to home" in prose and "Holds parsed options" in prose
    assert "import os" not in prose and "os.environ" not in prose and "x = 1" not in prose
    assert try_semantic.prose_lines("README.md", "x = 1\n") == "x = 1\n"


def test_names_are_the_path_and_what_the_file_defines() -> None:
    java = "public class Pool {\n  private static int evictIdle(long now) {\n    return call(now);\n  }\n}\n"
    assert try_semantic.defined_names("src/Pool.java", java).split() == ["src/Pool.java", "Pool", "evictIdle"]
    assert try_semantic.defined_names("a/cfg.py", CODE).split() == ["a/cfg.py", "load_settings", "ConfigParser"]
    js = "const retry = async () => 1;\nfunction backoff(n) {}\nlet n = 3;\n"
    assert try_semantic.defined_names("r.js", js).split() == ["r.js", "retry", "backoff"]


def test_rank_and_z_are_relative_to_the_task() -> None:
    assert try_semantic.rank_of(np.array([0.2, 0.9, 0.2, 0.5])).tolist() == [1 / 3, 1.0, 1 / 3, 0.5]
    assert try_semantic.z_of(np.array([1.0, 3.0])).tolist() == [-1.0, 1.0]
    assert try_semantic.z_of(np.array([0.4, 0.4])).tolist() == [0.0, 0.0]


@pytest.fixture(scope="module")
def words() -> try_semantic.Words:
    return try_semantic.Words()


def test_files_at_a_commit_and_their_columns(tmp_path: Path, words: try_semantic.Words) -> None:
    repo = GitRepo.create(tmp_path / "r")
    repo.write_many({"net/download.py": "def download_file(url):\n    # fetch the bytes over http\n    return get(url)\n",
                     "ui/colors.py": "def paint_red(text):\n    # terminal colour codes\n    return text\n",
                     "logo.png": b"\x89PNG\0\0binary"})
    first = repo.commit("one")
    repo.write("ui/colors.py", "def paint_blue(text):\n    return text\n")
    repo.commit("two")
    files = try_semantic.Repo(repo.path, words).at(first)
    assert sorted(files) == ["net/download.py", "ui/colors.py"]  # the binary is left out
    paths = ["ui/colors.py", "net/download.py", "gone.py"]
    cols = try_semantic.task_columns(words, files, "fetch a file over http from a url", paths)
    assert sorted(cols) == sorted(try_semantic.FORMS)
    for form in ("sem_all", "sem_all_tf", "sem_prose", "sem_names"):
        assert cols[form][1] > cols[form][0], form
        assert cols[form][2] == 0.0
        assert -1.0 <= min(cols[form]) and max(cols[form]) <= 1.0 + 1e-9
    later = set(try_semantic.Repo(repo.path, words).at("HEAD")["ui/colors.py"]["names"][0].tolist())
    assert set(words.counts("paint blue")[0].tolist()) <= later
    assert not set(words.counts("red")[0].tolist()) & later


def test_the_minilm_summary_is_the_path_and_defined_names_as_words() -> None:
    assert try_semantic._summary("a/cfg.py", CODE) == "a/cfg.py: load settings config parser"
