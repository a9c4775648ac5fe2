"""Commit -> files localisation cases, mined from history (pure over `CommitInfo`s).

Query: the commit message without trailers, URLs and issue numbers. Gold: the non-test source
files the commit modified (status M, so each existed at the parent). The index is built at the
parent. Merges, root commits, huge commits, test/doc-only commits and messages that name a gold
file are left out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..roles import is_code_path
from .cases import EvalCase
from .gitdata import CommitInfo

TEST_DIRS = frozenset({"test", "tests", "testing", "__tests__", "spec", "specs", "testdata"})
_TEST_FILE = re.compile(r"(^test_.*|.*_test\.[a-z]+|.*_tests\.[a-z]+|.*\.(test|spec)\.[a-z]+|conftest\.py)$")
_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*(-[A-Za-z0-9]+)*: ?\S.*$")
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
_ISSUE = re.compile(r"(\(#\d+\))|((?<![\w/])(gh-|GH-|#)\d+\b)|\b(issue|bug|pr|fixes|closes|resolves)\s+#?\d+\b", re.I)


@dataclass(frozen=True)
class CommitFilter:
    max_changed_files: int = 20
    max_gold_files: int = 5
    min_query_words: int = 3
    max_query_chars: int = 1200


def is_test_path(path: str) -> bool:
    p = PurePosixPath(path)
    return any(part.lower() in TEST_DIRS for part in p.parts[:-1]) or bool(_TEST_FILE.match(p.name.lower()))


def clean_message(message: str) -> str:
    """The message minus its trailer block, URLs and issue numbers, whitespace folded."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip()) if p.strip()]
    if len(paragraphs) > 1 and all(_TRAILER.match(line.strip()) for line in paragraphs[-1].splitlines()):
        paragraphs.pop()
    text = "\n".join(paragraphs)
    text = _URL.sub(" ", text)
    text = _ISSUE.sub(" ", text)
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"\s+([,.;:!?)])", r"\1", text)
    return re.sub(r"([,;:])(?=[,.;:])", "", text).strip(" -:;,")


def names_a_file(text: str, path: str) -> bool:
    """Does the text spell the path, its file name or its dotted module path?"""
    lowered = text.lower()
    p = PurePosixPath(path)
    module = str(p.with_suffix("")).replace("/", ".").lower()
    return any(token in lowered for token in (path.lower(), p.name.lower(), module))


def gold_files(commit: CommitInfo) -> list[str]:
    return sorted({path for status, path in commit.changes
                   if status == "M" and is_code_path(path) and not is_test_path(path)})


def commit_case(commit: CommitInfo, flt: CommitFilter = CommitFilter()) -> EvalCase | None:
    """The case a commit yields, or None when a filter rejects it."""
    if len(commit.parents) != 1 or not commit.changes or len(commit.changes) > flt.max_changed_files:
        return None
    gold = gold_files(commit)
    if not gold or len(gold) > flt.max_gold_files:
        return None
    query = clean_message(commit.message)[: flt.max_query_chars]
    if len(query.split()) < flt.min_query_words or any(names_a_file(query, g) for g in gold):
        return None
    return EvalCase(query=query, ref=commit.parents[0], gold_files=tuple(gold), kind="commits",
                    id=f"commit-{commit.sha[:12]}")


def commit_cases(commits: Iterable[CommitInfo], flt: CommitFilter = CommitFilter()) -> list[EvalCase]:
    return [c for c in (commit_case(commit, flt) for commit in commits) if c is not None]
