"""Search-quality figures of a commit's index, kept beside the store's refs: `scores/<sha>.json`.

Written by `codeagent publish --score` (measured on the commit's own history) and by `sync`
(brought from the remote); read by `codeagent status`. Figures are small JSON documents,
not objects: they describe an index, they are not part of one.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .. import format as fmt
from .atomic import atomic_write

if TYPE_CHECKING:
    from .objects import Store


def is_commit_sha(sha: str | None) -> bool:
    return bool(sha) and len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha)


def parse_scores(data: bytes | None, commit: str) -> dict | None:
    """The figures in `data` when they are a scores document for `commit`, else None."""
    if data is None:
        return None
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or doc.get("commit") != commit or not isinstance(doc.get("modes"), dict):
        return None
    return doc


def write_scores(store: Store, figures: dict) -> None:
    commit = figures.get("commit")
    if not is_commit_sha(commit):
        raise ValueError(f"scores need a commit sha, not {commit!r}")
    (store.root / fmt.SCORES_DIR).mkdir(exist_ok=True)
    atomic_write(store.root / fmt.SCORES_DIR / f"{commit}.json",
                 json.dumps(figures, indent=1, sort_keys=True).encode(), store.tmp_dir)


def read_scores(store: Store, commit: str | None) -> dict | None:
    """The figures recorded for `commit`, None when there are none (or they are unreadable)."""
    if not is_commit_sha(commit):
        return None
    try:
        data = (store.root / fmt.SCORES_DIR / f"{commit}.json").read_bytes()
    except OSError:
        return None
    return parse_scores(data, commit)
