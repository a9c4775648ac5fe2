"""Fixtures for the MCP server tests: a small real repository built with the real CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_helpers import SAMPLE_FILES, run_cli  # noqa: E402


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def sample_repo(git_repo):
    """A committed repository with code, docs, a binary, ignored files and secrets."""
    git_repo.write_many(SAMPLE_FILES)
    git_repo.commit("sample")
    return git_repo


@pytest.fixture
def indexed_repo(sample_repo):
    run_cli("build", sample_repo.path)
    return sample_repo
