"""Arguments a new user gets wrong, and help that must say what the code does: unknown filter
values are refused with the valid ones listed, documented aliases and `::` are understood, the
build's summary adds up."""

from __future__ import annotations

import re

import pytest

from codeagent.errors import QualityRegression


@pytest.fixture
def repo(git_repo, cli):
    git_repo.write_many({"m.py": "class Foo:\n    def bar(self):\n        return 1\n",
                         "t.ts": "export class Ts {\n  go(): number { return 1 }\n}\n",
                         "logo.png": b"\x89PNG\r\n\x1a\n\0\0" + bytes(range(256))})
    git_repo.commit("init")
    return git_repo


def test_language_aliases_and_unknown_languages(repo, cli):
    cli("build", repo.path, check=True)
    ts = cli("search", "go", "--lang", "ts", "--repo", repo.path, check=True)
    assert "t.ts" in ts.stdout and "m.py" not in ts.stdout
    bad = cli("search", "go", "--lang", "tss", "--repo", repo.path)
    assert bad.returncode == 2
    assert "no indexed files of language 'tss'" in bad.stderr
    assert "languages in this index: python, typescript" in bad.stderr


def test_unknown_kinds_are_refused_with_the_valid_ones(repo, cli):
    cli("build", repo.path, check=True)
    bad = cli("search", "bar", "--kind", "banana", "--repo", repo.path)
    assert bad.returncode == 2 and "unknown symbol kind 'banana'" in bad.stderr
    assert re.search(r"kinds: .*\bfn\b.*\bmethod\b", bad.stderr)
    ok = cli("search", "bar", "--kind", "fn", "--repo", repo.path, check=True)
    assert "m.Foo.bar" in ok.stdout


@pytest.mark.parametrize("handle", ["Foo::bar", "Foo#bar", "Foo.bar"])
def test_show_folds_separators(repo, cli, handle):
    cli("build", repo.path, check=True)
    shown = cli("show", handle, "--repo", repo.path)
    assert shown.returncode == 0, shown.stderr
    assert "method m.Foo.bar" in shown.stdout


def test_the_build_summary_adds_up(repo, cli):
    out = cli("build", repo.path, check=True).stdout
    total, indexed, skipped = map(int, re.search(r"(\d+) files: (\d+) indexed, (\d+) skipped", out).groups())
    assert (total, indexed, skipped) == (3, 2, 1)
    assert "skipped 1 (binary)" in out


def test_help_says_what_the_code_does(cli):
    assert f"plus {QualityRegression.exit_code} when --compare" in " ".join(cli("eval", "--help").stdout.split())
    assert "static" in cli("build", "--help").stdout
    assert "130 interrupted" in " ".join(cli("--help").stdout.split())
