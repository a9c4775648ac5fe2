"""File-system tools: thin adapters over `codeagent.query.sandbox` (paths, .gitignore, secrets) and
the query engine's RE2 grep. Each method is one MCP tool; its signature is the input schema."""

from __future__ import annotations

import base64
import json
import posixpath
import time
from datetime import datetime, timezone
from typing import Annotated, Literal

from pydantic import Field

from ...errors import BinaryFile, InvalidParameter
from ...query import grep_texts
from ...query.globs import glob_matcher
from ...query.freshness import worktree_freshness
from ...query.overview import overview
from ...query.sandbox import Entry, looks_binary, sniff_mime
from ...query.worktree_grep import grep_candidates, read_texts
from ..budget import budget_chars, cursor_at, skipped
from ..schemas import (DirectoryListing, DirectoryTree, DirEntry, FileContent, FileList, FileMatch,
                      FileSearch, LanguageStat, RepoOverview, SearchMatchContext, SkippedFile,
                      TreeNode)
from ..state import NoIndex, ServerState, metadata_of

MAX_LIST_ENTRIES = 1000
MAX_READ_LINES = 10_000
DEFAULT_READ_BYTES = 500_000
READ_OVERHEAD = 880  # characters of a read_file answer besides its content (metadata, fields)

# search_files leaves these out unless `glob` is given (seed 004's excludes that are never
# sources: installed packages, minified bundles, lock files, source maps)
_EXCLUDED_NAMES = glob_matcher("{*.min.js,*.min.css,package-lock.json,yarn.lock,pnpm-lock.yaml,*.map}")
_EXCLUDED_DIRS = glob_matcher("**/node_modules/**")


def excluded_by_default(path: str) -> bool:
    return _EXCLUDED_NAMES(path) or _EXCLUDED_DIRS(path)

RepoPath = Annotated[str, Field(description="Repository-relative path; \"\" or \".\" is the root",
                                max_length=4096)]


def iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def dir_entry(e: Entry) -> DirEntry:
    return DirEntry(name=e.name, path=e.path, type=e.type, size=e.size, modified_at=iso(e.mtime))


class FileTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.sandbox = state.sandbox

    def _metadata(self, completeness: str = "complete"):
        with self.state.optional_view() as view:
            return metadata_of(view, completeness)

    def _withheld(self) -> frozenset[str]:
        """Files read_file withholds for their content (a key saved as notes.txt): those the
        served index skipped as secrets, and of the files changed since its build, those the
        detector refuses now; without an index, every file the detector refuses."""
        with self.state.optional_view() as view:
            if isinstance(view, NoIndex):
                changed = self.sandbox.visible_files()
                known: set[str] = set()
            else:
                known = {p for (p,) in view.sql(
                    "SELECT path FROM files WHERE status = 'skipped' AND reason = 'secret'")}
                changed = ()
                if view.ref == "worktree":
                    look = worktree_freshness(view.store, view.repo, view.manifest_id)
                    changed = (*look.added, *look.modified)
        return frozenset(known | {p for p in changed if self.sandbox.withheld_by_content(p)})

    def list_directory(self, path: RepoPath = "") -> DirectoryListing:
        """Files and directories directly inside one directory ("" is the root). Use it to
        look around one level at a time; ignored files, secrets and .git are not listed."""
        rel, entries = self.sandbox.list_dir(path, hide=self._withheld())
        truncated = len(entries) > MAX_LIST_ENTRIES
        return DirectoryListing(path=rel, entries=[dir_entry(e) for e in entries[:MAX_LIST_ENTRIES]],
                                truncated=truncated,
                                metadata=self._metadata("truncated" if truncated else "complete"))

    def _tree(self, root: str, depth: int, max_entries: int) -> tuple[TreeNode, int, bool]:
        nodes = {root: TreeNode(name=posixpath.basename(root) or ".", path=root, type="directory",
                                children=[])}
        count, truncated = 0, False
        for e, _level in self.sandbox.walk(root, max_depth=depth, hide=self._withheld()):
            parent = nodes.get(posixpath.dirname(e.path))
            if parent is None:
                continue
            if count >= max_entries or len(parent.children or []) >= MAX_LIST_ENTRIES:
                parent.truncated = truncated = True
                continue
            node = TreeNode(name=e.name, path=e.path, type=e.type, size=e.size,
                            children=[] if e.type == "directory" else None)
            parent.children.append(node)  # type: ignore[union-attr]
            if e.type == "directory":
                nodes[e.path] = node
            count += 1
        return nodes[root], count, truncated

    def get_directory_tree(
        self, path: RepoPath = "",
        depth: Annotated[int, Field(ge=1, le=10, description="Levels below `path`")] = 3,
        max_entries: Annotated[int, Field(ge=1, le=10_000, description="Entry cap for the whole tree")] = 1000,
    ) -> DirectoryTree:
        """The nested directory structure under a path, a few levels deep. Use it for
        the layout of one subtree; big directories are cut (`truncated`)."""
        rel = self.sandbox.resolve_dir(path)
        tree, count, truncated = self._tree(rel, depth, max_entries)
        return DirectoryTree(tree=tree, entry_count=count, truncated=truncated,
                             metadata=self._metadata("truncated" if truncated else "complete"))

    def list_files(
        self, directory: RepoPath = "",
        pattern: Annotated[str | None, Field(description="Path glob: `*.py` matches names anywhere; "
                                             "`src/**/*.ts` is anchored at the root")] = None,
        max_depth: Annotated[int, Field(ge=1, le=32)] = 10,
        include_hidden: bool = False,
        limit: Annotated[int, Field(ge=1, le=5000)] = 500,
    ) -> FileList:
        """Files under a directory matching a glob (`*.py`, `src/**/*.ts`), in path order.
        Use it to find files by name or extension."""
        match = glob_matcher(pattern)
        out, total = [], 0
        for e, _level in self.sandbox.walk(directory, max_depth=max_depth,
                                           include_hidden=include_hidden, hide=self._withheld()):
            if not match(e.path):
                continue
            total += 1
            if len(out) < limit + skipped():
                out.append(e)
        out.sort(key=lambda e: e.path)
        truncated = total > len(out)
        return FileList(files=[dir_entry(e) for e in out], total_count=total, truncated=truncated,
                        metadata=self._metadata("truncated" if truncated else "complete"))

    def read_file(
        self, path: RepoPath,
        line_start: Annotated[int | None, Field(ge=1, description="1-based first line")] = None,
        line_end: Annotated[int | None, Field(ge=1, description="1-based last line (inclusive)")] = None,
        max_bytes: Annotated[int, Field(ge=1, le=4 * 1024 * 1024)] = DEFAULT_READ_BYTES,
        encoding: Literal["utf-8", "base64"] = "utf-8",
    ) -> FileContent:
        """Read a file or line range (whole lines within max_tokens; next_cursor for more).
        Use it after a search or outline; binary files need encoding=base64."""
        if line_start and line_end and line_end < line_start:
            raise InvalidParameter(f"line_end ({line_end}) is before line_start ({line_start})")
        fb = self.sandbox.read_file(path)
        mime = sniff_mime(fb.resolved, fb.data)
        meta = self._metadata()
        common = dict(path=fb.path, resolved_path=fb.resolved, size=fb.size, mime_type=mime,
                      modified_at=iso(fb.mtime))
        room = max(64, budget_chars() - READ_OVERHEAD)  # the content is in the text block too
        if encoding == "base64":
            start = skipped()
            cut = fb.data[start:start + min(max_bytes, room * 3 // 8)]
            truncated = start + len(cut) < len(fb.data)
            meta.completeness = "truncated" if truncated else "complete"
            return FileContent(content=base64.b64encode(cut).decode("ascii"), encoding="base64",
                               truncated=truncated, **common, metadata=meta,
                               next_cursor=cursor_at(start + len(cut), meta.manifest_id)
                               if truncated and cut else None)
        if looks_binary(fb.data):
            raise BinaryFile(f"{fb.path} is a binary file ({mime})",
                             hint="pass encoding='base64' to read its bytes")
        first = skipped() + 1 if skipped() else line_start
        text, first, last, total, truncated = _slice_lines(
            fb.data.decode("utf-8", errors="replace"), first, line_end, max_bytes, room)
        meta.completeness = "truncated" if truncated else "complete"
        rest = min(line_end or total, total)
        omitted = (f"lines {last + 1}-{rest} of {total}: pass next_cursor as `cursor`, or raise "
                   "max_tokens" if truncated and rest > last else None)
        return FileContent(content=text, encoding="utf-8", total_lines=total, line_start=first,
                           line_end=last, truncated=truncated, **common, metadata=meta,
                           omitted=omitted,
                           next_cursor=cursor_at(last, meta.manifest_id)
                           if truncated and last >= first else None)

    def search_files(
        self,
        pattern: Annotated[str, Field(min_length=1, max_length=2000, description="Text or RE2 regex")],
        is_regex: bool = False,
        glob: Annotated[str | None, Field(description="Only files whose path matches this glob")] = None,
        context_lines: Annotated[int, Field(ge=0, le=10)] = 2,
        case_sensitive: bool = False,
        max_results: Annotated[int, Field(ge=1, le=1000)] = 50,
        timeout_ms: Annotated[int, Field(ge=10, le=60_000)] = 5000,
    ) -> FileSearch:
        """Grep the work tree for a literal or an RE2 regex (node_modules/, minified and lock
        files only when `glob` asks). Use it for exact text; search_code for concepts."""
        started = time.perf_counter()
        deadline = time.monotonic() + timeout_ms / 1000
        with self.state.optional_view() as view:
            paths, searched = grep_candidates(
                self.sandbox, None if isinstance(view, NoIndex) else view, self.state.root,
                pattern, regex=is_regex, case_sensitive=case_sensitive, glob=glob)
            meta = metadata_of(view)
        if glob is None:  # what a client rarely greps for: only when its glob asks
            paths = [p for p in paths if not excluded_by_default(p)]
        texts, unread = read_texts(self.sandbox, paths, deadline)
        found, total, files, truncated = grep_texts(
            texts, pattern, regex=is_regex, case_sensitive=case_sensitive, context=context_lines,
            max_results=max_results + skipped(), deadline=deadline, timeout=timeout_ms / 1000)
        matches = [FileMatch(result_id=f"{m.path}:{m.line_number}", path=m.path,
                             line_number=m.line_number, line_content=m.line,
                             context=SearchMatchContext(before=m.before, after=m.after))
                   for m in found]
        meta.completeness = "truncated" if truncated else "complete"
        return FileSearch(matches=matches, total_matches=total, files_searched=searched,
                          files_matched=files, truncated=truncated,
                          skipped=[SkippedFile(path=p, reason=r) for p, r in unread],
                          duration_ms=int(round((time.perf_counter() - started) * 1000)), metadata=meta)

    def get_repo_overview(
        self, max_depth: Annotated[int, Field(ge=1, le=5)] = 2, include_stats: bool = True,
    ) -> RepoOverview:
        """Top directories, file counts and languages of the repository. Use it first
        in an unfamiliar repository."""
        tree, _count, truncated = self._tree("", max_depth, MAX_LIST_ENTRIES)
        entries = (e for e, _level in self.sandbox.walk("", hide=self._withheld())) \
            if include_stats else ()
        with self.state.optional_view() as view:
            o = overview(entries, None if isinstance(view, NoIndex) else view)
            meta = metadata_of(view, "truncated" if truncated else "complete")
        tree.name = posixpath.basename(str(self.state.root))
        return RepoOverview(root=tree.name, tree=tree, total_files=o.total_files,
                            total_directories=o.total_directories, total_bytes=o.total_bytes,
                            languages=[LanguageStat(language=x.language, files=x.files,
                                                    bytes=x.bytes) for x in o.languages],
                            metadata=meta)


def _slice_lines(text: str, line_start: int | None, line_end: int | None,
                 max_bytes: int, room: int) -> tuple[str, int, int, int, bool]:
    """(content, first line, last line, total lines, truncated) for a 1-based inclusive range:
    whole lines while they fit `max_bytes` and `room` (characters of the answer, the line
    counted as the JSON and the text block carry it); the first line always, cut if alone
    it is over."""
    lines = text.splitlines(keepends=True)
    total = len(lines)
    first = line_start or 1
    if first > max(total, 1):
        raise InvalidParameter(f"line_start {first} is past the end of the file ({total} lines)")
    last = min(line_end or total, total)
    out, used, chars, truncated = [], 0, 0, False
    for i in range(first - 1, last):
        size = len(lines[i].encode("utf-8"))
        cost = len(json.dumps(lines[i], ensure_ascii=False)) + len(lines[i])
        if len(out) >= MAX_READ_LINES or used + size > max_bytes or (out and chars + cost > room):
            truncated = True
            break
        if not out and (cost > room or size > max_bytes):  # one line over the budget: its start
            out.append(lines[i][:min(room // 3, max_bytes)])
            truncated = True
            break
        out.append(lines[i])
        used += size
        chars += cost
    return "".join(out), first, first + len(out) - 1 if out else first - 1, total, truncated
