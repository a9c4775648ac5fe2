"""The time budget of one file's parse: past it the file is recorded as skipped
(parser_timeout), never left to stall a build."""

from __future__ import annotations

PARSE_BUDGET_S = 5.0

