"""`codeagent org build`: one plan for a fleet of repositories, run by either engine.

list each repository's trees (the walk and known-content steps of `codeagent build --ref`)
-> union the git blobs nobody knows yet -> read them once, drop what the action cache maps to
shards -> parse the rest as batched tasks -> one manifest per repository and ref (the same
bytes `codeagent build --ref` writes for it alone) -> assemble each distinct manifest as a
task -> point `repos/<name>/<ref>` at it. See docs/org.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from ... import format as fmt
from ... import sources
from ...errors import StoreCorrupt
from ...format.fleet import fleet_ref, write_listing
from ...format.manifest import FileEntry, Manifest, shard_key, stored_form
from ...hashing import hash_bytes
from ...store import Store, StoreLock, append_log, atomic_write, disk_write_failure
from ..build import BuildOptions, _Builder, _previous, _reused_and_needed, _walk
from ..languages import detect_language
from .engines import Engine
from .spec import RepoSpec, local_checkout
from .tasks import ParseJob, assemble_manifest, parse_batch, store_root

Progress = Callable[[str, int, int], None]  # (stage, done, total)
BATCH_BYTES = 4 << 20  # source bytes per parse task
BATCH_FILES = 256  # files per parse task


@dataclass
class RefPlan:
    """One repository's ref through the plan."""

    repo: str
    checkout: Path
    ref: str  # the store ref name a single build writes (heads/main)
    commit: str
    builder: _Builder
    previous_id: str | None
    entries: list[FileEntry]  # known without reading (skipped, reused)
    need: list[sources.SourceFile]  # to read (and parse unless the action cache knows them)
    repairs: list[str]
    manifest_id: str = ""

    def to_dict(self) -> dict:
        return {"ref": self.ref, "commit": self.commit, "manifest_id": self.manifest_id,
                "previous_manifest_id": self.previous_id, "changed": self.manifest_id != self.previous_id,
                "files_total": len(self.entries), "files_read": len(self.need), "repairs": self.repairs}


@dataclass
class FleetResult:
    repos: dict[str, list[RefPlan]] = field(default_factory=dict)
    engine: str = "local"
    workers: int = 1
    blobs_read: int = 0  # distinct git blobs no cache knew
    blobs_parsed: int = 0  # distinct (content, language) parsed: each once for the whole fleet
    files_parsed_per_ref: int = 0  # what one build per repository and ref would have parsed
    shards_written: int = 0
    assembled: int = 0
    seconds: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"engine": self.engine, "workers": self.workers,
                "repos": [{"name": name, "refs": [p.to_dict() for p in plans]}
                          for name, plans in self.repos.items()],
                "blobs_read": self.blobs_read, "blobs_parsed": self.blobs_parsed,
                "files_parsed_per_ref": self.files_parsed_per_ref,
                "shards_written": self.shards_written, "assembled": self.assembled,
                "seconds": round(self.seconds, 4),
                "phases": {k: round(v, 4) for k, v in self.phases.items()}}


def build_fleet(specs: list[RepoSpec], store: Store, engine: Engine, *, progress: Progress | None = None,
                lock_wait: float = 0.0, batch_bytes: int = BATCH_BYTES,
                batch_files: int = BATCH_FILES) -> FleetResult:
    """Build every repository's refs of `specs` into `store` (module doc)."""
    progress = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    result = FleetResult(engine=type(engine).__name__.removesuffix("Engine").lower(), workers=engine.workers)
    with StoreLock(store, wait=lock_wait):
        store.sweep_tmp()
        try:
            plans = _run(specs, store, engine, progress, result, batch_bytes, batch_files)
        except Exception as exc:  # a full disk says so (as `codeagent build` does), not a traceback
            failure = disk_write_failure(exc)
            if failure is None:
                raise
            store.sweep_tmp()
            raise failure from exc
    result.seconds = time.perf_counter() - started
    append_log(store, "builds", {"fleet": len(specs), "refs": len(plans), "parsed": result.blobs_parsed,
                                 "engine": result.engine, "seconds": round(result.seconds, 3),
                                 "at": int(time.time())})
    return result


def _run(specs: list[RepoSpec], store: Store, engine: Engine, progress: Progress, result: FleetResult,
         batch_bytes: int, batch_files: int) -> list[RefPlan]:
    """The plan's stages under the store's lock; the refs are swapped last."""
    cache = sources.JsonCache(store, "gitblobs.json")
    clock = time.perf_counter()
    plans = _list(specs, store, cache, progress)
    result.phases["list"] = time.perf_counter() - clock
    clock = time.perf_counter()
    with store.batched_actions():
        blobs = _parse(plans, store, cache, engine, progress, result, batch_bytes, batch_files)
    result.phases["parse"] = time.perf_counter() - clock
    clock = time.perf_counter()
    for plan in plans:
        _write_manifest(plan, store, blobs)
    cache.save()
    _assemble(plans, store, engine, progress, result)
    result.phases["assemble"] = time.perf_counter() - clock
    for plan in plans:
        result.repos.setdefault(plan.repo, []).append(plan)
    write_listing(store.root, {s.name: [p.ref for p in result.repos.get(s.name, [])] for s in specs},
                  lambda path, data: atomic_write(path, data, store.tmp_dir, durable=True))
    return plans


def _list(specs: list[RepoSpec], store: Store, cache: sources.JsonCache, progress: Progress) -> list[RefPlan]:
    """Each repository's refs walked, with what the store already knows of their files."""
    plans: list[RefPlan] = []
    clones = store.root / fmt.CACHE_DIR / "fleet-clones"
    for n, spec in enumerate(specs, 1):
        checkout = local_checkout(spec, clones)
        planned: set[str] = set()
        for rev in spec.refs:
            ref, commit = sources.resolve_ref(checkout, rev)
            if ref in planned:  # two spellings of one ref (HEAD and main)
                continue
            planned.add(ref)
            builder = _Builder(BuildOptions(repo=checkout, store_dir=store.root, rev=rev), checkout, store)
            _opts, files = _walk(builder, checkout, store, cache, commit)
            repairs: list[str] = []
            previous_id, previous = _previous(store, fleet_ref(spec.name, ref), repairs)
            entries, need = _reused_and_needed(builder, store, previous, files, repairs)
            plans.append(RefPlan(spec.name, checkout, ref, commit, builder, previous_id, entries, need, repairs))
        progress("repositories listed", n, len(specs))
    return plans


def _parse(plans: list[RefPlan], store: Store, cache: sources.JsonCache, engine: Engine,
           progress: Progress, result: FleetResult, batch_bytes: int,
           batch_files: int) -> dict[str, tuple[str, int] | None]:
    """Read every git blob a plan needs once, parse each content and language no cache maps
    to a shard once for the fleet; git sha -> (blob id, size), None for a missing object.
    Batches are sent while the blobs are read: the driver holds a few batches of bytes."""
    blobs: dict[str, tuple[str, int] | None] = {}
    queued: set[tuple[str, str]] = set()
    result.files_parsed_per_ref = sum(len(p.need) for p in plans)
    root = store_root(store)
    unread = _unread(plans)
    progress("blobs to parse", 0, sum(len(shas) for shas in unread.values()))  # read, then parsed unless known
    calls = ((root, batch) for batch in _batches(_jobs(unread, store, cache, blobs, queued, result),
                                                 batch_bytes, batch_files))
    done = 0
    for answers in engine.map_unordered(parse_batch, calls):
        for key, value, written in answers:
            store.put_action(key, value)
            result.shards_written += written
        done += len(answers)
        progress("parsed", done, len(queued))
    result.blobs_parsed = len(queued)
    return blobs


def _jobs(unread: dict[Path, dict[str, list[tuple[str, str, int]]]], store: Store, cache: sources.JsonCache,
          blobs: dict, queued: set[tuple[str, str]], result: FleetResult) -> Iterator[ParseJob]:
    """The parse jobs of the blobs `unread` names, as they are read (filling `blobs` and `queued`)."""
    for checkout, files in unread.items():
        for sha, data in sources.read_git_blobs(checkout, list(files)):
            result.blobs_read += 1
            if data is None:
                blobs[sha] = None
                continue
            blob = hash_bytes(data)
            blobs[sha] = (blob, len(data))
            cache.set(sha, [blob, len(data)])
            for path, language, max_bytes in files[sha]:
                if (blob, language) not in queued and store.get_action(shard_key(blob, language)) is None:
                    queued.add((blob, language))
                    yield (data, language, blob, max_bytes, path)


def _unread(plans: list[RefPlan]) -> dict[Path, dict[str, list[tuple[str, str, int]]]]:
    """checkout -> git sha -> [(path, language, size cap)] of the blobs the plans need, each
    sha read from the first repository holding it (fleet order: the path a single build of the
    first repository would pass to the secret detectors)."""
    out: dict[Path, dict[str, list[tuple[str, str, int]]]] = {}
    owner: dict[str, Path] = {}
    for plan in plans:
        max_bytes = plan.builder.opts.max_bytes or fmt.DEFAULT_MAX_FILE_BYTES
        for f in plan.need:
            checkout = owner.setdefault(f.git_sha, plan.checkout)
            uses = out.setdefault(checkout, {}).setdefault(f.git_sha, [])
            language = detect_language(f.path)
            if all(lang != language for _, lang, _ in uses):
                uses.append((f.path, language, max_bytes))
    return out


def _batches(jobs: Iterator[ParseJob], batch_bytes: int, batch_files: int) -> Iterator[list[ParseJob]]:
    batch: list[ParseJob] = []
    size = 0
    for job in jobs:
        batch.append(job)
        size += len(job[0])
        if size >= batch_bytes or len(batch) >= batch_files:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _write_manifest(plan: RefPlan, store: Store, blobs: dict[str, tuple[str, int] | None]) -> None:
    """The ref's manifest, as `codeagent build --ref` makes it (build._read_and_parse's entries
    for the files it read), stored."""
    entries = list(plan.entries)
    for f in plan.need:
        language = detect_language(f.path)
        known = blobs.get(f.git_sha)
        if known is None:
            entries.append(FileEntry(f.path, "", f.size, language, fmt.STATUS_SKIPPED, fmt.SKIP_MISSING_OBJECT))
            continue
        entry = plan.builder.reuse(f.path, known[0], known[1], language)
        if entry is None:
            raise StoreCorrupt(f"{plan.repo} {plan.ref}: no shard for {f.path} after parsing",
                               hint="run `codeagent verify --store` and build again")
        entries.append(entry)
    plan.entries = entries
    manifest = Manifest(ref=plan.ref, commit=plan.commit, source="git",
                        files=tuple(sorted(entries, key=lambda e: e.path)))
    data, plan.manifest_id = stored_form(store, manifest, None, plan.previous_id)
    store.put(data)


def _assemble(plans: list[RefPlan], store: Store, engine: Engine, progress: Progress, result: FleetResult) -> None:
    """Assemble each distinct manifest not yet assembled as a task, then swap the refs."""
    from ..assemble.pipeline import prune_assembled  # pyarrow, DuckDB: only once there is work

    todo: dict[str, str | None] = {}
    for plan in plans:
        if not store.is_assembled(plan.manifest_id) or store.graph_pending(plan.manifest_id):
            todo.setdefault(plan.manifest_id, plan.previous_id)
    root = store_root(store)
    progress("assembled", 0, len(todo))
    for n, _mid in enumerate(engine.map_unordered(assemble_manifest, ((root, m, p) for m, p in todo.items())), 1):
        progress("assembled", n, len(todo))
    result.assembled = len(todo)
    for plan in plans:
        store.set_ref(fleet_ref(plan.repo, plan.ref), plan.manifest_id)
    keep = set(store.list_refs().values()) | {p.previous_id for p in plans if p.previous_id}
    prune_assembled(store, keep)
