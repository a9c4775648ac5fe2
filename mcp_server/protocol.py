"""The protocol requests beside tools: `logging/setLevel` (the server's log threshold) and
`completion/complete` for path and symbol arguments (values from the sandbox and the index)."""

from __future__ import annotations

import logging
import posixpath
from typing import Any

from mcp_types import Completion, EmptyResult, SetLevelRequestParams

from ..errors import CodeagentError
from ..query import find_symbols
from .state import NoIndex, ServerState

# MCP (syslog) levels -> Python's.
LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "notice": logging.INFO,
          "warning": logging.WARNING, "error": logging.ERROR, "critical": logging.CRITICAL,
          "alert": logging.CRITICAL, "emergency": logging.CRITICAL}
MAX_COMPLETIONS = 100  # the spec's cap on values per answer
PATH_ARGUMENTS = frozenset({"path", "directory", "paths"})
SYMBOL_ARGUMENTS = frozenset({"symbol_id", "qualified_name", "name"})


async def set_level(_ctx: Any, params: SetLevelRequestParams) -> EmptyResult:
    """The client's threshold for this server's logs (written to stderr)."""
    logging.getLogger("codeagent").setLevel(LEVELS[params.level])
    return EmptyResult()


def completer(state: ServerState):
    """The completion handler: repository paths for path arguments, qualified names of
    indexed symbols for symbol arguments, nothing for others."""

    async def complete(_ref: Any, argument: Any, _context: Any) -> Completion:
        import anyio

        prefix = argument.value or ""
        if argument.name in PATH_ARGUMENTS:
            values = await anyio.to_thread.run_sync(complete_path, state, prefix)
        elif argument.name in SYMBOL_ARGUMENTS:
            values = await anyio.to_thread.run_sync(complete_symbol, state, prefix)
        else:
            values = []
        return Completion(values=values[:MAX_COMPLETIONS], total=len(values),
                          has_more=len(values) > MAX_COMPLETIONS)

    return complete


def complete_path(state: ServerState, prefix: str) -> list[str]:
    """Visible entries of the prefix's directory whose path starts with it (directories with
    a trailing slash)."""
    directory = prefix.rsplit("/", 1)[0] if "/" in prefix else ""
    try:
        _rel, entries = state.sandbox.list_dir(directory)
    except CodeagentError:
        return []
    out = [e.path + ("/" if e.type == "directory" else "") for e in entries]
    return sorted(p for p in out if p.startswith(prefix) and posixpath.basename(p.rstrip("/")))


def complete_symbol(state: ServerState, prefix: str) -> list[str]:
    """Qualified names of indexed symbols starting with the prefix (by name prefix first)."""
    if not prefix:
        return []
    with state.optional_view() as view:
        if isinstance(view, NoIndex):
            return []
        name = prefix.rsplit(".", 1)[-1]
        resp = find_symbols(view, name or prefix, match="prefix", limit=MAX_COMPLETIONS * 2,
                            include_references=False)
    return list(dict.fromkeys(h.qualified_name for h in resp.results
                              if "." not in prefix or h.qualified_name.startswith(prefix)))
