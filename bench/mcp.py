"""What `codeagent serve` costs an agent on the stdlib corpus, through the SDK's stdio client:
the size of `tools/list`, the median and largest answer of a scripted 20-call agent session,
and the round-trip latency per tool (p50/p95 in ms).

    python bench/mcp.py [--calls 40] [--corpus DIR] [--before PYTHON]

`--before` is the Python of another checkout (its venv), run on the same index in the same
run, so the "before" column is measured under the same load. Sizes are characters of the
compact JSON of each `tools/list` / `tools/call` result as the client receives it.
Targets: p95 <= 20 ms for symbol lookups, <= 100 ms for search_code.
"""

from __future__ import annotations

import argparse
import hashlib
import os
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
# search_code on task-like queries in words (the file-ranked path; bench/query.py's set)
NL_QUERIES = ["parse http response headers", "read configuration file sections",
              "compress data with zlib", "thread pool executor shutdown", "format date time string",
              "open a socket connection with timeout", "decode json object", "temporary directory cleanup"]
NL_ROW = "search_code (natural language)"
TARGETS = {"lookup_symbol": 20, "locate_symbol": 20, "search_symbols": 20, "get_symbol": 20,
           "search_code": 100, NL_ROW: 100}


# A scripted agent session: orient, search, look up, read, follow the graph (core tools only,
# handles given as qualified names so every server version takes them).
SESSION = [
    ("get_repo_overview", {}), ("search_code", {"query": "parse url query string"}),
    ("search_code", {"query": "OrderedDict"}), ("search_symbols", {"query": "urlparse"}),
    ("lookup_symbol", {"qualified_name": "json.decoder.JSONDecoder"}),
    ("get_symbol", {"symbol_id": "json.decoder.JSONDecoder"}),
    ("get_file_outline", {"path": "json/decoder.py"}),
    ("read_file", {"path": "json/decoder.py", "line_start": 1, "line_end": 80}),
    ("get_callers", {"symbol_id": "urllib.parse.urlparse"}),
    ("get_callees", {"symbol_id": "urllib.parse.urlparse"}),
    ("get_references", {"symbol_id": "copy.deepcopy"}),
    ("search_files", {"pattern": "def __init__", "glob": "json/**"}),
    ("list_directory", {"path": "json"}), ("code_research", {"query": "what calls deepcopy"}),
    ("get_file_outline", {"path": "argparse.py"}),
    ("search_code", {"query": "ValueError: invalid literal"}), ("read_file", {"path": "argparse.py"}),
    ("search_files", {"pattern": "TODO"}), ("get_callers", {"symbol_id": "logging.getLogger"}),
    ("index_status", {}),
]


def _size(result) -> int:
    import json

    return len(json.dumps(result.model_dump(by_alias=True, exclude_none=True, mode="json"),
                          separators=(",", ":"), ensure_ascii=False))


def _text(result) -> int:
    """Characters of the text content: what a client that shows the model `content` sends it."""
    return sum(len(getattr(c, "text", "")) for c in result.content)


async def session(client) -> dict:
    """tools/list size and each session answer as (tool, text chars, wire chars, isError)."""
    listed = _size(await client.list_tools())
    answers = []
    for tool, args in SESSION:
        res = await client.call_tool(tool, args)
        answers.append((tool, _text(res), _size(res), bool(res.is_error)))
    return {"tools_list": listed, "answers": answers}


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
        NL_ROW: [{"query": q} for q in NL_QUERIES],
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
    """row -> round-trip milliseconds, or the error that stopped it (a row "tool (what)"
    calls `tool`)."""
    ids = await _handles(client)
    times: dict[str, list[float] | str] = {}
    for row, arg_sets in workload(ids).items():
        if not arg_sets:
            continue
        tool = row.split(" (")[0]
        for i in range(3):  # warm caches (name index, DuckDB pages)
            await client.call_tool(tool, arg_sets[i % len(arg_sets)])
        samples: list[float] | str = []
        for i in range(calls):
            start = time.perf_counter()
            res = await client.call_tool(tool, arg_sets[i % len(arg_sets)])
            samples.append((time.perf_counter() - start) * 1000)
            if res.is_error:
                samples = "error: " + str(res.content[0].text)[:60]
                break
        times[row] = samples
    return times


async def run(python: str, repo: Path, calls: int) -> tuple[dict, dict]:
    """(session sizes with the default tools, latencies with every tool) of one server, on an
    index that `python` built in a store of its own (versions may differ in format)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    store = repo.parent / f"{repo.name}-store-{hashlib.blake2b(python.encode(), digest_size=4).hexdigest()}"
    await anyio.run_process([python, "-m", "codeagent", "build", str(repo), "--store", str(store)])

    def params(*extra: str) -> StdioServerParameters:
        return StdioServerParameters(command=python, env=dict(os.environ),
                                     args=["-m", "codeagent", "serve", "--repo", str(repo),
                                           "--store", str(store), *extra])

    async with Client(params(), read_timeout_seconds=120) as client:
        sizes = await session(client)
    async with Client(params(), read_timeout_seconds=120) as client:
        all_tools = {t.name for t in (await client.list_tools()).tools} >= {r.split(" (")[0] for r in workload([])}
    async with Client(params(*([] if all_tools else ["--tools", "all"])),
                      read_timeout_seconds=120) as client:
        times = await measure(client, calls)
    return sizes, times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=40)
    ap.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "codeagent-bench-stdlib")
    ap.add_argument("--before", help="Python of the checkout to compare with (its venv)")
    args = ap.parse_args()
    repo = stdlib_repo(args.corpus)
    load_before = os.getloadavg()[0]
    runs = {"after": anyio.run(run, sys.executable, repo, args.calls)}
    if args.before:
        runs = {"before": anyio.run(run, args.before, repo, args.calls), **runs}
    print(f"stdlib corpus at {repo}; {args.calls} calls per tool; "
          f"load {load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
          f"(/proc/loadavg: {Path('/proc/loadavg').read_text().strip()})")
    rows = []
    for name, (sizes, _times) in runs.items():
        answers = sizes["answers"]
        biggest = max(answers, key=lambda a: a[1])
        rows.append([name, sizes["tools_list"], f"{median([a[1] for a in answers]):.0f}",
                     f"{biggest[1]} ({biggest[0]})", sum(a[1] for a in answers),
                     f"{median([a[2] for a in answers]):.0f}", max(a[2] for a in answers),
                     ", ".join(a[0] for a in answers if a[3]) or "-"])
    print_table(["server", "tools/list chars", "text median", "text max", "text total",
                 "wire median", "wire max", "errors"], rows)
    names = list(runs)
    rows = []
    for tool in runs["after"][1]:
        row, verdict = [tool], ""
        for name in names:
            samples = runs[name][1].get(tool, "absent")
            if isinstance(samples, str):
                row += [samples, ""]
                continue
            p95 = percentile(samples, 95)
            row += [f"{median(samples):.1f}", f"{p95:.1f}"]
            if name == "after" and tool in TARGETS:
                verdict = "ok" if p95 <= TARGETS[tool] else "MISS"
        rows.append(row + [f"<= {TARGETS[tool]}" if tool in TARGETS else "", verdict])
    print_table(["tool"] + [f"{n} {q} ms" for n in names for q in ("p50", "p95")]
                + ["target p95", ""], rows)


if __name__ == "__main__":
    main()
