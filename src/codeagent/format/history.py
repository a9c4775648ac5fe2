"""The history view of a commit: what ranking (and impact) take from the repository's past.

A commit is immutable, so what the index needs from it — its message, author time and the paths
it changed — is computed once. A commit's *history view* is the bounded set of records reachable
from it (never past it): the newest HISTORY_WINDOW non-merge commits. It lives in the store
beside the objects, keyed by the commit id and this format's version, which is content
addressing one level up (the same commit always has the same view):

    history/v<HISTORY_VERSION>/<commit>/records.parquet   sha, time, message, paths
    history/v<HISTORY_VERSION>/<commit>/postings.parquet  term, path, tf, dl (sorted by term)
    history/v<HISTORY_VERSION>/<commit>/files.parquet     path, last, touches

`postings` is each file's history field: the terms of the messages of the commits that changed
it, each commit's counts decayed by its age in commits (halved every HISTORY_HALF_LIFE) and
carried across renames. `files` says how recently (`last`: the newest commit that changed the
path, counted from the indexed commit, 0 for itself) and how often (`touches`) each path
changed in the window. The Parquet key-value metadata holds `n_docs`, `avgdl`, `commits` and
`shallow` ("1" when the clone was shallow, so the window ended early).

HISTORY_VERSION history:
  1: records, per-file postings and per-file activity as above.
"""

from __future__ import annotations

from pathlib import Path

HISTORY_VERSION = 1
HISTORY_DIR = "history"
RECORDS_FILE = "records.parquet"
POSTINGS_FILE = "postings.parquet"
FILES_FILE = "files.parquet"
HISTORY_WINDOW = 3000  # non-merge commits reachable from the indexed commit
HISTORY_HALF_LIFE = 1000.0  # commits: a message this many commits older counts half
MAX_COMMIT_FILES = 50  # a larger commit (a reformat, a vendoring) says little about each file


def history_root(store_root: Path) -> Path:
    return Path(store_root) / HISTORY_DIR / f"v{HISTORY_VERSION}"


def view_dir(store_root: Path, commit: str) -> Path:
    """Where the history view of `commit` lives (complete when its POSTINGS_FILE exists)."""
    return history_root(store_root) / commit
