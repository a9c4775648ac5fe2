"""Engine tools: index status (always), and build triggers (only with `serve --allow-build`).

The server never writes the index itself: a build runs `codeagent build` as a separate
process, reports progress while it runs, and is killed if the client cancels the request.
The next request after the build swapped the ref answers from the new manifest.
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field

from ...errors import CodeagentError, IndexIncompatible, IndexMissing, InvalidParameter, StoreLocked
from ...query.status import file_states, served_status
from .files import iso
from ..schemas import BuildJob, BuildRecord, FileState, ResponseMetadata, Status
from ..state import ServerState, metadata_of

BUILD_TIMEOUT = 3600.0
Force = Annotated[bool, Field(description="Read and hash every file again (no stat cache)")]
RefArg = Annotated[str | None, Field(max_length=256, description="Branch, tag, sha or ref")]


class StatusTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def index_status(self, ref: RefArg = None) -> Status:
        """Index health: manifest, commit, counts, freshness, refs and recent builds (alias
        get_status). Use it when answers look stale or an index is missing."""
        try:
            with self.state.view(ref) as view:
                return self._status(view)
        except IndexMissing as exc:
            return self._unindexed("not_indexed", exc)
        except IndexIncompatible as exc:
            return self._unindexed("incompatible", exc)

    def _status(self, view) -> Status:
        m = served_status(view, self.state.root)
        counts, builds = m["counts"], m["recent_builds"]
        last = max((b.get("at") or 0 for b in builds), default=0)
        return Status(healthy=True, index_status="indexing" if self.state.running_build() else "ready",
                      ref=view.ref, manifest_id=view.manifest_id,
                      commit=m["commit"], schema_version=m["schema_version"], source=m["source"],
                      counts=counts, languages=sorted(counts.get("by_language", {})),
                      embedder=m["embedder_id"], freshness=m["freshness"],
                      refs=m["refs"],
                      last_indexed_at=iso(last) if last else None,
                      recent_builds=[BuildRecord.model_validate(r) for r in builds],
                      active_job=self.state.running_build(),
                      build_tools_enabled=self.state.config.allow_build,
                      watcher_active=self.state.watch is not None,
                      embeddings_count=_embeddings(view) if m["embedder_id"] else 0,
                      search_quality=m["search_quality"],
                      metadata=metadata_of(view).model_copy(
                          update={"freshness": m["freshness"]["state"]}))

    def _unindexed(self, status: str, exc: CodeagentError) -> Status:
        self.state.scrub(exc)
        schema = "not_indexed" if status == "not_indexed" else "reindex_required"
        return Status(healthy=status == "not_indexed", index_status=status, ref=self.state.config.ref,
                      manifest_id=None, commit=None, schema_version=None,
                      freshness={"state": "unknown", "detail": f"{exc.message} ({exc.hint})"},
                      active_job=self.state.running_build(),
                      build_tools_enabled=self.state.config.allow_build,
                      metadata=ResponseMetadata(schema_status=schema))


def _embeddings(view) -> int | None:
    """How many vectors the index holds (None when they cannot be read)."""
    from ...query.semantic import vector_artifact  # numpy: only for an index with vectors

    try:
        return len(vector_artifact(view))
    except CodeagentError:
        return None


class BuildTools:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    async def _build(self, ctx: Context, mode: str, ref: str | None,
                     paths: list[str] = (), force: bool = False) -> BuildJob:
        root, store = self.state.root, self.state.store_dir
        cmd = [sys.executable, "-m", "codeagent", "build", str(root), "--json", "--progress-json",
               "--store", str(store), *(["--force"] if force else [])]
        if ref:
            cmd += ["--ref", ref]
        for path in paths:
            cmd += ["--path", path]
        if self.state.active_job is not None:
            raise StoreLocked(f"build {self.state.active_job['job_id']} is still running",
                              hint="wait for it (see index_status.active_job) or cancel its request")
        job_id = secrets.token_hex(6)
        started = time.monotonic()
        self.state.active_job = {"job_id": job_id, "mode": mode, "ref": ref, "started_at": iso(time.time())}
        await ctx.report_progress(0, None, f"build {job_id} started ({mode})")
        try:
            async with await anyio.open_process(cmd) as proc:
                try:
                    out, err, meter = await _communicate(proc, ctx)
                finally:
                    if proc.returncode is None:
                        proc.kill()
                        with anyio.CancelScope(shield=True):
                            await proc.wait()
        finally:
            self.state.active_job = None
        ms = (time.monotonic() - started) * 1000
        if proc.returncode != 0:
            raise _error_text(out, err)
        result = json.loads(out)
        await meter.finish(f"build {job_id} done: {result.get('files_parsed')} of "
                           f"{result.get('files_total')} files parsed")
        with self.state.optional_view() as view:
            meta = metadata_of(view)
        return BuildJob(job_id=job_id, status="published" if result.get("changed") else "unchanged",
                        mode=mode, ref=result.get("ref"), manifest_id=result.get("manifest_id"),
                        files_total=result.get("files_total"), files_parsed=result.get("files_parsed"),
                        duration_ms=int(round(ms)), metadata=meta)

    async def index_repo(self, ctx: Context, ref: RefArg = None, force: Force = False) -> BuildJob:
        """Build (or incrementally rebuild) the index in a separate process; unchanged
        files are reused. Use it when index_missing is answered. Reports progress in files;
        cancelling kills the build and keeps the previous index."""
        return await self._build(ctx, "full", ref or self._git_ref(), force=force)

    async def sync_repo(self, ctx: Context, ref: RefArg = None, force: Force = False) -> BuildJob:
        """Bring the index up to date with the work tree (or `ref`); only changed files
        are parsed. Use it after edits when freshness is `stale`."""
        return await self._build(ctx, "incremental", ref or self._git_ref(), force=force)

    async def index_files(
        self, ctx: Context,
        paths: Annotated[list[Annotated[str, Field(max_length=4096)]],
                         Field(min_length=1, max_length=100, description="Repository-relative paths")],
    ) -> BuildJob:
        """Re-index these files (at most 100) after you changed them; only they are read,
        every other file keeps its indexed state. Use it after editing a few files, before
        searching them again."""
        wanted = []
        for p in paths:
            rel = self.state.sandbox.normalize(p)
            self.state.sandbox.check_lexical(rel)
            if not rel:
                raise InvalidParameter("paths must name files, not the repository root")
            wanted.append(rel)
        job = await self._build(ctx, "files", None, wanted)
        return job.model_copy(update={"files": self._file_states(job.manifest_id, wanted)})

    def _file_states(self, manifest_id: str | None, paths: list[str]) -> list[FileState]:
        """What the new index holds for each asked-for path (indexed, skipped and why, or
        absent: deleted, ignored or never a file)."""
        if manifest_id is None:
            return []
        return [FileState.model_validate(s) for s in file_states(self.state.store_dir, manifest_id, paths)]

    def _git_ref(self) -> str | None:
        ref = self.state.config.ref
        return None if ref in (None, "worktree") else ref


class BuildMeter:
    """Build progress as MCP progress: the files parsed so far of those to parse, then the
    assembly's steps as fractions of one more unit (publishing), so the value only increases
    and, while files are parsed, counts them."""

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.value = 0.0
        self.files = 0  # files the build parses
        self.steps = 0  # assembly steps seen

    async def line(self, raw: bytes) -> bool:
        """Report one `--progress-json` line; False for any other line."""
        try:
            step = json.loads(raw)
            stage, done, total = step["stage"], int(step["done"]), int(step["total"])
        except (ValueError, KeyError, TypeError):
            return False
        if stage == "parse":
            self.files = total
            await self._report(done, f"parsing: {done} of {total} files")
        elif stage not in ("walk", "scan"):
            self.steps += 1
            await self._report(self.files + 1 - 0.5 ** self.steps, f"assembling ({stage})")
        return True

    async def finish(self, message: str) -> None:
        await self._report(self.files + 1, message)

    async def _report(self, value: float, message: str) -> None:
        if value > self.value:
            self.value = value
            await self.ctx.report_progress(value, self.files + 1, message)


async def _communicate(proc, ctx: Context) -> tuple[bytes, bytes, BuildMeter]:
    """(stdout, stderr without progress lines, the meter that reported the build's progress)."""
    out, err = bytearray(), bytearray()
    meter = BuildMeter(ctx)

    async def pump(stream, buf: bytearray) -> None:
        async for chunk in stream:
            buf.extend(chunk)

    async def lines(stream) -> None:
        pending = b""
        async for chunk in stream:
            *complete, pending = (pending + chunk).split(b"\n")
            for raw in complete:
                if not await meter.line(raw):
                    err.extend(raw + b"\n")
        err.extend(pending)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump, proc.stdout, out)
        tg.start_soon(lines, proc.stderr)
        with anyio.fail_after(BUILD_TIMEOUT):
            await proc.wait()
    return bytes(out), bytes(err), meter


def _error_text(out: bytes, err: bytes) -> CodeagentError:
    """The failed build's own error (its code, message and hint), for an isError result."""
    try:
        body = json.loads(out)["error"]
        exc = CodeagentError(body.get("message") or "build failed", hint=body.get("hint"))
        exc.code = body.get("code") or exc.code
        return exc
    except (ValueError, KeyError, TypeError):
        lines = err.decode("utf-8", "replace").strip().splitlines()
        return CodeagentError(lines[-1] if lines else "build failed")
