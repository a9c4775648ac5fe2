"""The tasks API of MCP 2025-11-25: a `tools/call` with a `task` field is answered at once with
a task handle, the call runs in the background, and `tasks/get`, `tasks/result`, `tasks/list`
and `tasks/cancel` follow it.

The SDK defines these types only (it dispatches none of the methods), so the server adds them:
a middleware takes task-augmented `tools/call` requests before the SDK's `tools/call` handler
(whose answer must be a CallToolResult), and four request handlers serve `tasks/*`. A task
reports its progress in its status message. A tool result with `isError` ends the task as
`failed` (the spec's rule for tool calls); `tasks/result` returns that result as it is.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import anyio
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp_types import (INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, CallToolRequestParams,
                       CallToolResult, CancelTaskRequestParams, CancelTaskResult,
                       CreateTaskResult, ErrorData, GetTaskPayloadRequestParams,
                       GetTaskRequestParams, GetTaskResult, ListTasksResult,
                       PaginatedRequestParams, ServerTasksCapability, ServerTasksRequestsCapability,
                       Task, TasksCallCapability, TasksCancelCapability, TasksListCapability,
                       TasksToolsCapability)

log = logging.getLogger("codeagent.mcp")

CAPABILITY = ServerTasksCapability(
    list=TasksListCapability(), cancel=TasksCancelCapability(),
    requests=ServerTasksRequestsCapability(tools=TasksToolsCapability(call=TasksCallCapability())))
RELATED_TASK = "io.modelcontextprotocol/related-task"
DEFAULT_TTL_MS = 3_600_000
MAX_TTL_MS = 24 * 3_600_000
POLL_INTERVAL_MS = 1000
MAX_TASKS = 200  # finished tasks beyond this are forgotten, oldest first
PAGE_SIZE = 50
TERMINAL = frozenset({"completed", "failed", "cancelled"})

RunTool = Callable[[str, dict[str, Any], Context], Awaitable[CallToolResult]]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task: its state, and its outcome once it ends."""

    task_id: str
    tool: str
    ttl: int
    created: float = field(default_factory=time.time)
    created_at: str = field(default_factory=_now)
    updated_at: str = field(default_factory=_now)
    status: str = "working"
    message: str | None = None
    result: CallToolResult | None = None
    error: ErrorData | None = None
    done: anyio.Event = field(default_factory=anyio.Event)
    runner: asyncio.Task | None = None

    def wire(self) -> Task:
        return Task(task_id=self.task_id, status=self.status,  # type: ignore[arg-type]
                    status_message=self.message, created_at=self.created_at,
                    last_updated_at=self.updated_at, ttl=self.ttl,
                    poll_interval=POLL_INTERVAL_MS)

    def update(self, status: str | None = None, message: str | None = None) -> None:
        if self.status in TERMINAL:
            return
        self.status = status or self.status
        self.message = message if message is not None else self.message
        self.updated_at = _now()
        if self.status in TERMINAL:
            self.done.set()

    def expired(self, now: float) -> bool:
        return self.status in TERMINAL and now > self.created + self.ttl / 1000


class TaskContext(Context):
    """The Context a background call gets: progress goes to its task's status message (the
    request that started it has been answered already)."""

    _record: Any = None

    async def report_progress(self, progress: float, total: float | None = None,
                              message: str | None = None) -> None:
        of = f" of {total:g}" if total is not None else ""
        self._record.update(message=message or f"{progress:g}{of}")


class TaskRegistry:
    """The tasks of one server, and the request handlers that serve them."""

    def __init__(self, run_tool: RunTool, task_tools: frozenset[str], server: Any) -> None:
        self._run_tool = run_tool
        self.task_tools = task_tools
        self._server = server
        self._tasks: dict[str, TaskRecord] = {}

    def install(self, lowlevel: Any) -> None:
        """Serve tasks/* on `lowlevel`, take task-augmented tools/call, advertise the capability."""
        lowlevel.middleware.append(self._middleware)
        lowlevel.add_request_handler("tasks/get", GetTaskRequestParams, self.on_get)
        lowlevel.add_request_handler("tasks/result", GetTaskPayloadRequestParams, self.on_result)
        lowlevel.add_request_handler("tasks/list", PaginatedRequestParams, self.on_list)
        lowlevel.add_request_handler("tasks/cancel", CancelTaskRequestParams, self.on_cancel)
        make_options = lowlevel.create_initialization_options

        def with_tasks(*args: Any, **kwargs: Any) -> Any:
            options = make_options(*args, **kwargs)
            options.capabilities.tasks = CAPABILITY
            return options

        lowlevel.create_initialization_options = with_tasks

    async def _middleware(self, ctx: Any, call_next: Any) -> Any:
        params = ctx.params
        if ctx.method != "tools/call" or not isinstance(params, Mapping) or params.get("task") is None:
            return await call_next(ctx)
        try:
            call = CallToolRequestParams.model_validate(params, by_name=False)
        except ValueError:
            return await call_next(ctx)  # the SDK answers malformed params as usual
        return self.start(call)

    def start(self, call: CallToolRequestParams) -> CreateTaskResult:
        """A task running `call` in the background (METHOD_NOT_FOUND for a tool without task
        support, as the spec asks)."""
        if call.name not in self.task_tools:
            raise MCPError(code=METHOD_NOT_FOUND,
                           message=f"tool {call.name!r} does not run as a task; call it without `task`",
                           data={"arguments": ["task"]})
        self._forget_expired()
        ttl = min(call.task.ttl if call.task and call.task.ttl else DEFAULT_TTL_MS, MAX_TTL_MS)
        record = TaskRecord(task_id=secrets.token_hex(8), tool=call.name, ttl=ttl)
        self._tasks[record.task_id] = record
        context = TaskContext(mcp_server=self._server)
        context._record = record
        record.runner = asyncio.get_running_loop().create_task(
            self._run(record, call.name, dict(call.arguments or {}), context))
        return CreateTaskResult(task=record.wire())

    async def _run(self, record: TaskRecord, name: str, arguments: dict, context: Context) -> None:
        try:
            result = await self._run_tool(name, arguments, context)
        except asyncio.CancelledError:
            record.update("cancelled", "cancelled by the client")
            raise
        except MCPError as exc:
            record.error = exc.error
            record.update("failed", exc.error.message)
        except Exception:
            log.exception("task %s (%s) failed", record.task_id, name)
            record.error = ErrorData(code=INTERNAL_ERROR, message="internal error while running the task")
            record.update("failed", record.error.message)
        else:
            record.result = result
            record.update("failed" if result.is_error else "completed",
                          _error_message(result) if result.is_error else "done")

    def _get(self, task_id: str) -> TaskRecord:
        self._forget_expired()
        record = self._tasks.get(task_id)
        if record is None:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown task {task_id!r} (finished tasks "
                           "are kept for their ttl)", data={"arguments": ["taskId"]})
        return record

    def _forget_expired(self) -> None:
        now = time.time()
        for task_id in [t for t, r in self._tasks.items() if r.expired(now)]:
            del self._tasks[task_id]
        finished = [t for t, r in self._tasks.items() if r.status in TERMINAL]
        for task_id in finished[:max(0, len(self._tasks) - MAX_TASKS)]:
            del self._tasks[task_id]

    async def on_get(self, _ctx: Any, params: GetTaskRequestParams) -> GetTaskResult:
        return GetTaskResult(**self._get(params.task_id).wire().model_dump())

    async def on_result(self, _ctx: Any, params: GetTaskPayloadRequestParams) -> dict[str, Any]:
        """The call's own result once the task ends (waiting for it), tagged with the task."""
        record = self._get(params.task_id)
        await record.done.wait()
        if record.status == "cancelled":
            raise MCPError(code=INVALID_PARAMS, message=f"task {record.task_id} was cancelled: it has no result")
        if record.error is not None:
            raise MCPError.from_error_data(record.error)
        assert record.result is not None
        body = record.result.model_dump(by_alias=True, mode="json", exclude_none=True)
        body["_meta"] = {**(body.get("_meta") or {}), RELATED_TASK: {"taskId": record.task_id}}
        return body

    async def on_list(self, _ctx: Any, params: PaginatedRequestParams) -> ListTasksResult:
        self._forget_expired()
        offset = _offset(params.cursor)
        records = list(self._tasks.values())[offset:offset + PAGE_SIZE]
        more = offset + PAGE_SIZE < len(self._tasks)
        return ListTasksResult(tasks=[r.wire() for r in records],
                               next_cursor=_cursor(offset + PAGE_SIZE) if more else None)

    async def on_cancel(self, _ctx: Any, params: CancelTaskRequestParams) -> CancelTaskResult:
        """Stops a working task (a build's process is killed; the previous index stays)."""
        record = self._get(params.task_id)
        if record.status in TERMINAL:
            raise MCPError(code=INVALID_PARAMS, message=f"cannot cancel task {record.task_id}: "
                           f"it is already {record.status}")
        if record.runner is not None:
            record.runner.cancel()
            with anyio.move_on_after(10):
                await record.done.wait()
        record.update("cancelled", "cancelled by the client")
        return CancelTaskResult(**record.wire().model_dump())


def _error_message(result: CallToolResult) -> str:
    """The message of an isError result's `{"error": {...}}` text."""
    try:
        return json.loads(result.content[0].text)["error"]["message"]  # type: ignore[union-attr]
    except (ValueError, LookupError, AttributeError, TypeError):
        return "the tool answered with an error"


def _cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(str(offset).encode()).decode().rstrip("=")


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    try:
        offset = int(base64.urlsafe_b64decode(cursor.encode("ascii") + b"==").decode())
    except (ValueError, UnicodeError):
        offset = -1
    if offset < 0:
        raise MCPError(code=INVALID_PARAMS, message="invalid cursor: pass the nextCursor of an "
                       "earlier tasks/list answer", data={"arguments": ["cursor"]})
    return offset
