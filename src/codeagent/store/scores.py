"""Search-quality figures of a commit's index, kept beside the store's refs: `scores/<sha>.json`.

Written by `codeagent publish --score` (measured on the commit's own history) and by `sync`
(brought from the remote); read by `codeagent status`; dropped by `gc` with the last kept
manifest of their commit. Figures are small JSON documents, not objects: they describe an
index, they are not part of one. They are serialised once, when measured: publish and sync
move the document's bytes as they are.
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


def write_scores(store: Store, figures: dict) -> bytes:
    """Record `figures` for their commit; the document's bytes (what publish uploads)."""
    data = json.dumps(figures, indent=1, sort_keys=True).encode()
    keep_scores(store, figures.get("commit"), data)
    return data


def keep_scores(store: Store, commit: str | None, data: bytes) -> bool:
    """Store `data` as it is when it is a scores document for `commit` (False: it is not)."""
    if not is_commit_sha(commit):
        raise ValueError(f"scores need a commit sha, not {commit!r}")
    if parse_scores(data, commit) is None:
        return False
    (store.root / fmt.SCORES_DIR).mkdir(exist_ok=True)
    atomic_write(store.root / fmt.SCORES_DIR / f"{commit}.json", data, store.tmp_dir)
    return True


def _recorded(store: Store, commit: str | None) -> bytes | None:
    if not is_commit_sha(commit):
        return None
    try:
        return (store.root / fmt.SCORES_DIR / f"{commit}.json").read_bytes()
    except OSError:
        return None


def scores_document(store: Store, commit: str | None) -> bytes | None:
    """The bytes of the scores document recorded for `commit`, None when there is none
    (or it is unreadable, or for another commit)."""
    data = _recorded(store, commit)
    return data if parse_scores(data, commit) is not None else None


def read_scores(store: Store, commit: str | None) -> dict | None:
    """The figures recorded for `commit`, None when there are none (or they are unreadable)."""
    return parse_scores(_recorded(store, commit), commit) if is_commit_sha(commit) else None


def prune_scores(store: Store, keep_commits: set[str], *, dry_run: bool = False) -> int:
    """Remove the scores of commits no kept manifest names; how many went (or would go)."""
    root = store.root / fmt.SCORES_DIR
    doomed = [p for p in (root.iterdir() if root.is_dir() else ())
              if not p.name.startswith(".") and p.name.removesuffix(".json") not in keep_commits]
    if not dry_run:
        for p in doomed:
            p.unlink(missing_ok=True)
    return len(doomed)
