"""`.codeagentignore` (gitignore syntax) and `[tool.codeagent]` / `.codeagent.toml`: what they
leave out is neither listed nor read, in the work tree and in committed trees alike; a file we
cannot read is a clear error and the previous index stays."""

from __future__ import annotations

import json

import pytest

from codeagent.errors import InvalidParameter
from codeagent.format.manifest import load_manifest
from codeagent.repo_config import load_rules
from codeagent.store import Store


def _paths(git_repo, ref: str) -> set[str]:
    store = Store(git_repo.path / ".codeagent")
    return {f.path for f in load_manifest(store, store.read_ref(ref)).files}


FILES = {"src/app.py": "def app():\n    return 1\n", "src/gen/out.py": "X = 1\n",
         "vendor/lib.py": "def lib():\n    pass\n", "vendor/keep.py": "K = 1\n",
         "notes.log": "log\n", "docs/a.md": "# A\n", "big.txt": "x" * 5000 + "\n"}


@pytest.mark.parametrize("ref", [None, "main"])
def test_codeagentignore_and_tool_table_leave_files_out(git_repo, cli, ref):
    git_repo.write_many(FILES)
    git_repo.write(".codeagentignore", "# generated and third-party code\nvendor/\n!vendor/keep.py\n*.log\n")
    git_repo.write("pyproject.toml", '[project]\nname = "demo"\n\n[tool.codeagent]\n'
                                     'exclude = ["src/gen/"]\nmax_file_size = 4096\n')
    git_repo.commit("init")
    args = ("--ref", ref) if ref else ()
    out = json.loads(cli("build", git_repo.path, *args, "--json", check=True).stdout)
    paths = _paths(git_repo, out["ref"])
    assert paths == {"src/app.py", "docs/a.md", "big.txt", ".codeagentignore", "pyproject.toml",
                     "vendor/keep.py"}  # `!` re-includes a file, even under an excluded folder
    assert out["files_skipped"]["by_reason"] == {"too_large": 1}  # big.txt, over max_file_size
    assert cli("search", "lib", "--mode", "text", "--repo", git_repo.path, "--json",
               check=True).stdout.count("vendor/") == 0
    if ref is None:
        status = json.loads(cli("status", git_repo.path, "--json", check=True).stdout)
        assert status["worktree"]["state"] == "fresh"  # excluded files are not "added"
    bigger = json.loads(cli("build", git_repo.path, *args, "--max-file-size", "100000", "--json",
                            check=True).stdout)
    assert bigger["files_skipped"]["by_reason"] == {}  # the command line wins


def test_include_and_codeagent_toml(git_repo, cli):
    git_repo.write_many(FILES)
    git_repo.write(".codeagent.toml", 'include = ["src/", "docs/"]\nexclude = ["src/gen/"]\n')
    git_repo.commit("init")
    cli("build", git_repo.path, check=True)
    assert _paths(git_repo, "worktree") == {"src/app.py", "docs/a.md"}


@pytest.mark.parametrize("name, text, message", [
    (".codeagent.toml", "include = [", ".codeagent.toml:1: not valid TOML"),
    (".codeagent.toml", "exclud = ['x']\n", "unknown key 'exclud'"),
    (".codeagent.toml", "max_file_size = -3\n", "max_file_size must be a positive number"),
    ("pyproject.toml", "[tool.codeagent]\nexclude = 3\n", "exclude must be a list"),
])
def test_malformed_rules_are_a_clear_error_and_keep_the_index(git_repo, cli, name, text, message):
    git_repo.write_many(FILES)
    git_repo.commit("init")
    first = json.loads(cli("build", git_repo.path, "--json", check=True).stdout)
    git_repo.write(name, text)
    proc = cli("build", git_repo.path)
    assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr
    assert Store(git_repo.path / ".codeagent").read_ref("worktree") == first["manifest_id"]


@pytest.mark.parametrize("ref", [None, "main"])
@pytest.mark.parametrize("name, text, message", [
    (".codeagentignore", "build/\n!\n*.log\n", ".codeagentignore:2: invalid pattern '!'"),
    ("pyproject.toml", '[project]\nname = "x"\n[tool.codeagent\nexclude = ["vendor/"]\n',
     "pyproject.toml:3: not valid TOML"),
    (".codeagent.toml", 'max_file_size = 10\nexclude = ["a",\n', ".codeagent.toml:2: not valid TOML"),
    ("pyproject.toml", '[tool.codeagent]\nexclude = ["!"]\n',
     "pyproject.toml [tool.codeagent] exclude: invalid pattern '!'"),
])
def test_a_broken_rule_file_is_one_line_naming_file_and_line(git_repo, cli, ref, name, text, message):
    """Issue 45 item 5: `!` alone was a traceback and exit 1; a broken pyproject.toml holding
    our table was ignored, and its exclude with it."""
    git_repo.write_many(FILES)
    git_repo.write(name, text)
    git_repo.commit("broken rules")
    proc = cli("build", git_repo.path, *(("--ref", ref) if ref else ()))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"error: {proc.stderr.strip().removeprefix('error: ')}"
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_another_tools_broken_pyproject_is_not_ours_to_reject():
    rules = load_rules(lambda name: b"[project\n" if name == "pyproject.toml" else None)
    assert rules.ignore is None and rules.sources == ()
    with pytest.raises(InvalidParameter):
        load_rules(lambda name: b"[tool.codeagent]\nsize = 1\n" if name == "pyproject.toml" else None)
