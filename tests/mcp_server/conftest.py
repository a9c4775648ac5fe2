"""Fixtures for the MCP server tests: a small real repository built with the real CLI."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import git
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_helpers import SAMPLE_FILES, run_cli  # noqa: E402
from repo_helpers import GitRepo  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sample_repo(git_repo):
    """A committed repository with code, docs, a binary, ignored files and secrets."""
    git_repo.write_many(SAMPLE_FILES)
    git_repo.commit("sample")
    return git_repo


@pytest.fixture(scope="session")
def indexed_template(tmp_path_factory) -> Path:
    """The sample repository committed and built once per session; tests get copies."""
    repo = GitRepo.create(tmp_path_factory.mktemp("indexed") / "repo")
    repo.write_many(SAMPLE_FILES)
    repo.commit("sample")
    run_cli("build", repo.path)
    return repo.path


@pytest.fixture
def indexed_repo(git_repo, indexed_template):
    """The sample repository, committed and built (a copy of `indexed_template`: the same bytes
    in .git and .codeagent as a build here would leave, only the inodes differ)."""
    shutil.copytree(indexed_template, git_repo.path, symlinks=True, dirs_exist_ok=True)
    return GitRepo(git_repo.path, git.Repo(git_repo.path))
