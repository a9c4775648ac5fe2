"""What search_files greps: the live work tree's files, read through the sandbox, narrowed by
the work-tree index to those whose indexed text may match or that changed since the build."""

from __future__ import annotations

import time
from pathlib import Path

from ..errors import CodeagentError, TooLarge
from ..format import SKIP_TOO_LARGE
from .filters import unindexed_text
from .freshness import worktree_freshness
from .globs import glob_matcher
from .grep import matching_files
from .index import IndexView
from .sandbox import Sandbox, looks_binary

def grep_candidates(sandbox: Sandbox, view: IndexView | None, root: Path, pattern: str, *,
                    regex: bool, case_sensitive: bool, glob: str | None) -> tuple[list[str], int]:
    """(files worth reading, files searched): every visible file the glob takes, narrowed by
    `view` when it is the work-tree index (None: no usable index, every file is read)."""
    match = glob_matcher(glob)
    sandbox.refresh()  # the live tree decides: a file added a second ago is searched
    live = [e.path for e, _level in sandbox.walk(_glob_root(sandbox, glob))
            if e.type == "file" and match(e.path)]
    if view is None or view.ref != "worktree":
        return live, len(live)

    may_match = matching_files(view, pattern, regex=regex, case_sensitive=case_sensitive,
                               glob=glob)
    changed = worktree_freshness(view.store, root, view.manifest_id)
    may_match.update(changed.added, changed.modified)
    may_match.update(path for path, _reason in unindexed_text(view))  # the index cannot narrow them
    return [p for p in live if p in may_match], len(live)


def read_texts(sandbox: Sandbox, paths: list[str],
               deadline: float) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """((path, text) of the files among `paths` the sandbox serves and that are text, read
    until `deadline` (time.monotonic); (path, reason) of the text files left unsearched).

    A file that is not valid UTF-8 is searched as read_file serves it (undecodable bytes
    replaced); one too large to read is named with reason too_large. A withheld file stays
    unnamed (it is never listed), a binary one too (grep tools skip them)."""
    texts, skipped = [], []
    for path in paths:
        if time.monotonic() > deadline:
            break
        try:
            data = sandbox.read_file(path).data
        except TooLarge:
            skipped.append((path, SKIP_TOO_LARGE))
            continue
        except CodeagentError:  # withheld, vanished or escaping since the walk: not served
            continue
        if not looks_binary(data):
            texts.append((path, data.decode("utf-8", errors="replace")))
    return texts, skipped


def _glob_root(sandbox: Sandbox, glob: str | None) -> str:
    """The directory an anchored glob cannot leave (`json/**/*.py` -> json): the walk starts
    there instead of at the root."""
    if not glob or "/" not in glob.strip("/") or glob.strip().startswith("!"):
        return ""  # a negated glob selects paths everywhere
    fixed = []
    for part in glob.strip("/").split("/")[:-1]:
        if any(c in part for c in "*?[{\\"):
            break
        fixed.append(part)
    root = "/".join(fixed)
    try:
        return sandbox.resolve_dir(root) if root else ""
    except CodeagentError:
        return ""
