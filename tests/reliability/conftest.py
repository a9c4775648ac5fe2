"""Reliability suites: shared figures, printed as one summary line per suite at the end."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from relhelpers import FIGURES  # noqa: E402

LONG = os.environ.get("CODEAGENT_LONG") == "1"


def pytest_terminal_summary(terminalreporter) -> None:
    if not FIGURES:
        return
    terminalreporter.section("reliability figures")
    for suite, figures in sorted(FIGURES.items()):
        terminalreporter.write_line(f"{suite}: " + ", ".join(f"{k}={v}" for k, v in figures.items()))
    out = os.environ.get("CODEAGENT_FIGURES_JSON")
    if out:
        Path(out).write_text(json.dumps(FIGURES, indent=2, sort_keys=True))


@pytest.fixture
def long_mode() -> bool:
    return LONG
