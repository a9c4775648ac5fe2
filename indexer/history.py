"""The history view of the indexed commit (format/history.py): mined once, reused after.

A build of commit C lists the non-merge commits reachable from C (`git rev-list`, the window),
takes the records it already has from the nearest ancestor whose view is stored, reads only the
missing commits from git, and writes C's records and per-file postings. Nothing past C is ever
read: the window is C's own ancestry. A shallow clone gives a shorter window and says so; a
repository git cannot walk (missing objects) gives no view and a reason, never a failed build.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..format.history import (FILES_FILE, HISTORY_HALF_LIFE, HISTORY_WINDOW, MAX_COMMIT_FILES,
                              POSTINGS_FILE, RECORDS_FILE, history_root, view_dir)
from ..sources import _git
from ..tokenize import term_counts

MAX_MESSAGE = 4000
_TRAILER = re.compile(r"^[A-Za-z][A-Za-z0-9-]*-by: .*$|^Change-Id: .*$", re.M)
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://\S+", re.I)
# How far back to look for an ancestor whose view is stored (each look is one stat).
ANCESTOR_LOOKS = 200


@dataclass(frozen=True)
class CommitRecord:
    """What the index keeps of one commit."""

    sha: str
    time: int
    message: str
    paths: tuple[str, ...]  # changed paths; a rename as its new path, its old one in `renames`
    renames: tuple[tuple[str, str], ...] = ()  # (old, new)


@dataclass
class HistoryResult:
    commits: int = 0  # records in the view
    mined: int = 0  # of them read from git by this build
    shallow: bool = False
    seconds: float = 0.0
    skipped: str = ""  # why there is no view ("" when there is)
    reused: bool = False  # the view was already stored
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"commits": self.commits, "mined": self.mined, "shallow": self.shallow,
                "seconds": round(self.seconds, 3), "skipped": self.skipped, "reused": self.reused}


def clean_message(message: str) -> str:
    """The message without trailers (Signed-off-by...) and URLs, at most MAX_MESSAGE chars (pure)."""
    return _URL.sub(" ", _TRAILER.sub("", message)).strip()[:MAX_MESSAGE]


def parse_log(raw: bytes) -> list[CommitRecord]:
    """Records of `git log --format=%x1e%H%x1f%ct%x1f%B%x1f --name-status -M -z` (pure)."""
    out = []
    for chunk in raw.decode("utf-8", "replace").split("\x1e"):
        if not chunk.strip():
            continue
        sha, when, message, rest = chunk.split("\x1f", 3)
        tokens = [t.strip("\n") for t in rest.split("\0")]
        tokens = [t for t in tokens if t]
        paths: list[str] = []
        renames: list[tuple[str, str]] = []
        i = 0
        while i < len(tokens):
            status = tokens[i][:1]
            if status in "RC" and i + 2 < len(tokens):
                old, new = tokens[i + 1], tokens[i + 2]
                paths.append(new)
                if status == "R":
                    renames.append((old, new))
                i += 3
            else:
                if i + 1 < len(tokens):
                    paths.append(tokens[i + 1])
                i += 2
        out.append(CommitRecord(sha.strip(), int(when or 0), clean_message(message),
                                tuple(paths), tuple(renames)))
    return out


def window(repo: Path, commit: str) -> tuple[list[str], bool]:
    """(the non-merge commits reachable from `commit`, newest first, at most HISTORY_WINDOW;
    whether the clone is shallow)."""
    shas = _git(repo, "rev-list", "--no-merges", f"--max-count={HISTORY_WINDOW}", commit).decode().split()
    shallow = _git(repo, "rev-parse", "--is-shallow-repository").decode().strip() == "true"
    return shas, shallow


def mine(repo: Path, shas: Sequence[str]) -> tuple[list[CommitRecord], bool]:
    """The records of `shas` (in their order), read from git in one process, and whether
    renames were followed. Finding a rename that is not exact reads both blobs; when the clone
    lacks some (a partial clone, a damaged pack) the log is read again without renames."""
    if not shas:
        return [], True
    stdin = "".join(s + "\n" for s in shas).encode()
    args = ("log", "--no-walk=unsorted", "--stdin", "--format=%x1e%H%x1f%ct%x1f%B%x1f", "--name-status", "-z")
    try:
        return parse_log(_git(repo, *args, "-M", input=stdin)), True
    except subprocess.CalledProcessError:
        return parse_log(_git(repo, *args, "--no-renames", input=stdin)), False


def file_postings(records: Sequence[CommitRecord]) -> dict[str, dict[str, float]]:
    """Each path's history field (pure): the term counts of the messages of the commits that
    changed it, decayed by age in commits (`records` newest first), carried across renames."""
    fields: dict[str, dict[str, float]] = {}
    n = len(records)
    for i in range(n - 1, -1, -1):  # oldest first, so a rename carries what came before it
        rec = records[i]
        for old, new in rec.renames:
            moved = fields.pop(old, None)
            if moved is not None:
                into = fields.setdefault(new, {})
                for term, tf in moved.items():
                    into[term] = into.get(term, 0.0) + tf
        if not rec.paths or len(rec.paths) > MAX_COMMIT_FILES:
            continue
        weight = 0.5 ** (i / HISTORY_HALF_LIFE)
        counts = term_counts(rec.message)
        for path in dict.fromkeys(rec.paths):
            into = fields.setdefault(path, {})
            for term, c in counts.items():
                into[term] = into.get(term, 0.0) + weight * c
    return {p: f for p, f in fields.items() if f}


def file_activity(records: Sequence[CommitRecord]) -> dict[str, tuple[int, int]]:
    """path -> (the newest commit that changed it, counted from the newest record; how many
    records changed it) (pure)."""
    out: dict[str, tuple[int, int]] = {}
    for i, rec in enumerate(records):
        for path in dict.fromkeys(rec.paths):
            last, n = out.get(path, (i, 0))
            out[path] = (last, n + 1)
    return out


def _write_view(target: Path, records: Sequence[CommitRecord], shallow: bool) -> None:
    import pyarrow as pa  # the build side has pyarrow loaded by now; kept off `import indexer`
    import pyarrow.parquet as pq

    fields = file_postings(records)
    rows = sorted((t, p, tf) for p, f in fields.items() for t, tf in f.items())
    dl = {p: sum(f.values()) for p, f in fields.items()}
    meta = {"n_docs": str(len(fields)), "avgdl": repr(sum(dl.values()) / max(len(dl), 1)),
            "commits": str(len(records)), "shallow": "1" if shallow else "0"}
    postings = pa.table({"term": [r[0] for r in rows], "path": [r[1] for r in rows],
                         "tf": pa.array([r[2] for r in rows], pa.float32()),
                         "dl": pa.array([dl[r[1]] for r in rows], pa.float32())})
    records_t = pa.table({"sha": [r.sha for r in records], "time": pa.array([r.time for r in records], pa.int64()),
                          "message": [r.message for r in records], "paths": [list(r.paths) for r in records],
                          "renames": [[list(x) for x in r.renames] for r in records]})
    active = sorted(file_activity(records).items())
    files_t = pa.table({"path": [p for p, _ in active], "last": pa.array([a[0] for _, a in active], pa.int32()),
                        "touches": pa.array([a[1] for _, a in active], pa.int32())})
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    os.chmod(tmp, 0o755)
    try:
        pq.write_table(records_t.replace_schema_metadata(meta), tmp / RECORDS_FILE, compression="zstd")
        pq.write_table(postings.replace_schema_metadata(meta), tmp / POSTINGS_FILE, compression="zstd",
                       row_group_size=1 << 16)
        pq.write_table(files_t, tmp / FILES_FILE, compression="zstd")
        for f in (RECORDS_FILE, POSTINGS_FILE, FILES_FILE):
            with open(tmp / f, "rb+") as fh:
                os.fsync(fh.fileno())
        try:
            os.rename(tmp, target)
        except OSError:
            if not (target / POSTINGS_FILE).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def load_records(directory: Path) -> list[CommitRecord]:
    import pyarrow.parquet as pq  # only when a stored view is reused

    t = pq.read_table(directory / RECORDS_FILE).to_pydict()
    return [CommitRecord(s, int(tm), m, tuple(p), tuple(tuple(x) for x in r))
            for s, tm, m, p, r in zip(t["sha"], t["time"], t["message"], t["paths"], t["renames"])]


def _ancestors(repo: Path, commit: str) -> list[str]:
    """The nearest ANCESTOR_LOOKS ancestors of `commit`, merges included (a view is stored for
    whatever commit was built, and a merge is often what was)."""
    return _git(repo, "rev-list", f"--max-count={ANCESTOR_LOOKS + 1}", commit).decode().split()[1:]


def _stored_ancestor(store_root: Path, shas: Iterable[str]) -> Path | None:
    for n, sha in enumerate(shas):
        if n >= ANCESTOR_LOOKS:
            return None
        d = view_dir(store_root, sha)
        if (d / POSTINGS_FILE).exists():
            return d
    return None


def ensure_history(store_root: Path, repo: Path, commit: str | None) -> HistoryResult:
    """Make sure the history view of `commit` is stored; say what it cost or why there is none."""
    started = time.perf_counter()
    result = HistoryResult()
    if not commit:
        result.skipped = "no commit (not a git repository)"
        return result
    target = view_dir(store_root, commit)
    if (target / POSTINGS_FILE).exists():
        result.reused = True
        return result
    try:
        shas, result.shallow = window(repo, commit)
        have: dict[str, CommitRecord] = {}
        ancestor = _stored_ancestor(store_root, _ancestors(repo, commit))
        if ancestor is not None:
            wanted = set(shas)
            have = {r.sha: r for r in load_records(ancestor) if r.sha in wanted}
        missing = [s for s in shas if s not in have]
        fresh, renames = mine(repo, missing)
        mined = {r.sha: r for r in fresh}
    except (subprocess.CalledProcessError, OSError, ValueError) as exc:
        err = getattr(exc, "stderr", b"") or b""
        result.skipped = "git could not walk the history: " + (err.decode("utf-8", "replace").strip().splitlines() or [str(exc)])[-1][:200]
        return result
    records = [have.get(s) or mined[s] for s in shas if s in have or s in mined]
    _write_view(target, records, result.shallow)
    result.commits, result.mined = len(records), len(mined)
    if not renames:
        result.notes.append("renames not followed: git could not read some objects of the history "
                            "(a partial clone or missing objects); paths are taken as changed in place")
    if result.shallow:
        result.notes.append(f"shallow clone: history holds only the {len(records)} commits present")
    result.seconds = time.perf_counter() - started
    return result


def stored_views(store_root: Path) -> list[str]:
    """The commits whose history view is stored (temp directories of a build left out)."""
    root = history_root(store_root)
    return sorted(d.name for d in root.iterdir() if not d.name.startswith(".")) if root.is_dir() else []


def history_step(store_root: Path, repo: Path, commit: str | None) -> dict:
    """The build's history step: the view of `commit` stored, and what that cost (--json)."""
    done = ensure_history(store_root, repo, commit)
    return {**done.to_dict(), "notes": done.notes}


def prune(store_root: Path, keep_commits: set[str]) -> int:
    """Remove the history views of commits no kept manifest names; the number removed."""
    root = history_root(store_root)
    removed = 0
    if not root.is_dir():
        return 0
    for d in root.iterdir():
        if d.name not in keep_commits and not d.name.startswith("."):
            shutil.rmtree(d, ignore_errors=True)
            removed += 1
    return removed
