"""Where files come from: the work tree (stat cache) or a committed tree (git blob ids).

Both produce `SourceFile`s whose bytes are read lazily, so files whose content is already
known (same stat, same git blob) are never re-read.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat as stat_mod
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from . import format as fmt
from .content import is_secret
from .errors import InvalidParameter, NotARepository, RefNotFound
from .hashing import hash_bytes
from .repo_config import NO_RULES, RULE_FILES, IndexRules, load_rules
from .store import Store, atomic_write


# As in git's "racy git" rule: a file whose mtime or ctime is this close to the moment its stat
# was taken may be written again without its stat changing (file systems stamp times from a
# coarse clock, a few ms on many kernels), so that stat is not kept as proof of its content.
RACY_NS = 100_000_000


@dataclass
class SourceFile:
    path: str
    size: int
    blob: str = ""  # blake3 when already known from a cache
    skip: str = ""  # a reason known before reading (symlink, too large...)
    git_sha: str = ""  # git blob id (committed trees)
    stat_key: tuple = ()  # (mtime_ns, size, ino, ctime_ns) for the work tree cache; () when racy


def _git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True)
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, args, proc.stdout, proc.stderr)
    return proc.stdout


def git_toplevel(path: Path) -> Path | None:
    try:
        out = _git(path, "rev-parse", "--show-toplevel")
    except (subprocess.CalledProcessError, FileNotFoundError, NotADirectoryError):
        return None
    return Path(out.decode().strip())


def head_commit(repo: Path) -> str | None:
    try:
        return _git(repo, "rev-parse", "--verify", "-q", "HEAD^{commit}").decode().strip() or None
    except subprocess.CalledProcessError:
        return None


def current_branch(repo: Path) -> str | None:
    try:
        name = _git(repo, "symbolic-ref", "-q", "--short", "HEAD").decode().strip()
    except subprocess.CalledProcessError:
        return None
    return name or None


def resolve_ref(repo: Path, rev: str) -> tuple[str, str]:
    """(store ref name, commit sha) for a git revision: heads/X, tags/X or commits/SHA."""
    if rev.startswith("-") or "\x00" in rev:
        raise InvalidParameter(f"invalid revision {rev!r}")
    try:
        sha = _git(repo, "rev-parse", "--verify", "-q", f"{rev}^{{commit}}").decode().strip()
    except subprocess.CalledProcessError:
        if head_commit(repo) is None:
            raise RefNotFound(f"the repository has no commits yet, so {rev!r} names nothing",
                              hint="commit first, or index the work tree with `codeagent build --worktree`") from None
        raise RefNotFound(f"no commit named {rev!r} in {repo}",
                          hint="check `git branch -a` / `git tag` for the right name") from None
    try:
        full = _git(repo, "rev-parse", "--symbolic-full-name", rev).decode().strip()
    except subprocess.CalledProcessError:
        full = ""
    if full.startswith("refs/heads/"):
        return "heads/" + full[len("refs/heads/"):], sha
    if full.startswith("refs/tags/"):
        return "tags/" + full[len("refs/tags/"):], sha
    if full.startswith("refs/remotes/"):
        return "remotes/" + full[len("refs/remotes/"):], sha
    return f"commits/{sha}", sha


def _decode_path(raw: bytes) -> tuple[str, bool]:
    try:
        return raw.decode("utf-8"), True
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), False


# ---- caches -------------------------------------------------------------------------------
class JsonCache:
    """A dict persisted under the store's cache/ directory as JSON: the whole dict in `name`,
    the changes since it was written in `name`.delta ({"base": the whole file's [size,
    mtime_ns, ino], "set": {key: value}, "drop": [keys]}), so saving a few changed keys
    writes those, not every key. A delta whose base stamp is not the whole file's (a crash
    between writing the whole file and removing the delta) is ignored: an entry lost costs a
    re-read, never a wrong answer (each value is checked against its key's stat or blob)."""

    def __init__(self, store: Store, name: str) -> None:
        self.store = store
        self.path = store.root / fmt.CACHE_DIR / name
        self.delta_path = self.path.with_name(name + ".delta")
        self.changes: dict = {}  # key -> value, or _DROPPED: what the delta file holds
        try:
            self.data: dict = json.loads(self.path.read_bytes())
            stamp = self._stamp()
        except (OSError, ValueError):
            self.data, stamp = {}, None
        try:
            delta = json.loads(self.delta_path.read_bytes())
            if stamp is not None and delta["base"] == stamp:
                self.changes = {**delta["set"], **dict.fromkeys(delta["drop"], _DROPPED)}
        except (OSError, ValueError, KeyError, TypeError):
            pass
        for key, value in self.changes.items():
            if value is _DROPPED:
                self.data.pop(key, None)
            else:
                self.data[key] = value
        self.dirty = False

    def _stamp(self) -> list[int]:
        st = os.stat(self.path)
        return [st.st_size, st.st_mtime_ns, st.st_ino]

    def get(self, key: str):
        return self.data.get(key)

    def set(self, key: str, value) -> None:
        if self.data.get(key) != value:
            self.data[key] = value
            self.changes[key] = value
            self.dirty = True

    def retain(self, keys: set[str]) -> None:
        stale = [k for k in self.data if k not in keys]
        for k in stale:
            del self.data[k]
            self.changes[k] = _DROPPED
        self.dirty = self.dirty or bool(stale)

    def save(self) -> None:
        """Write the changes as the delta while they are few (JSON_CACHE_DELTA_SHARE of the
        keys), else the whole dict (and no delta)."""
        if not self.dirty:
            return
        stamp = None
        if len(self.changes) <= max(JSON_CACHE_DELTA_MIN, len(self.data) * JSON_CACHE_DELTA_SHARE):
            with contextlib.suppress(OSError):
                stamp = self._stamp()
        if stamp is not None:
            delta = {"base": stamp, "drop": sorted(k for k, v in self.changes.items() if v is _DROPPED),
                     "set": {k: v for k, v in self.changes.items() if v is not _DROPPED}}
            atomic_write(self.delta_path, json.dumps(delta, separators=(",", ":")).encode(),
                         self.store.tmp_dir, durable=False)
        else:
            atomic_write(self.path, json.dumps(self.data, separators=(",", ":")).encode(),
                         self.store.tmp_dir, durable=False)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.delta_path)
            self.changes = {}
        self.dirty = False


_DROPPED = object()
JSON_CACHE_DELTA_SHARE = 1 / 16
JSON_CACHE_DELTA_MIN = 64


# ---- the work tree ------------------------------------------------------------------------
def _list_worktree_paths(repo: Path, is_git: bool, store_root: Path) -> Iterator[bytes]:
    if is_git:
        out = _git(repo, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        seen = set()
        for raw in out.split(b"\0"):
            if raw and raw not in seen:
                seen.add(raw)
                yield raw
        return
    store_abs = os.path.abspath(store_root)
    for dirpath, dirs, files in os.walk(repo):
        dirs[:] = sorted(d for d in dirs if d != ".git"
                         and os.path.abspath(os.path.join(dirpath, d)) != store_abs)
        for name in files:
            full = os.path.join(dirpath, name)
            yield os.fsencode(os.path.relpath(full, repo).replace(os.sep, "/"))


def worktree_rules(repo: Path) -> IndexRules:
    """The work tree's `.codeagentignore` and `[tool.codeagent]` (see repo_config)."""
    def read(name: str) -> bytes | None:
        try:
            with open(os.path.join(repo, name), "rb") as fh:
                return fh.read()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    return load_rules(read)


def walk_worktree(repo: Path, store: Store, cache: JsonCache, max_bytes: int,
                  rules: IndexRules = NO_RULES) -> list[SourceFile]:
    """Every file of the work tree (tracked + untracked, not ignored by .gitignore or
    `rules`), with cached blobs."""
    is_git = (repo / ".git").exists()
    repo_real = os.path.realpath(repo)
    out: list[SourceFile] = []
    store_rel = ""  # the store's path relative to the repo when the store is inside it
    try:
        rel = os.path.relpath(store.root, repo).replace(os.sep, "/")
        store_rel = "" if rel.startswith("..") else rel
    except ValueError:
        pass
    prefix = os.path.join(repo, "")
    racy_from = time.time_ns() - RACY_NS
    for raw in _list_worktree_paths(repo, is_git, store.root):
        path, ok = _decode_path(raw)
        if store_rel and path.startswith(store_rel) and (path == store_rel or path[len(store_rel)] == "/"):
            continue
        if rules.excluded(path):
            continue
        if not ok:
            out.append(SourceFile(path, 0, skip=fmt.SKIP_NON_UTF8_PATH))
            continue
        full = prefix + path
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            continue  # deleted in the work tree but still in git's index
        except OSError:
            out.append(SourceFile(path, 0, skip=fmt.SKIP_UNREADABLE))
            continue
        if stat_mod.S_ISLNK(st.st_mode):
            target = os.path.realpath(full)
            inside = target == repo_real or target.startswith(repo_real + os.sep)
            out.append(SourceFile(path, 0, skip=fmt.SKIP_SYMLINK if inside else fmt.SKIP_SYMLINK_ESCAPE))
            continue
        if stat_mod.S_ISDIR(st.st_mode):
            out.append(SourceFile(path, 0, skip=fmt.SKIP_SUBMODULE))
            continue
        if not stat_mod.S_ISREG(st.st_mode):
            out.append(SourceFile(path, 0, skip=fmt.SKIP_NOT_REGULAR))
            continue
        if st.st_nlink > 1:  # as read_file refuses it: its text may be a file outside the repo
            out.append(SourceFile(path, st.st_size, skip=fmt.SKIP_HARD_LINK))
            continue
        if is_secret(path):
            out.append(SourceFile(path, st.st_size, skip=fmt.SKIP_SECRET))
            continue
        if st.st_size > max_bytes:
            out.append(SourceFile(path, st.st_size, skip=fmt.SKIP_TOO_LARGE))
            continue
        key = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)
        if max(st.st_mtime_ns, st.st_ctime_ns) >= racy_from:
            key = ()
        hit = cache.get(path)
        blob = hit[4] if hit and tuple(hit[:4]) == key else ""
        out.append(SourceFile(path, st.st_size, blob=blob, stat_key=key))
    out.sort(key=lambda f: f.path)
    return out


def read_worktree_file(repo: Path, f: SourceFile) -> bytes:
    with open(os.path.join(repo, f.path), "rb") as fh:
        return fh.read()


# ---- a committed tree ---------------------------------------------------------------------
def commit_rules(repo: Path, commit: str) -> IndexRules:
    """The `.codeagentignore` and `[tool.codeagent]` the commit holds (one git call)."""
    listing = _git(repo, "ls-tree", "-z", "--full-tree", commit, "--", *RULE_FILES)
    shas = {}
    for record in listing.split(b"\0"):
        meta, _, name = record.partition(b"\t")
        if record and meta.split(b" ")[1] == b"blob":
            shas[name.decode()] = meta.split(b" ")[2].decode()
    blobs = dict(read_git_blobs(repo, list(shas.values()))) if shas else {}
    return load_rules(lambda name: blobs.get(shas.get(name, "")))


def walk_commit(repo: Path, commit: str, cache: JsonCache, max_bytes: int,
                rules: IndexRules = NO_RULES) -> list[SourceFile]:
    out: list[SourceFile] = []
    listing = _git(repo, "ls-tree", "-r", "-z", "--full-tree", commit)
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw_path = record.partition(b"\t")
        mode, kind, sha = meta.decode().split(" ")
        path, ok = _decode_path(raw_path)
        if rules.excluded(path):
            continue
        if not ok:
            out.append(SourceFile(path, 0, skip=fmt.SKIP_NON_UTF8_PATH, git_sha=sha))
        elif kind == "commit":
            out.append(SourceFile(path, 0, skip=fmt.SKIP_SUBMODULE, git_sha=sha))
        elif mode == "120000":
            out.append(SourceFile(path, 0, skip=fmt.SKIP_SYMLINK, git_sha=sha))
        elif is_secret(path):
            out.append(SourceFile(path, 0, skip=fmt.SKIP_SECRET, git_sha=sha))
        else:
            hit = cache.get(sha)
            f = SourceFile(path, hit[1] if hit else -1, blob=hit[0] if hit else "", git_sha=sha)
            out.append(f)
    unknown = [f for f in out if f.size < 0]
    if unknown:
        try:
            sizes = _git(repo, "cat-file", "--batch-check=%(objectname) %(objectsize)",
                         input="".join(f"{f.git_sha}\n" for f in unknown).encode())
        except subprocess.CalledProcessError:  # a promisor remote it cannot fetch from: git dies
            sizes = _git(repo, "cat-file", "--batch-check=%(objectname) %(objectsize)",
                         "--batch-all-objects", "--unordered")  # what is here; the rest is missing
        size_of = dict(line.split(" ") for line in sizes.decode().splitlines())
        for f in unknown:
            size = size_of.get(f.git_sha, "missing")
            if size == "missing":  # a partial clone or a damaged mirror: `<sha> missing`
                f.size, f.skip = 0, fmt.SKIP_MISSING_OBJECT
            else:
                f.size = int(size)
    for f in out:
        if not f.skip and f.size > max_bytes:
            f.skip = fmt.SKIP_TOO_LARGE
    out.sort(key=lambda f: f.path)
    return out


def read_git_blobs(repo: Path, shas: list[str]) -> Iterator[tuple[str, bytes | None]]:
    """Stream blob contents with one `git cat-file --batch` process (None: the object is missing)."""
    if not shas:
        return
    proc = subprocess.Popen(["git", "-C", str(repo), "cat-file", "--batch"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    import threading

    def feed() -> None:
        try:
            for sha in shas:
                proc.stdin.write(f"{sha}\n".encode())
            proc.stdin.close()
        except BrokenPipeError:
            pass

    threading.Thread(target=feed, daemon=True).start()
    try:
        for sha in shas:
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":  # vanished since walk_commit looked
                yield sha, None
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)
            yield sha, data
    finally:
        proc.stdout.close()
        proc.wait()


def require_repo(path: Path) -> Path:
    if not path.exists():
        raise NotARepository(f"{path} does not exist")
    if not path.is_dir():
        raise NotARepository(f"{path} is not a directory")
    return path
