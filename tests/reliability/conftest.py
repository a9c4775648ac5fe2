"""Reliability suites: shared figures, sent with each test's report and printed as one summary
line per suite at the end (tests/conftest.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from relhelpers import FIGURES  # noqa: E402

LONG = os.environ.get("CODEAGENT_LONG") == "1"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """The figures a test recorded travel in its report's user_properties, so they reach the
    summary from a pytest-xdist worker too."""
    outcome = yield
    if call.when == "teardown" and FIGURES:
        outcome.get_result().user_properties.append(("figures", {k: dict(v) for k, v in FIGURES.items()}))
        FIGURES.clear()


@pytest.fixture
def long_mode() -> bool:
    return LONG
