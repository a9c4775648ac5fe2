"""`codeagent build`: walk -> hash -> parse (cache misses only) -> manifest -> assemble -> swap."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import format as fmt, sources
from ..errors import NotARepository, StoreCorrupt
from ..hashing import hash_bytes
from ..format.manifest import FileEntry, Manifest, load_manifest, shard_key, stored_form
from ..store import Store, StoreLock, append_log, disk_write_failure
from .assemble.plan import Assembled, Assembly
from .budget import MemoryBudget, over_budget
from .embed import attach_vectors, embedder_of
from .history import history_step
from .languages import detect_language
from .parse import ParseResult, parse_bytes, parse_job
from .secret_cache import load_secret_patterns
from ..refs import WORKTREE_REF

Progress = Callable[[str, int, int], None]  # (stage, done, total)
POOL_THRESHOLD = 64  # below this many files to parse, a process pool costs more than it saves


@dataclass
class BuildOptions:
    repo: Path
    store_dir: Path | None = None
    rev: str | None = None  # None: the work tree
    jobs: int = 0  # 0: one per core
    max_bytes: int | None = None  # None: the repository's max_file_size, else 2 MiB
    lock_wait: float = 0.0
    progress: Progress | None = None
    embedder: str | None = None  # embedder id; None: no vectors
    # Work tree only: re-read just these paths; every other file keeps its entry in the
    # previous manifest (none yet: everything is read).
    paths: frozenset[str] | None = None
    memory: MemoryBudget = field(default_factory=MemoryBudget)  # what parsing and assembly may hold
    overlay: bool = True  # work tree: small changes as an overlay (assemble/overlay.py); False: consolidate
    consolidate_later: bool = False  # the caller consolidates when idle: overlays grow further (the watcher)
    graph_later: bool = False  # a small change's overlay is published before its graph step; the next build runs it
    history: bool = True  # store the indexed commit's history view (indexer/history.py) for ranking
    force: bool = False  # ignore the stat cache: every file is read and hashed again

    @property
    def store_path(self) -> Path:
        return self.store_dir or (self.repo / ".codeagent")


@dataclass
class BuildResult:
    ref: str
    commit: str | None
    manifest_id: str
    previous_manifest_id: str | None
    changed: bool
    files_total: int = 0
    files_parsed: int = 0
    files_reused: int = 0
    files_skipped: dict[str, int] = field(default_factory=dict)
    skipped_files: list[dict] = field(default_factory=list)
    shards_written: int = 0
    seconds: float = 0.0
    # what this build mended in the store, one sentence each (lost shards parsed again, a
    # damaged assembly rebuilt, an unreadable previous manifest)
    repairs: list[str] = field(default_factory=list)
    # wall seconds per step: scan (walk, stat cache, known content), parse (read, hash, parse
    # what is new), embed (vectors, with an embedder), assemble (DuckDB and vector artifacts,
    # ref swap), graph (the graph step of an overlay published before it, and its swap)
    phases: dict[str, float] = field(default_factory=dict)
    consolidation_due: bool = False  # an overlay past its bound: a consolidate_later caller should now
    graph_pending: bool = False  # published before its graph step (graph_later): the next build runs it
    history: dict | None = None  # what the history step did (HistoryResult.to_dict), None: not run

    def to_dict(self) -> dict:
        return {
            "ref": self.ref, "commit": self.commit, "manifest_id": self.manifest_id,
            "previous_manifest_id": self.previous_manifest_id, "changed": self.changed,
            "files_total": self.files_total, "files_parsed": self.files_parsed,
            "files_reused": self.files_reused,
            "files_skipped": {"total": sum(self.files_skipped.values()), "by_reason": self.files_skipped,
                              "files": self.skipped_files},
            "shards_written": self.shards_written, "repairs": self.repairs,
            "seconds": round(self.seconds, 4),
            "phases": {k: round(v, 4) for k, v in self.phases.items()},
            "consolidation_due": self.consolidation_due, "graph_pending": self.graph_pending,
            "history": self.history,
        }


def _resolve(opts: BuildOptions) -> tuple[Path, bool]:
    repo = sources.require_repo(opts.repo.resolve())
    top = sources.git_toplevel(repo)
    if opts.rev is not None:
        if top is None:
            raise NotARepository(f"{repo} is not a git repository, so --ref {opts.rev} cannot be read",
                                 hint="index the directory as it is with `codeagent build --worktree`")
        return top, True
    return (top or repo), top is not None


class _Builder:
    def __init__(self, opts: BuildOptions, repo: Path, store: Store) -> None:
        self.opts = opts
        self.repo = repo
        self.store = store
        self.progress = opts.progress or (lambda stage, done, total: None)
        self.parsed = 0
        self.reused = 0
        self.known: dict[tuple[str, str], FileEntry] = {}
        self.to_parse = 0  # files whose content the scan did not know
        self.read = 0      # of those, files done (known content after all, skipped or parsed)
        self.shards_written = 0
        self._pool = None
        self.tables: dict[str, object] = {}  # shard id -> Arrow table of shards parsed now
        self._table_bytes = 0
        self.graph_seconds = 0.0  # the second phase of an overlay published before its graph

    def assembly(self, manifest: Manifest, manifest_id: str, previous: Manifest | None,
                 previous_id: str | None, base_copy=None) -> Assembly:
        """What this build assembles: `manifest` after the ref's readable `previous` one."""
        return Assembly(self.store, manifest, manifest_id, memory=self.opts.memory, tables=self.tables,
                        base_copy=base_copy, progress=self.progress,
                        previous=Assembled(previous, previous_id) if previous is not None and previous_id else None)

    def known_entries(self, previous: Manifest | None) -> dict[tuple[str, str], FileEntry]:
        """The previous manifest's entries by content, unless another extractor made them (a
        bump of EXTRACTOR_VERSION re-parses everything, as a changed shard key says)."""
        if previous is None or previous.extractor_version != fmt.EXTRACTOR_VERSION:
            return {}
        return {(f.blob, f.language): f for f in previous.files if f.blob and (f.indexed or f.reason)}

    def reuse(self, path: str, blob: str, size: int, language: str) -> FileEntry | None:
        """The entry for already-known content (previous manifest, then the action cache)."""
        hit = self.known.get((blob, language))
        if hit is not None and hit.path == path:  # the common case: unchanged at its path
            e: FileEntry | None = hit
        elif hit is not None:
            e = FileEntry(path, hit.blob, hit.size, hit.language, hit.status, hit.reason,
                          hit.shard_key, hit.shard)
        else:
            e = self.entry_from_action(path, blob, size, language)
        self.reused += e is not None
        return e

    def advance(self, files: int) -> None:
        self.read += files
        self.progress("parse", self.read, self.to_parse)

    def entry_from_action(self, path: str, blob: str, size: int, language: str) -> FileEntry | None:
        key = shard_key(blob, language)
        value = self.store.get_action(key)
        if value is None:
            return None
        if value.startswith("skip:"):
            return FileEntry(path, blob, size, language, fmt.STATUS_SKIPPED, value[5:], key, "")
        return FileEntry(path, blob, size, language, fmt.STATUS_INDEXED, "", key, value)

    def record(self, blob: str, language: str, size: int, result: ParseResult) -> FileEntry:
        """Store one parse result under its shard key; the entry's path is filled by the caller."""
        key = shard_key(blob, language)
        self.parsed += 1
        if result.shard is None:
            self.store.put_action(key, f"skip:{result.reason}")
            return FileEntry("", blob, size, language, fmt.STATUS_SKIPPED, result.reason, key, "")
        shard_id, written = self.store.add(result.shard)
        self.shards_written += written
        self.store.put_action(key, shard_id)
        if result.table is not None and self._table_bytes + len(result.table) <= self.opts.memory.fresh_table_bytes:
            from .shard import table_from_ipc  # pyarrow: a no-op build parses nothing

            self.tables[shard_id] = table_from_ipc(result.table)
            self._table_bytes += len(result.table)
        return FileEntry("", blob, size, language, fmt.STATUS_INDEXED, "", key, shard_id)

    def _executor(self):
        if self._pool is None:
            from ..runtime.pool import fork_pool  # multiprocessing (10-20 ms): only a build that parses enough forks

            self._pool = fork_pool(self.opts.jobs or os.cpu_count() or 1, _die_with_parent)
        return self._pool

    def start_workers(self, n_files: int) -> None:
        """Fork the parse workers now if parsing `n_files` will use them (see `parse_all`):
        before the caller starts threads, which a forked child must not inherit mid-call."""
        jobs = self.opts.jobs or os.cpu_count() or 1
        if jobs > 1 and n_files >= POOL_THRESHOLD:
            self._executor()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def parse_all(self, todo: list[tuple[sources.SourceFile, str, bytes, str]]) -> list[FileEntry]:
        """Parse (file, language, bytes, blob) jobs, deduplicating identical content."""
        unique: dict[tuple[str, str], tuple[bytes, int, str]] = {}
        for f, lang, data, blob in todo:
            unique.setdefault((blob, lang), (data, len(data), f.path))
        copies = Counter((blob, lang) for _, lang, _, blob in todo)
        keys = list(unique)
        results: dict[tuple[str, str], FileEntry] = {}
        jobs = self.opts.jobs or os.cpu_count() or 1
        if jobs > 1 and (len(keys) >= POOL_THRESHOLD or self._pool is not None):
            args = ((unique[k][0], k[1], k[0], self.opts.max_bytes, unique[k][2]) for k in keys)
            parsed = self._executor().map(parse_job, args, chunksize=8)
        else:
            parsed = (parse_bytes(unique[k][0], k[1], k[0], self.opts.max_bytes, unique[k][2]) for k in keys)
        for k, res in zip(keys, parsed):
            results[k] = self.record(k[0], k[1], unique[k][1], res)
            self.advance(copies[k])
        return [FileEntry(f.path, blob, len(data), lang, results[(blob, lang)].status,
                          results[(blob, lang)].reason, results[(blob, lang)].shard_key,
                          results[(blob, lang)].shard)
                for f, lang, data, blob in todo]


def _die_with_parent() -> None:
    """Pool workers exit when the build process dies (Linux): a killed build must not leave
    orphaned parsers behind, blocked forever on a queue nobody feeds."""
    import ctypes
    import signal

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect
        os._exit(0)


def _read_contents(repo: Path, is_commit: bool, files: list[sources.SourceFile]) -> Iterator[tuple[sources.SourceFile, bytes | None]]:
    if is_commit:
        by_sha: dict[str, list[sources.SourceFile]] = {}
        for f in files:
            by_sha.setdefault(f.git_sha, []).append(f)
        for sha, data in sources.read_git_blobs(repo, list(by_sha)):
            for f in by_sha[sha]:
                yield f, data
        return
    for f in files:
        try:
            yield f, sources.read_worktree_file(repo, f)
        except OSError:
            yield f, None


def _read_and_parse(builder: _Builder, repo: Path, is_commit: bool, need: list[sources.SourceFile],
                    cache: sources.JsonCache) -> list[FileEntry]:
    """Read the files whose content is unknown, reuse what hashes to known content, parse
    the rest in bounded batches."""
    out: list[FileEntry] = []
    todo: list[tuple[sources.SourceFile, str, bytes, str]] = []
    pending = 0
    for f, data in _read_contents(repo, is_commit, need):
        lang = detect_language(f.path)
        if data is None:
            reason = fmt.SKIP_MISSING_OBJECT if is_commit else fmt.SKIP_UNREADABLE
            out.append(FileEntry(f.path, "", f.size, lang, fmt.STATUS_SKIPPED, reason))
            builder.advance(1)
            continue
        blob = hash_bytes(data)
        if is_commit or f.stat_key:
            cache.set(f.git_sha if is_commit else f.path,
                      [blob, len(data)] if is_commit else [*f.stat_key, blob])
        e = builder.reuse(f.path, blob, len(data), lang)
        if e is not None:
            out.append(e)
            builder.advance(1)
            continue
        todo.append((f, lang, data, blob))
        pending += len(data)
        if pending >= builder.opts.memory.parse_batch_bytes:
            out.extend(builder.parse_all(todo))
            todo, pending = [], 0
    out.extend(builder.parse_all(todo))
    return out


def build(opts: BuildOptions) -> BuildResult:
    """Index `opts.repo` at `opts.rev` (or its work tree) into the store; see module doc."""
    started = time.perf_counter()
    repo, is_git = _resolve(opts)
    store = Store(opts.store_path if opts.store_dir else repo / ".codeagent", create=True)
    if opts.rev is not None:
        ref, commit = sources.resolve_ref(repo, opts.rev)
    else:
        ref, commit = WORKTREE_REF, (sources.head_commit(repo) if is_git else None)
    with StoreLock(store, wait=opts.lock_wait):
        store.sweep_tmp()
        try:
            history = history_step(store.root, repo, commit) if opts.history and is_git else None  # before the swap:
            result = _build_locked(opts, repo, store, ref, commit)  # a reader of the new index finds its view
            result.history = history
        except Exception as exc:
            failure = disk_write_failure(exc) or over_budget(exc, opts.memory)
            if failure is None:
                raise
            store.sweep_tmp()
            raise failure from exc
    result.seconds = time.perf_counter() - started
    append_log(store, "builds", {"ref": ref, "commit": commit, "manifest_id": result.manifest_id,
                                 "changed": result.changed, "files_parsed": result.files_parsed,
                                 "seconds": round(result.seconds, 3), "at": int(time.time())})
    return result


def _build_locked(opts: BuildOptions, repo: Path, store: Store, ref: str, commit: str | None) -> BuildResult:
    builder = _Builder(opts, repo, store)
    clock = time.perf_counter()
    is_commit = opts.rev is not None
    cache = sources.JsonCache(store, "gitblobs.json" if is_commit else "worktree-stat.json")
    builder.progress("walk", 0, 0)
    opts, files = _walk(builder, repo, store, cache, commit)
    repairs: list[str] = []
    previous_id, previous = _previous(store, ref, repairs)
    entries, need = _reused_and_needed(builder, store, previous, files, repairs)
    phases = {"scan": time.perf_counter() - clock}
    with contextlib.ExitStack() as stack:
        base_copy = None
        if need and previous is not None:  # a change is likely: copy the base while parsing
            from .assemble.base import BaseCopy  # only a build with something to parse copies a base

            builder.start_workers(len(need))
            if not _overlay_wanted(opts, previous):  # an overlay copies no database
                base_copy = stack.enter_context(BaseCopy(store, previous_id))
        clock = time.perf_counter()
        builder.progress("parse", 0, len(need))
        with store.batched_actions():
            try:
                entries.extend(_read_and_parse(builder, repo, is_commit, need, cache))
            finally:
                builder.close()
            if not is_commit:
                cache.retain({f.path for f in files})

            phases["parse"] = time.perf_counter() - clock
            clock = time.perf_counter()
            if base_copy is not None and embedder_of(opts.embedder, previous):
                base_copy.settle()  # embedding forks workers: let the I/O threads finish first
            manifest = Manifest(ref=ref, commit=commit, source="git" if is_commit else "worktree",
                                files=tuple(sorted(entries, key=lambda e: e.path)))
            manifest = attach_vectors(store, manifest, opts.embedder, previous, opts.progress)
        phases["embed"] = time.perf_counter() - clock
        clock = time.perf_counter()
        data, manifest_id = stored_form(  # a delta only where an overlay follows the change
            store, manifest, previous if _overlay_wanted(opts, previous) else None, previous_id)
        intact, mended = _assembly_repairs(store, manifest_id, previous_id)
        repairs += mended
        cache.save()  # before the swap: a failed write must leave the previous index untouched
        due = False
        if _to_assemble(store, manifest_id, previous_id, intact):
            store.put(data)
            due = _assemble_and_swap(builder, ref, previous_id,
                                     builder.assembly(manifest, manifest_id, previous, previous_id, base_copy))
    phases.update(assemble=time.perf_counter() - clock - builder.graph_seconds, graph=builder.graph_seconds)
    skipped = [{"path": e.path, "reason": e.reason} for e in manifest.files if not e.indexed]
    return BuildResult(
        ref=ref, commit=commit, manifest_id=manifest_id, previous_manifest_id=previous_id,
        changed=manifest_id != previous_id, files_total=len(manifest.files),
        files_parsed=builder.parsed, files_reused=builder.reused,
        files_skipped=manifest.counts["skipped_by_reason"], skipped_files=skipped,
        shards_written=builder.shards_written, phases=phases, repairs=repairs, consolidation_due=due,
        graph_pending=store.graph_pending(manifest_id),
    )


def _assembly_repairs(store: Store, manifest_id: str, previous_id: str | None) -> tuple[bool, list[str]]:
    """(the assembly is complete (its COMPLETE marker read once) and undamaged, what a build mends)."""
    assembled = store.is_assembled(manifest_id)
    damage = store.assembly_problems(manifest_id, trust_mtime=True) if assembled else []
    said = []
    if manifest_id == previous_id and damage:
        said = [f"the assembled index was damaged ({damage[0]}): assembled again"]
    elif manifest_id == previous_id and not assembled and store.has(manifest_id):
        said = ["the assembled index was missing, half-built or in an older layout: assembled again"]
    return assembled and not damage, said


def _to_assemble(store: Store, manifest_id: str, previous_id: str | None, intact: bool) -> bool:
    """Whether anything is left to store, assemble or swap: another manifest than the previous
    one (BuildResult.changed), or the same one not `intact` or with its graph pending."""
    return (manifest_id != previous_id or not intact or not store.has(manifest_id)
            or store.graph_pending(manifest_id))


def _walk(builder: _Builder, repo: Path, store: Store, cache: sources.JsonCache,
          commit: str | None) -> tuple[BuildOptions, list[sources.SourceFile]]:
    """(the options with the tree's size cap settled, the files of the tree or work tree) under
    the repository's include/exclude rules."""
    opts, is_commit = builder.opts, builder.opts.rev is not None
    if opts.force:  # nothing the cache remembers is trusted: every file is read and hashed again
        cache.data.clear()
    rules = sources.commit_rules(repo, commit) if is_commit else sources.worktree_rules(repo)
    if opts.max_bytes is None:
        opts = builder.opts = replace(opts, max_bytes=rules.max_file_size or fmt.DEFAULT_MAX_FILE_BYTES)
    files = (sources.walk_commit(repo, commit, cache, opts.max_bytes, rules) if is_commit
             else sources.walk_worktree(repo, store, cache, opts.max_bytes, rules))
    return opts, files


def _only_paths(opts: BuildOptions, previous: Manifest | None,
                files: list[sources.SourceFile]) -> tuple[list[FileEntry], list[sources.SourceFile]]:
    """(the previous manifest's entries kept as they are, the files to look at): with
    `opts.paths`, only those paths are looked at and every other file keeps its entry."""
    if opts.paths is None or previous is None or opts.rev is not None:
        return [], files
    return ([e for e in previous.files if e.path not in opts.paths],
            [f for f in files if f.path in opts.paths])


def _previous(store: Store, ref: str, repairs: list[str]) -> tuple[str | None, Manifest | None]:
    """(the manifest id `ref` names, that manifest if this build can read it); damage is said in `repairs`."""
    previous_id = store.read_ref(ref)
    if not previous_id:
        return previous_id, None
    try:
        return previous_id, load_manifest(store, previous_id)
    except Exception as exc:  # unreadable or incompatible: rebuild everything from the action cache
        if isinstance(exc, StoreCorrupt):
            repairs.append(f"the previous manifest {previous_id[:12]} could not be read "
                           f"({exc.message}): rebuilt from the sources")
            store.drop_damaged([previous_id])  # else the same manifest could not be written again
        return previous_id, None


def _reused_and_needed(builder: _Builder, store: Store, previous: Manifest | None, files,
                       repairs: list[str]) -> tuple[list[FileEntry], list[sources.SourceFile]]:
    """(entries known without parsing: skipped files and reused shards, files to parse); the
    previous manifest's files whose shards are gone are parsed again, said in `repairs`."""
    builder.known = builder.known_entries(previous)
    if previous is not None and previous.extractor_version != fmt.EXTRACTOR_VERSION:  # said: a format bump
        repairs.append(f"the index was built by extractor version {previous.extractor_version}, this codeagent's "
                       f"is {fmt.EXTRACTOR_VERSION} (format/__init__.py says what changed): every file parsed again")
    lost = _forget_lost_shards(store, builder.known)
    if lost:
        repairs.append(f"{len(lost)} files whose shards were missing from the store or damaged were parsed "
                       f"again ({', '.join(lost[:3])}{', ...' if len(lost) > 3 else ''})")
    entries, files = _only_paths(builder.opts, previous, files)
    need: list[sources.SourceFile] = []
    for f in files:
        lang = detect_language(f.path)
        if f.skip:
            entries.append(FileEntry(f.path, f.blob, max(f.size, 0), lang, fmt.STATUS_SKIPPED, f.skip))
            continue
        e = builder.reuse(f.path, f.blob, f.size, lang) if f.blob else None
        if e is not None:
            entries.append(e)
        else:
            need.append(f)
    builder.to_parse = len(need)
    if need:
        load_secret_patterns(store)
    return entries, need


def _assemble_and_swap(builder: _Builder, ref: str, previous_id: str | None, assembly: Assembly) -> bool:
    """Assemble the new manifest (on the previous one's when readable), point `ref` at it,
    prune assemblies neither a ref nor the previous manifest (`previous_id`, read or not)
    needs; True: consolidation_due."""
    from .assemble.graph_part import graph_phase  # pyarrow, DuckDB: not for a no-op build
    from .assemble.overlay import assemble_change, consolidation_due
    from .assemble.pipeline import prune_assembled

    store, manifest, manifest_id = assembly.store, assembly.manifest, assembly.manifest_id
    overlay = _overlay_wanted(builder.opts, assembly.previous and assembly.previous.manifest)
    assemble_change(assembly, overlay=overlay, deferred=builder.opts.consolidate_later, two_phase=overlay)
    if assembly.base_copy is not None:
        assembly.base_copy.close()
    store.set_ref(ref, manifest_id)
    if not builder.opts.graph_later and store.graph_pending(manifest_id):
        clock = time.perf_counter()
        graph_phase(store, manifest, manifest_id, memory=builder.opts.memory, tables=builder.tables,
                    progress=builder.progress)
        store.set_ref(ref, manifest_id)  # the commit point of the graph part: flushed, and heard
        builder.graph_seconds = time.perf_counter() - clock
    keep = set(store.list_refs().values()) | ({previous_id} if previous_id else set())
    prune_assembled(store, keep)
    return consolidation_due(store, manifest_id)


def _overlay_wanted(opts: BuildOptions, previous: Manifest | None) -> bool:
    """A work-tree build without vectors may be an overlay (assemble/overlay.py)."""
    return opts.overlay and opts.rev is None and previous is not None and embedder_of(opts.embedder, previous) is None


def _forget_lost_shards(store: Store, known: dict[tuple[str, str], FileEntry]) -> list[str]:
    """Drop known entries whose shard is gone from the store or damaged (deleted here; see
    store/damage.py), so their files are parsed again; returns their paths."""
    if not known:
        return []
    present = store.present_objects() - store.drop_damaged({e.shard for e in known.values() if e.shard})
    lost = [key for key, e in known.items() if e.shard and e.shard not in present]
    return sorted(known.pop(key).path for key in lost)
