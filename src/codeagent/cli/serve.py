"""`codeagent serve`: the read-only MCP server over stdio (default) or streamable HTTP."""

from __future__ import annotations

import ipaddress
import logging
import sys
from pathlib import Path

import click

from . import run_command
from ..errors import InvalidParameter

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@click.command("serve")
@click.option("--repo", type=click.Path(path_type=Path, file_okay=False), default=".",
              help="Repository to serve (default: the current directory).")
@click.option("--ref", default=None, metavar="REF",
              help="Ref to answer from (branch, tag, store ref or manifest id); default: the "
                   "work-tree index, else the current branch's.")
@click.option("--store", "store_dir", type=click.Path(path_type=Path), default=None,
              help="Store directory (default: REPO/.codeagent).")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True,
              help="stdio for a client that spawns the server; http for streamable HTTP at /mcp, "
                   "the legacy HTTP+SSE transport at /sse and a health check at /health.")
@click.option("--host", default="127.0.0.1", show_default=True, help="HTTP bind address.")
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="HTTP port.")
@click.option("--allow-remote", is_flag=True,
              help="Allow a non-loopback --host. The server has no authentication: only use it "
                   "on a trusted network.")
@click.option("--allow-build", is_flag=True,
              help="Also offer index_repo, sync_repo and index_files, which run `codeagent build` "
                   "as a separate process. Without it the server is strictly read-only.")
@click.option("--tools", "profile", type=click.Choice(["core", "all"]), default="core",
              show_default=True,
              help="core: the 14 tools an agent needs most (a small tools/list); all: every "
                   "tool, including get_directory_tree, list_files, locate_symbol, search_docs, "
                   "find_similar, get_source_spans, get_implementations, get_dependencies, "
                   "get_dependents (index_status also answers as get_status).")
@click.option("--max-frame-bytes", type=click.IntRange(1024), default=4 * 1024 * 1024,
              show_default=True, help="Largest stdio message accepted; longer ones are refused.")
@click.option("--watch", is_flag=True,
              help="Keep the work-tree index current: a `codeagent watch` child process rebuilds "
                   "it after each batch of file changes (the server stays read-only). While a "
                   "build runs index_status says `indexing`; clients subscribed to the "
                   "codeagent://index resource get notifications/resources/updated after it.")
@click.option("--org", "org_dir", type=click.Path(path_type=Path), default=None, metavar="DIR",
              help="Serve a fleet store (`codeagent org build`) instead: search_code across its "
                   "repositories, get_symbol and get_file_outline by repo (docs/org.md).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"]),
              default="warning", show_default=True, help="Log level (logs go to stderr).")
def serve_cmd(repo: Path, ref: str | None, store_dir: Path | None, transport: str, host: str,
              port: int, allow_remote: bool, allow_build: bool, profile: str,
              max_frame_bytes: int, watch: bool, org_dir: Path | None, log_level: str) -> None:
    """Serve the repository's index to agents over MCP (stdio by default).

    Answers from the newest complete manifest of REF and follows it across builds without a
    restart. Tools: file system (sandboxed to the repository, .gitignore-aware, secrets
    withheld), search, symbol navigation, call graph, status. Nothing but protocol messages is
    written to stdout; logs go to stderr.
    """
    logging.basicConfig(stream=sys.stderr, level=log_level.upper(),
                        format="codeagent serve: %(levelname)s %(name)s: %(message)s")
    if transport == "http" and not is_loopback(host) and not allow_remote:
        run_command(False, _refuse, InvalidParameter(
            f"--host {host} is not a loopback address; the server has no authentication",
            hint="bind to 127.0.0.1 (the default), or pass --allow-remote on a trusted network"))
    if org_dir is not None:
        _run(run_command(False, _make_org_server, org_dir), transport, host, port, max_frame_bytes, log_level)
        return
    server = run_command(False, _make_server, repo, ref, store_dir, allow_build, profile)
    beside = run_command(False, _watching, server) if watch else None
    _run(server, transport, host, port, max_frame_bytes, log_level, beside)


def _watching(server):
    """serve --watch: the watcher child, followed beside the transport (see watch.py)."""
    from ..mcp_server.watch import enable_watch_protocol, follow_watcher  # the MCP SDK, +~0.5 s: not for --help

    if server.state.config.ref not in (None, "worktree"):
        raise InvalidParameter(f"--watch keeps the work-tree index current, but --ref "
                               f"{server.state.config.ref} serves another index",
                               hint="leave --ref out (or pass --ref worktree) with --watch")
    enable_watch_protocol(server, server.state)
    return lambda send: follow_watcher(server.state, send)


def _run(server, transport: str, host: str, port: int, max_frame_bytes: int, log_level: str,
         beside=None) -> None:
    """Serve until the client goes (stdio) or the process is stopped (HTTP)."""
    import anyio

    if transport == "stdio":
        from ..mcp_server.stdio import serve_stdio  # the MCP SDK, +~0.5 s: not for `codeagent --help`

        # The SDK's own stdio runner reads unbounded lines; ours needs the low-level server,
        # which MCPServer does not expose publicly yet.
        anyio.run(serve_stdio, server._lowlevel_server, max_frame_bytes, beside)
    else:
        import uvicorn  # with the SDK's HTTP app, +~0.2 s: only for --transport http

        from ..mcp_server.http import http_app

        click.echo(f"codeagent serve: MCP over streamable HTTP at http://{host}:{port}/mcp "
                   f"(legacy SSE at /sse, health at /health)", err=True)
        config = uvicorn.Config(http_app(server, host), host=host, port=port,
                                log_level=log_level)
        anyio.run(_with_beside, uvicorn.Server(config).serve, beside)


async def _with_beside(serve, beside) -> None:
    """Run the HTTP server with `beside` along (no pushed notifications over HTTP yet)."""
    import anyio

    async with anyio.create_task_group() as tg:
        if beside is not None:
            tg.start_soon(beside, None)
        await serve()
        tg.cancel_scope.cancel()


def _refuse(exc: Exception) -> None:
    raise exc


def _make_org_server(org_dir: Path):
    from ..query.org import open_fleet  # the query package: not for --help
    from ..mcp_server.org import create_org_server  # the SDK, +~0.7 s: not for --help

    return create_org_server(open_fleet(org_dir))[0]


def _make_server(repo: Path, ref: str | None, store_dir: Path | None, allow_build: bool,
                 profile: str):
    from ..mcp_server.state import ServerConfig, ServerState  # the query package, +~0.4 s: not for --help

    state = ServerState(ServerConfig(repo, ref, store_dir, allow_build, profile))
    state.warm_up()  # opens the index while the SDK below is imported
    from ..mcp_server.app import create_server  # the SDK, +~0.7 s: not for --help

    return create_server(state)
