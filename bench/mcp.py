"""MCP round-trip latency per tool on the stdlib corpus, through the SDK's stdio client.

    python bench/mcp.py [--calls 40] [--corpus DIR]

Spawns `codeagent serve` over stdio and times each tools/call from send to parsed result
(p50/p95 in ms). The peer in the same run is the same server object through the SDK's
in-memory transport: the ratio is what the stdio transport and process boundary cost.
Targets: p95 <= 20 ms for symbol lookups, <= 100 ms for search_code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio


def _load_corpus():
    """bench/corpus.py, imported by path: this file is named mcp.py, so bench/ must not be on
    sys.path or it would shadow the `mcp` SDK."""
    import importlib.util

    here = Path(__file__).resolve().parent
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    spec = importlib.util.spec_from_file_location("bench_corpus", here / "corpus.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_corpus = _load_corpus()
median, percentile, print_table, stdlib_repo = (_corpus.median, _corpus.percentile,
                                                _corpus.print_table, _corpus.stdlib_repo)

SYMBOLS = ["urlparse", "OrderedDict", "JSONDecoder", "Thread", "Path", "dumps", "getLogger",
           "namedtuple", "TemporaryDirectory", "HTTPServer", "deepcopy", "ArgumentParser"]
QUALIFIED = ["json.decoder.JSONDecoder", "collections.OrderedDict", "pathlib.Path",
             "logging.getLogger", "copy.deepcopy", "argparse.ArgumentParser"]
QUERIES = ["parse url query string", "OrderedDict", "json/decoder.py", "thread pool executor",
           "ValueError: invalid literal", "deepcopy", "socket timeout", "read csv rows"]
TARGETS = {"lookup_symbol": 20, "locate_symbol": 20, "search_symbols": 20, "get_symbol": 20,
           "search_code": 100}


def workload(symbol_ids: list[str]) -> dict[str, list[dict]]:
    """tool -> argument sets cycled through (lookups use names and real handles)."""
    return {
        "lookup_symbol": [{"qualified_name": q} for q in QUALIFIED],
        "locate_symbol": [{"name": s} for s in SYMBOLS],
        "search_symbols": [{"query": s[:5], "match": "prefix"} for s in SYMBOLS],
        "get_symbol": [{"symbol_id": s} for s in symbol_ids],
        "get_file_outline": [{"path": p} for p in ("json/decoder.py", "pathlib.py", "argparse.py")],
        "get_callers": [{"symbol_id": s} for s in symbol_ids],
        "search_code": [{"query": q} for q in QUERIES],
        "search_docs": [{"query": "usage example"}],
        "read_file": [{"path": "json/__init__.py", "line_start": 1, "line_end": 80}],
        "list_directory": [{"path": "json"}, {"path": ""}],
        "search_files": [{"pattern": "def __init__", "glob": "json/**"}],
        "index_status": [{}],
    }


async def _handles(client) -> list[str]:
    ids = []
    for q in QUALIFIED:
        res = await client.call_tool("lookup_symbol", {"qualified_name": q})
        ids += [r["symbol_id"] for r in (res.structured_content or {}).get("results", [])[:1]]
    return ids


async def measure(client, calls: int) -> dict[str, list[float] | str]:
    """tool -> round-trip milliseconds, or the error code that stopped it."""
    ids = await _handles(client)
    times: dict[str, list[float] | str] = {}
    for tool, arg_sets in workload(ids).items():
        if not arg_sets:
            continue
        for i in range(3):  # warm caches (name index, DuckDB pages)
            await client.call_tool(tool, arg_sets[i % len(arg_sets)])
        samples: list[float] | str = []
        for i in range(calls):
            start = time.perf_counter()
            res = await client.call_tool(tool, arg_sets[i % len(arg_sets)])
            samples.append((time.perf_counter() - start) * 1000)
            if res.is_error:
                samples = "error: " + res.structured_content["error"]["code"]
                break
        times[tool] = samples
    return times


async def run(repo: Path, calls: int) -> tuple[dict, dict]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from codeagent.mcp_server.app import create_server
    from codeagent.mcp_server.state import ServerConfig, ServerState

    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "codeagent", "serve", "--repo", str(repo)],
                                   env=dict(os.environ))
    async with Client(params, read_timeout_seconds=120) as client:
        stdio = await measure(client, calls)
    state = ServerState(ServerConfig(repo))
    async with Client(create_server(state)) as client:
        memory = await measure(client, calls)
    state.close()
    return stdio, memory


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    subprocess.run([sys.executable, "-m", "codeagent", "build", str(repo)], check=True,
                   stdout=subprocess.DEVNULL)
    load_before = os.getloadavg()[0]
    stdio, memory = anyio.run(run, repo, args.calls)
    rows = []
    for tool, samples in stdio.items():
        if isinstance(samples, str) or isinstance(memory[tool], str):
            rows.append([tool, 0, samples if isinstance(samples, str) else memory[tool]] + [""] * 6)
            continue
        p50, p95 = median(samples), percentile(samples, 95)
        peer = percentile(memory[tool], 95)
        target = TARGETS.get(tool)
        verdict = "" if target is None else ("ok" if p95 <= target else "MISS")
        rows.append([tool, len(samples), f"{p50:.1f}", f"{p95:.1f}", f"{median(memory[tool]):.1f}",
                     f"{peer:.1f}", f"{p95 / peer:.2f}" if peer else "-",
                     f"<= {target}" if target else "", verdict])
    print(f"stdlib corpus at {repo}; {args.calls} calls per tool; "
          f"load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after")
    print_table(["tool", "n", "stdio p50 ms", "stdio p95 ms", "memory p50 ms", "memory p95 ms",
                 "p95 ratio", "target p95", ""], rows)


if __name__ == "__main__":
    main()
