"""The repository sandbox: every read of a work-tree file by path goes through here.

Paths are repository-relative POSIX strings. `Sandbox.open_file()` walks a path one component
at a time from the root with O_NOFOLLOW, so the kernel never follows a symlink for us: we read
the link, resolve it lexically, and it must land inside the root. A link flipped between our
check and the open makes the open fail (ELOOP) instead of escaping. Files .gitignore excludes,
secrets (.env, private keys, credentials) and git/store internals are invisible to listings
and refused on read.
"""

from __future__ import annotations

import errno
import os
import posixpath
import stat as stat_mod
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from .. import sources
from ..content import SECRET_PATTERNS, is_secret, looks_binary, secret_in  # noqa: F401 (re-exported)
from ..errors import CodeagentError, InvalidParameter, NotFound, PathEscape, TooLarge, Withheld

INTERNAL_DIRS = (".git", ".codeagent")
MAX_PATH_CHARS = 4096
MAX_SYMLINK_HOPS = 40
MAX_FILE_BYTES = 16 * 1024 * 1024  # nothing larger is read at all
LISTING_TTL = 1.0  # seconds a listing of visible files is reused

_MAGIC = ((b"\x89PNG", "image/png"), (b"\xff\xd8\xff", "image/jpeg"), (b"GIF8", "image/gif"),
          (b"%PDF", "application/pdf"), (b"PK\x03\x04", "application/zip"),
          (b"\x1f\x8b", "application/gzip"), (b"\x7fELF", "application/x-elf"),
          (b"\x00asm", "application/wasm"), (b"SQLite format 3", "application/vnd.sqlite3"))


def is_hidden(rel: str) -> bool:
    return any(part.startswith(".") for part in rel.split("/") if part)


def sniff_mime(rel: str, data: bytes) -> str:
    import mimetypes

    for magic, mime in _MAGIC:
        if data.startswith(magic):
            return mime
    return mimetypes.guess_type(rel)[0] or "application/octet-stream"


def normalize(path: str, root: str) -> str:
    """The repository-relative form of a caller's path ("" is the root); raises on escape."""
    if not isinstance(path, str):
        raise InvalidParameter("path must be a string")
    if "\x00" in path:
        raise InvalidParameter("path contains a NUL byte")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidParameter(f"path is longer than {MAX_PATH_CHARS} characters")
    decoded = unquote(path)
    if decoded != path and _lexical(decoded, root, quiet=True) is None:
        raise PathEscape(f"{path!r} decodes to a path outside the repository",
                         hint="pass a plain repository-relative path")
    rel = _lexical(path, root, quiet=False)
    assert rel is not None
    return rel


def _lexical(path: str, root: str, *, quiet: bool) -> str | None:
    p = path.replace("\\", "/").strip()
    if p.startswith("/"):
        if p == root or p.startswith(root.rstrip("/") + "/"):
            p = p[len(root):]
        elif quiet:
            return None
        else:
            raise PathEscape(f"{path!r} is outside the repository",
                             hint="pass a path relative to the repository root")
    norm = posixpath.normpath("./" + p.lstrip("/"))
    if norm == ".":
        return ""
    if norm == ".." or norm.startswith("../"):
        if quiet:
            return None
        raise PathEscape(f"{path!r} leads outside the repository",
                         hint="pass a path relative to the repository root, without `..`")
    return norm


@dataclass(frozen=True)
class Entry:
    path: str  # repository-relative
    type: str  # file | directory | symlink
    size: int | None = None
    mtime: float | None = None

    @property
    def name(self) -> str:
        return posixpath.basename(self.path) or "."


@dataclass(frozen=True)
class FileBytes:
    path: str  # as asked for
    resolved: str  # after in-repository symlinks
    data: bytes
    size: int
    mtime: float


class Sandbox:
    """Read-only access to the files of one repository's work tree."""

    def __init__(self, root: Path, store_dir: Path | None = None) -> None:
        self.root = os.path.realpath(root)
        st = os.stat(self.root)
        if not stat_mod.S_ISDIR(st.st_mode):
            raise InvalidParameter(f"{root} is not a directory")
        self.root_dev = st.st_dev
        self.is_git = os.path.exists(os.path.join(self.root, ".git"))
        self.store_dir = Path(os.path.realpath(store_dir or Path(self.root) / ".codeagent"))
        self._lock = threading.Lock()
        self._listing: tuple[float, frozenset[str], dict[str, dict[str, bool]]] | None = None
        self._verdicts: dict[str, tuple[tuple[int, int], bool]] = {}  # withheld_by_content's

    # ---- paths -----------------------------------------------------------------------------
    def normalize(self, path: str) -> str:
        return normalize(path, self.root)

    def is_internal(self, rel: str) -> bool:
        first = rel.split("/", 1)[0]
        if first in INTERNAL_DIRS:
            return True
        try:
            store_rel = os.path.relpath(self.store_dir, self.root).replace(os.sep, "/")
        except ValueError:
            return False
        return not store_rel.startswith("..") and (rel == store_rel or rel.startswith(store_rel + "/"))

    def check_lexical(self, rel: str) -> None:
        """Refuse git/store internals and secrets by name alone."""
        if rel and self.is_internal(rel):
            raise NotFound(f"{rel} is not part of the repository's files")
        if rel and is_secret(rel):
            raise Withheld(f"{rel} looks like a secret (key, .env or credentials); its contents "
                           "are withheld")

    def check_listed(self, rel: str, *, directory: bool = False) -> None:
        """Raise unless a listing would show the path (i.e. .gitignore does not exclude it)."""
        if rel == "":
            if directory:
                return
            raise InvalidParameter("the path names the repository root, not a file")
        self.check_lexical(rel)
        files, dirs = self._visible()
        if (rel in dirs) if directory else (rel in files):
            return
        if os.path.lexists(os.path.join(self.root, rel)):
            files, dirs = self._visible(refresh=True)  # created since the listing was cached?
            if (rel in dirs) if directory else (rel in files):
                return
        if not directory and rel in dirs:
            raise InvalidParameter(f"{rel} is a directory", hint="use list_directory for it")
        if directory and rel in files:
            raise InvalidParameter(f"{rel} is a file, not a directory", hint="use read_file for it")
        if os.path.lexists(os.path.join(self.root, rel)):
            raise NotFound(f"{rel} is ignored (.gitignore) and not served",
                           hint="list_files shows the files that can be read")
        raise NotFound(f"{rel} does not exist", hint="list_files shows the files that can be read")

    # ---- opening ---------------------------------------------------------------------------
    def _open(self, rel: str, *, directory: bool) -> tuple[int, str]:
        """(fd, resolved rel) without the kernel following any symlink."""
        parts = rel.split("/") if rel else []
        hops = 0
        i = 0
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            while i < len(parts):
                last = i == len(parts) - 1
                flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
                if directory or not last:
                    flags |= os.O_DIRECTORY
                try:
                    nfd = os.open(parts[i], flags, dir_fd=fd)
                except OSError as exc:
                    target = self._link_target(parts, i, fd, exc)
                    hops += 1
                    if hops > MAX_SYMLINK_HOPS:
                        raise InvalidParameter(f"{rel}: too many levels of symbolic links") from None
                    parts = (target.split("/") if target else []) + parts[i + 1:]
                    os.close(fd)
                    fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                    i = 0
                    continue
                os.close(fd)
                fd = nfd
                i += 1
            return fd, "/".join(parts)
        except BaseException:
            os.close(fd)
            raise

    def _link_target(self, parts: list[str], i: int, dir_fd: int, exc: OSError) -> str:
        shown = "/".join(parts[: i + 1])
        if exc.errno == errno.ENOENT:
            raise NotFound(f"{shown} does not exist") from None
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            raise NotFound(f"{shown} cannot be opened ({os.strerror(exc.errno or 0)})") from None
        try:
            target = os.readlink(parts[i], dir_fd=dir_fd)
        except OSError:
            raise InvalidParameter(f"{shown} is not a directory") from None
        base = "/".join(parts[:i])
        resolved = _lexical(target if target.startswith("/") else posixpath.join(base, target),
                            self.root, quiet=True)
        if resolved is None:
            raise PathEscape(f"{shown} is a symbolic link that leads outside the repository")
        return resolved

    def _check_opened(self, fd: int, rel: str, *, directory: bool) -> os.stat_result:
        st = os.fstat(fd)
        if st.st_dev != self.root_dev:
            raise PathEscape(f"{rel} is on another file system (a mount point)")
        if directory:
            return st
        if not stat_mod.S_ISREG(st.st_mode):
            raise InvalidParameter(f"{rel} is not a regular file")
        if st.st_nlink > 1:
            raise PathEscape(f"{rel} has {st.st_nlink} hard links; it may be an alias of a file "
                             "outside the repository, so it is not served")
        return st

    def read_file(self, path: str, *, max_bytes: int = MAX_FILE_BYTES) -> FileBytes:
        """Read a visible file (in-repository symlinks followed) up to `max_bytes`."""
        rel = self.normalize(path)
        self.check_lexical(rel)
        if rel == "" or rel in self._visible()[1]:
            self.check_listed(rel)
        fd, resolved = self._open(rel, directory=False)
        try:
            st = self._check_opened(fd, rel, directory=False)
            self.check_listed(resolved)
            if st.st_size > MAX_FILE_BYTES:
                raise TooLarge(f"{rel} is {st.st_size} bytes; files over {MAX_FILE_BYTES} bytes "
                               "are not read", hint="use search_files to find lines in it")
            chunks, left = [], min(max_bytes, st.st_size) + 1
            while left > 0:
                block = os.read(fd, min(left, 1 << 20))
                if not block:
                    break
                chunks.append(block)
                left -= len(block)
        finally:
            os.close(fd)
        data = b"".join(chunks)
        found = secret_in(data, resolved)
        if found:
            raise Withheld(f"{rel} holds what looks like a secret ({found}); its contents are withheld")
        return FileBytes(rel, resolved, data, st.st_size, st.st_mtime)

    def resolve_dir(self, path: str) -> str:
        """The resolved repository-relative form of a visible directory."""
        rel = self.normalize(path)
        self.check_lexical(rel)
        fd, resolved = self._open(rel, directory=True)
        try:
            self._check_opened(fd, rel, directory=True)
        finally:
            os.close(fd)
        self.check_listed(resolved, directory=True)
        return resolved

    # ---- listing ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """List the work tree again now (the listing is otherwise up to LISTING_TTL old)."""
        self._visible(refresh=True)

    def _visible(self, refresh: bool = False) -> tuple[frozenset[str], dict[str, dict[str, bool]]]:
        """(visible files, directory -> {child name: is_dir}), refreshed every LISTING_TTL."""
        now = time.monotonic()
        with self._lock:
            if not refresh and self._listing and now - self._listing[0] < LISTING_TTL:
                return self._listing[1], self._listing[2]
        files = set()
        for raw in sources._list_worktree_paths(Path(self.root), self.is_git, self.store_dir):
            try:
                rel = raw.decode("utf-8")
            except UnicodeDecodeError:
                continue
            if not self.is_internal(rel) and not is_secret(rel):
                files.add(rel)
        tree: dict[str, dict[str, bool]] = {"": {}}
        for rel in files:
            parent, _, name = rel.rpartition("/")
            tree.setdefault(parent, {})[name] = False
            while parent:
                up, _, dname = parent.rpartition("/")
                children = tree.setdefault(up, {})
                if children.get(dname) is True:
                    break
                children[dname] = True
                parent = up
        frozen = frozenset(files)
        with self._lock:
            self._listing = (now, frozen, tree)
        return frozen, tree

    def _entry(self, rel: str, is_dir: bool) -> Entry | None:
        try:
            st = os.lstat(os.path.join(self.root, rel))
        except OSError:
            return None
        if stat_mod.S_ISLNK(st.st_mode):
            return Entry(rel, "symlink", None, st.st_mtime)
        if is_dir or stat_mod.S_ISDIR(st.st_mode):
            return Entry(rel, "directory", None, st.st_mtime)
        return Entry(rel, "file", st.st_size, st.st_mtime)

    def list_dir(self, path: str = "", hide: frozenset[str] = frozenset()) -> tuple[str, list[Entry]]:
        """(resolved directory, its visible entries: directories first, then by name; files
        in `hide` left out)."""
        rel = self.resolve_dir(path)
        _, tree = self._visible()
        children = tree.get(rel, {})
        out = []
        for name in sorted(children, key=lambda n: (not children[n], n)):
            if (f"{rel}/{name}" if rel else name) in hide:
                continue
            e = self._entry(f"{rel}/{name}" if rel else name, children[name])
            if e is not None:
                out.append(e)
        return rel, out

    def walk(self, path: str = "", *, max_depth: int | None = None, include_hidden: bool = True,
             hide: frozenset[str] = frozenset()) -> Iterator[tuple[Entry, int]]:
        """(entry, depth) for every visible entry under a directory, depth-first, sorted;
        files in `hide` (withheld by their content) are left out."""
        rel = self.resolve_dir(path)
        _, tree = self._visible()
        stack = [(rel, 1)]
        while stack:
            d, depth = stack.pop()
            children = tree.get(d, {})
            subdirs = []
            for name in sorted(children, key=lambda n: (not children[n], n)):
                child = f"{d}/{name}" if d else name
                if (not include_hidden and name.startswith(".")) or child in hide:
                    continue
                e = self._entry(child, children[name])
                if e is None:
                    continue
                yield e, depth
                if children[name] and (max_depth is None or depth < max_depth):
                    subdirs.append((child, depth + 1))
            stack.extend(reversed(subdirs))

    def visible_files(self) -> frozenset[str]:
        return self._visible()[0]

    def commit_of(self, rev: str) -> str | None:
        """The commit a git revision names in this repository (HEAD, a short sha, a tag,
        origin/x: the resolver the CLI uses), or None."""
        try:
            return sources.resolve_ref(Path(self.root), rev)[1]
        except (CodeagentError, OSError):
            return None

    def withheld_by_content(self, rel: str) -> bool:
        """Does read_file refuse this visible file for what it holds (a key in notes.txt, an
        AWS key in settings.json)? Decided by the same detector as reading and the build;
        remembered per (size, mtime) so a listing pays for a file once."""
        try:
            st = os.stat(os.path.join(self.root, rel))
        except OSError:
            return False
        if not stat_mod.S_ISREG(st.st_mode) or st.st_size > MAX_FILE_BYTES:
            return False
        key = (st.st_size, st.st_mtime_ns)
        known = self._verdicts.get(rel)
        if known is not None and known[0] == key:
            return known[1]
        try:
            self.read_file(rel)
            verdict = False
        except Withheld:
            verdict = True
        except (NotFound, TooLarge, InvalidParameter, PathEscape, OSError):
            verdict = False
        with self._lock:
            self._verdicts[rel] = (key, verdict)
        return verdict
