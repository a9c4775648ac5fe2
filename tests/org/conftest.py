"""The org tests' fixtures (fleet_helpers.py builds the repositories)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet_helpers import make_fleet  # noqa: E402


@pytest.fixture
def fleet(tmp_path: Path) -> dict:
    return make_fleet(tmp_path)
