"""Git at the edge of the harness: history records, blobs, trees, and a private clone.

The harness never touches the user's repository beyond reading it: indexes and doc-stripped
variant commits live in a `git clone --shared` under the eval work dir, whose objects come
from the user's repository through alternates (no copy) and whose new objects stay in it.
"""

from __future__ import annotations

import io
import re
import os
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import NotARepository, RefNotFound
from ..sources import _git as git

EVAL_BRANCH = "codeagent-eval"
_IDENTITY = ("-c", "user.name=codeagent eval", "-c", "user.email=eval@codeagent.invalid")


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    parents: tuple[str, ...]
    message: str
    changes: tuple[tuple[str, str], ...]  # (status letter, path), renames split into D + A


def parse_log(raw: str) -> list[CommitInfo]:
    """Parse `git log --format=%x1e%H%x1f%P%x1f%B%x1f --name-status --no-renames -z`."""
    out = []
    for record in raw.split("\x1e"):
        if not record.strip():
            continue
        sha, parents, message, rest = record.split("\x1f", 3)
        tokens = [t.strip("\n") for t in rest.split("\0")]
        tokens = [t for t in tokens if t]
        changes = tuple((tokens[i][:1], tokens[i + 1]) for i in range(0, len(tokens) - 1, 2))
        out.append(CommitInfo(sha.strip(), tuple(parents.split()), message.strip(), changes))
    return out


def read_commits(repo: Path, rev: str = "HEAD", max_count: int = 2000) -> list[CommitInfo]:
    """Commits reachable from `rev`, newest first, with the files each changed."""
    raw = git(repo, "log", f"--max-count={max_count}", "--format=%x1e%H%x1f%P%x1f%B%x1f",
              "--name-status", "--no-renames", "-z", rev, "--")
    return parse_log(raw.decode("utf-8", "replace"))


def rev_parse(repo: Path, rev: str) -> str:
    try:
        return git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}").decode().strip()
    except subprocess.CalledProcessError:
        raise RefNotFound(f"no commit named {rev!r} in {repo}",
                          hint="a shallow clone lacks old commits: fetch the full history "
                               "(`git fetch --unshallow`)") from None


def toplevel(repo: Path) -> Path:
    try:
        return Path(git(repo, "rev-parse", "--show-toplevel").decode().strip())
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        raise NotARepository(f"{repo} is not a git repository",
                             hint="codeagent eval mines and indexes commits; point --repo at a git repository") from None


def read_blob(repo: Path, rev: str, path: str) -> bytes:
    return git(repo, "cat-file", "blob", f"{rev}:{path}")


def list_tree(repo: Path, rev: str) -> dict[str, tuple[str, str]]:
    """path -> (mode, git blob id) for every regular file of the commit."""
    out = {}
    for record in git(repo, "ls-tree", "-r", "-z", "--full-tree", rev).split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, sha = meta.decode().split(" ")
        if kind == "blob" and mode != "120000":
            out[path.decode("utf-8", "replace")] = (mode, sha)
    return out


def export_tree(repo: Path, rev: str, dest: Path) -> Path:
    """Write the files of `rev` under `dest` (no checkout, no index change)."""
    dest.mkdir(parents=True, exist_ok=True)
    data = git(repo, "archive", "--format=tar", rev)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return dest


def private_clone(repo: Path, dest: Path) -> Path:
    """A `--shared` clone of `repo` at `dest` (created once, reused), able to see every object."""
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--no-checkout", "--shared", str(repo), str(dest)],
                       check=True, capture_output=True)
    return dest


def pin(clone: Path, sha: str) -> str:
    """Point the clone's eval branch at `sha`; returns the branch name to build."""
    git(clone, "update-ref", f"refs/heads/{EVAL_BRANCH}", sha)
    return EVAL_BRANCH


def variant_commit(clone: Path, base: str, edits: dict[str, bytes]) -> str:
    """A commit whose tree is `base`'s with `edits` (path -> new bytes) applied; no checkout."""
    tree = list_tree(clone, base)
    index = clone / ".git" / "codeagent-eval-index"
    # Fixed dates: the same base and edits give the same commit, so a rerun rebuilds nothing.
    env = {**os.environ, "GIT_INDEX_FILE": str(index), "GIT_AUTHOR_DATE": "@0 +0000",
           "GIT_COMMITTER_DATE": "@0 +0000"}

    def run(*args: str, data: bytes | None = None) -> str:
        proc = subprocess.run(["git", "-C", str(clone), *_IDENTITY, *args], input=data, env=env,
                              capture_output=True, check=True)
        return proc.stdout.decode().strip()

    try:
        run("read-tree", base)
        for path, data in sorted(edits.items()):
            blob = run("hash-object", "-w", "--stdin", data=data)
            run("update-index", "--cacheinfo", f"{tree.get(path, ('100644', ''))[0]},{blob},{path}")
        new_tree = run("write-tree")
        return run("commit-tree", new_tree, "-p", base, "-m", "codeagent eval: doc-stripped variant")
    finally:
        index.unlink(missing_ok=True)


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", re.M)


def changed_lines(repo: Path, parent: str, sha: str, paths: tuple[str, ...]) -> tuple[tuple[str, int, int], ...]:
    """(path, first, last) of each hunk's lines on the parent's side (an insertion: the line
    before it), for `paths`."""
    out = []
    for path in paths:
        raw = git(repo, "diff", "-U0", "--no-color", "--no-renames", parent, sha, "--", path).decode("utf-8", "replace")
        for m in _HUNK.finditer(raw):
            start, count = int(m.group(1)), int(m.group(2) or 1)
            out.append((path, max(start, 1), max(start + count - 1, start, 1)))
    return tuple(out)
