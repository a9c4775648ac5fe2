"""The MCP server object: the tool table (tools/list order and profiles), strict argument
checks, error mapping and response budgets.

Every failure, an ill-typed or unknown argument included, is an `isError` result whose text is
`{"error": {"code", "message", "hint"}}` with a stable code from `codeagent.errors` and no
structured content; only an unknown tool is a JSON-RPC invalid-params error. Anything
unexpected is logged to stderr and answered as `internal_error` without its text, so no
traceback or absolute path leaks to the client.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.shared.exceptions import MCPError
from mcp_types import (INVALID_PARAMS, CallToolResult, SetLevelRequestParams, TextContent,
                       Tool as MCPTool, ToolAnnotations, ToolExecution)
from pydantic import ValidationError

from .. import __version__
from ..errors import ArgumentError, CodeagentError, InternalError
from ..query.freshness import one_look
from . import icons
from .budget import MIN_TOKENS, PAGED_FIELDS, Page, compact
from .protocol import completer, set_level
from .render import FORMATS
from .schemas import outline_schema
from .seedargs import seed_properties, translate
from .shape import shaped, slim
from .state import ServerState, metadata_of
from .tasks import TaskRegistry
from .tools.context import ContextTools
from .tools.engine import BuildTools, StatusTools
from .tools.files import FileTools
from .tools.graph import GraphTools
from .tools.impact import ImpactTools
from .tools.navigate import NavigationTools
from .tools.search import SearchTools

log = logging.getLogger("codeagent.mcp")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
READ_ONLY_CORE = ToolAnnotations(read_only_hint=True, open_world_hint=False)
BUILDS_INDEX = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                               open_world_hint=False)
# Long-running tools a client may call as a task (tools/call with `task`, then tasks/*).
TASK_TOOLS = frozenset({"index_repo", "sync_repo", "index_files", "code_research"})
# Other names a tool answers to (not listed twice in tools/list): peers' names for the same question.
TOOL_ALIASES = {"detect_changes": "get_impact", "get_status": "index_status",  # seeds' names:
                "index_codebase": "index_repo", "index_repository": "index_repo"}  # docs/seeds.md
GROUP_ICONS = {FileTools: icons.FILES, SearchTools: icons.SEARCH, NavigationTools: icons.SYMBOLS,
               GraphTools: icons.GRAPH, ImpactTools: icons.GRAPH, StatusTools: icons.INDEX,
               BuildTools: icons.INDEX, ContextTools: icons.SEARCH}


SEED_FORMAT_TOOLS = frozenset({"search_code", "search_docs"})  # seed 001 names `format` there
# metadata.protocol_version: the version of the answers' shape (metadata, handles, cursors)
ANSWER_SHAPE = "1.0"


def error_result(exc: CodeagentError, metadata: dict | None = None) -> CallToolResult:
    """An isError tool result: `{"error": {"code", "message", "hint"}, "metadata": {...}}` as
    text only.

    It carries no structuredContent: clients validate structured content against the tool's
    output schema, which describes the successful answer."""
    body = {"code": exc.code, "message": exc.message, "hint": exc.hint}
    if getattr(exc, "arguments", None):
        body["arguments"] = exc.arguments
    out = {"error": body, **({"metadata": metadata} if metadata else {})}
    return CallToolResult(content=[TextContent(type="text", text=compact(out))], is_error=True)


class CodeagentMCP(MCPServer):
    """MCPServer with strict argument checks, error mapping and response budgets."""

    def __init__(self, state: ServerState, tools: list[Tool]) -> None:
        super().__init__("codeagent", title="codeagent code index", version=__version__,
                         instructions=instructions(state), log_level="WARNING", tools=tools,
                         icons=icons.SERVER)
        self.state = state
        self._tools = {t.name: t for t in tools}
        self.tasks = TaskRegistry(self.call_tool, TASK_TOOLS & set(self._tools), self)
        self.tasks.install(self._lowlevel_server)
        self._lowlevel_server.add_request_handler("logging/setLevel", SetLevelRequestParams,
                                                  set_level)
        self.completion()(completer(state))

    async def list_tools(self) -> list[MCPTool]:
        """The SDK's listing, with `execution.taskSupport` on the tools that run as tasks."""
        listed = await super().list_tools()
        return [t.model_copy(update={"execution": ToolExecution(task_support="optional")})
                if t.name in self.tasks.task_tools else t for t in listed]

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Any = None) -> Any:
        """An unknown prompt is invalid params (-32602), as the spec asks (the SDK answered
        a ValueError, which went out as code 0)."""
        if self._prompt_manager.get_prompt(name) is None:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown prompt {name!r}",
                           data={"arguments": ["name"]})
        return await super().get_prompt(name, arguments, context)

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        called, name = name, name if name in self._tools else TOOL_ALIASES.get(name, name)
        tool = self._tools.get(name)
        if tool is None:
            raise MCPError(code=INVALID_PARAMS, message=f"unknown tool {name!r}",
                           data={"arguments": ["name"]})
        arguments = dict(arguments or {})
        try:
            fmt = _take_format(arguments)
            ignored = translate(called, arguments, str(self.state.root))
            page = Page.take(name, arguments)
            check_arguments(tool, arguments)
            with page.active(), one_look():
                result = await super().call_tool(name, arguments, context)
            if result.is_error or result.structured_content is None:
                return result
            body = result.structured_content if fmt == "json" else \
                slim(result.structured_content, tool.fn_metadata.output_model)
            body["metadata"] = self._metadata(body.get("metadata"), ignored)
            body, text = shaped(body, page, fmt)
            return CallToolResult(content=[TextContent(type="text", text=text)],
                                  structured_content=body)
        except CodeagentError as exc:
            return error_result(self.state.scrub(exc), self._metadata(None, []))
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                return error_result(_argument_error(cause), self._metadata(None, []))
            if isinstance(cause, CodeagentError):
                return error_result(self.state.scrub(cause), self._metadata(None, []))
            log.error("tool %s failed", name, exc_info=cause or exc)
            return error_result(InternalError(
                "internal error while running the tool (details are in the server's log)"))

    def _metadata(self, meta: dict | None, ignored: list[str]) -> dict:
        """The answer's metadata block (an error's: of the served index) with the seeds'
        fields: protocol_version, indexing_status, the ignored arguments; no null fields."""
        if meta is None:
            try:
                with self.state.optional_view() as view:
                    meta = metadata_of(view).model_dump(mode="json")
            except CodeagentError:
                meta = {"schema_status": "not_indexed"}
        meta = {k: v for k, v in meta.items() if v is not None}
        indexing = "indexing" if self.state.running_build() else "ready"
        if meta.get("schema_status") != "compatible":
            indexing = "not_indexed" if meta.get("schema_status") == "not_indexed" else "failed"
        meta.update(protocol_version=ANSWER_SHAPE, indexing_status=indexing)
        if ignored:
            meta["ignored_arguments"] = ignored
        return meta


def _take_format(arguments: dict[str, Any]) -> str:
    """Removes `format` (the text block's rendering: human, toon or json) and checks it."""
    fmt = arguments.pop("format", "human")
    if fmt not in FORMATS:
        raise ArgumentError("format", " or ".join(f'"{f}"' for f in FORMATS))
    return fmt


def check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """Unknown names, unencodable strings and ill-typed values (strictly: "10" is not an
    integer, "yes" not a boolean) raise an ArgumentError naming the argument."""
    known = tool.parameters.get("properties", {})
    extra = sorted(set(arguments) - set(known))
    if extra:
        raise ArgumentError(extra[0], "", f"unknown argument(s) {', '.join(extra)} for {tool.name}",
                            hint=f"accepted: {', '.join(sorted(known)) or 'no arguments'}")
    broken = _unencodable(arguments)
    if broken:
        raise ArgumentError(broken.split(".")[0].split("[")[0], "valid Unicode text",
                            f"{broken} is not valid Unicode (a lone surrogate)")
    try:
        tool.fn_metadata.arg_model.model_validate(arguments, strict=True)
    except ValidationError as exc:
        raise _argument_error(exc) from None


def _argument_error(exc: ValidationError) -> ArgumentError:
    errors = exc.errors()
    first = errors[0] if errors else {"loc": (), "msg": "invalid arguments"}
    name = str(first["loc"][0]) if first.get("loc") else "(arguments)"
    where = ".".join(map(str, first.get("loc") or ())) or name
    detail = "; ".join(f"`{'.'.join(map(str, e['loc'])) or '(arguments)'}`: {e['msg']}"
                       for e in errors[:5])
    out = ArgumentError(name, "described by the tool's input schema", detail)
    out.message = f"invalid argument `{where}`: {detail}" if len(errors) > 1 else \
        f"invalid argument `{where}`: {first['msg']}"
    out.arguments = sorted({str(e["loc"][0]) for e in errors if e.get("loc")}) or [name]
    return out


def _unencodable(value: Any, name: str = "") -> str | None:
    """The name of an argument holding a string UTF-8 cannot encode (JSON "\\ud800" decodes to
    a lone surrogate, which DuckDB and the file system refuse with internal errors)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return name or "(value)"
    elif isinstance(value, dict):
        for k, v in value.items():
            found = _unencodable(k, f"{name}.{k}".strip(".")) if isinstance(k, str) else None
            found = found or _unencodable(v, f"{name}.{k}".strip("."))
            if found:
                return found
    elif isinstance(value, list):
        return next((f for i, v in enumerate(value) if (f := _unencodable(v, f"{name}[{i}]"))), None)
    return None


def instructions(state: ServerState) -> str:
    build = ("`index_missing` means: call index_repo." if state.config.allow_build
             else "`index_missing` names the build command to run.")
    return INSTRUCTIONS + build + "\n"


INSTRUCTIONS = """\
codeagent answers questions about one repository from its content-addressed index.
Start with get_repo_overview or search_code; every hit carries handles (symbol_id,
symbol_stable_id, result_id) to pass to get_symbol, get_file_outline, get_callers... without
searching again. Every response has `metadata` (ref, manifest_id, freshness, completeness).
File tools are confined to the repository root and never serve ignored files or secrets.
Answers are small first (`max_tokens`, default 1500, counts the text and the structured
content); a cut answer says `truncated`, what it left out (`omitted`), and gives `next_cursor`
to pass back as `cursor` (read_file too). The text block is a compact rendering; `format:
"json"` makes it the JSON. Errors are isError results whose text is
{"error": {"code", "message", "hint"}}; fix the named argument and call again.
"""


CORE, ALL = "core", "all"  # in the core profile (serve's default) / only with --tools all


def tool_table(state: ServerState) -> list[tuple[Callable, str, str]]:
    """(tool function, title, profile) in tools/list order: the server's whole surface."""
    files, search, nav = FileTools(state), SearchTools(state), NavigationTools(state)
    graph, status = GraphTools(state), StatusTools(state)
    return [
        (files.list_directory, "List a directory", CORE),
        (files.get_directory_tree, "Directory tree", ALL),
        (files.list_files, "List files by glob", ALL),
        (files.read_file, "Read a file", CORE),
        (files.search_files, "Search file contents (regex or literal)", CORE),
        (files.get_repo_overview, "Repository overview", CORE),
        (search.search_code, "Search code (hybrid)", CORE),
        (ContextTools(state).get_context, "Task context within a token budget", CORE),
        (search.search_symbols, "Search symbols", CORE),
        (search.locate_symbol, "Locate a symbol's definitions", ALL),
        (search.lookup_symbol, "Look up a symbol by qualified name", CORE),
        (search.search_docs, "Search documentation", ALL),
        (search.find_similar, "Find similar symbols", ALL),
        (nav.get_symbol, "Symbol detail", CORE),
        (nav.get_source_spans, "Symbol source spans", ALL),
        (nav.get_file_outline, "File outline", CORE),
        (graph.get_callers, "Callers", CORE),
        (graph.get_callees, "Callees", CORE),
        (graph.get_references, "References", CORE),
        (graph.get_implementations, "Implementations", ALL),
        (graph.get_dependencies, "Dependencies", ALL),
        (graph.get_dependents, "Dependents", ALL),
        (graph.code_research, "Multi-hop code research", CORE),
        (ImpactTools(state).get_impact, "Impact of a change and tests to run", CORE),
        (status.index_status, "Index status", CORE),  # also answers as get_status (TOOL_ALIASES)
    ]


def build_tool_table(state: ServerState) -> list[tuple[Callable, str, str]]:
    """The tools `serve --allow-build` adds (in every profile)."""
    build = BuildTools(state)
    return [(build.index_repo, "Index the repository", CORE),
            (build.sync_repo, "Sync the index", CORE),
            (build.index_files, "Re-index files", CORE)]


def create_server(state: ServerState) -> CodeagentMCP:
    """The server with the tools of its profile registered in the documented order."""
    rows = [(fn, title, profile, READ_ONLY) for fn, title, profile in tool_table(state)]
    if state.config.allow_build:
        rows += [(fn, title, profile, BUILDS_INDEX) for fn, title, profile in build_tool_table(state)]
    tools = []
    for fn, title, profile, annotations in rows:
        if state.config.tools == CORE and profile != CORE:
            continue
        core = state.config.tools == CORE  # the default listing: kept small (~14k characters)
        if core and annotations is READ_ONLY:  # the other hints mean nothing for a read-only tool
            annotations = READ_ONLY_CORE
        tool = Tool.from_function(fn, title=title, annotations=annotations,
                                  description=" ".join((fn.__doc__ or "").split()),
                                  icons=None if core else GROUP_ICONS.get(type(fn.__self__)),
                                  structured_output=True)
        fields = set((tool.fn_metadata.output_schema or {}).get("properties", {}))
        tool.fn_metadata.output_schema = outline_schema(tool.fn_metadata.output_schema,
                                                        required_only=core)
        _tune_input_schema(tool, core, paged=bool(fields & {*PAGED_FIELDS, "content"}))
        tools.append(tool)
    return CodeagentMCP(state, tools)


def _tune_input_schema(tool: Tool, core: bool, paged: bool) -> None:
    """Optional arguments are plain types (leaving one out is how to say null: clients that
    fill forms or convert CLI strings read `type` as one name); every tool takes `max_tokens`
    and `format`, those answering with a list or a file's content also `cursor`, and each
    the seeds' names for its arguments (seedargs). The core listing leaves out what the
    server checks anyway (string lengths; `format` but where a seed names it)."""
    tool.parameters.pop("title", None)
    props = tool.parameters.setdefault("properties", {})
    for name, prop in list(props.items()):
        props[name] = _without_null(prop)
        props[name].pop("title", None)
        if core:
            props[name].pop("maxLength", None)
            props[name].pop("minLength", None)
    props.update(seed_properties(tool.name))
    props["max_tokens"] = {"type": "integer"} if core else {  # checked: MIN_TOKENS..MAX_TOKENS
        "type": "integer", "minimum": MIN_TOKENS}
    if not core or tool.name in SEED_FORMAT_TOOLS:
        props["format"] = {"type": "string", "enum": list(FORMATS)}
    if paged:
        props["cursor"] = {"type": "string"}


def _without_null(prop: dict) -> dict:
    if prop.get("default", 0) is not None:
        return prop
    rest = {k: v for k, v in prop.items() if k != "default"}
    if isinstance(rest.get("type"), list) and "null" in rest["type"]:
        kinds = [t for t in rest["type"] if t != "null"]
        return {**rest, "type": kinds[0] if len(kinds) == 1 else kinds}
    options = [o for o in rest.get("anyOf", []) if o != {"type": "null"}]
    if "anyOf" in rest and len(options) == 1:
        return {**{k: v for k, v in rest.items() if k != "anyOf"}, **options[0]}
    return prop
