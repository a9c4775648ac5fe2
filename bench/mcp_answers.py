"""MCP answers written to files, for a byte comparison of two versions of the code (`cmp`).

    python bench/mcp_answers.py --python PYTHON --out DIR --repo chi=CLONE:STORE --repo attrs=CLONE:STORE

Starts `PYTHON -m codeagent serve --repo CLONE --store STORE --tools all` over stdio and talks to
it with the MCP SDK's real client: tools/list, then 40 tool calls per repository (search_code
in every mode and both group_by, symbol lookups, the call graph, outlines, files, context,
research, impact, status). Each answer goes to OUT/<name>/<n>-<tool>.json, with the fields that
vary from run to run (latencies) taken out; everything else is kept, the text block included.
Run it under the previous and the new interpreter on the same stores and `cmp` the trees.

Each store is a `codeagent build` of the clone's work tree with `--embedder static` (semantic
and hybrid search have vectors) plus `--ref HEAD~3` and `--ref HEAD` (get_impact's range).
The call lists name symbols and files of go-chi/chi and python-attrs/attrs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # bench/mcp.py would shadow the mcp package

VOLATILE = frozenset({"latency_ms", "duration_ms", "elapsed_ms", "took_ms", "seconds"})
# the same fields inside a text block that carries the answer as JSON (format=json)
VOLATILE_IN_TEXT = re.compile(r'"(%s)":\s*[0-9.]+' % "|".join(sorted(VOLATILE)))

CHI = [
    ("search_code", {"query": "route middleware chain"}),
    ("search_code", {"query": "wildcard route pattern", "mode": "text"}),
    ("search_code", {"query": "Mux", "mode": "symbol"}),
    ("search_code", {"query": r"func \(mx \*Mux\) \w+\(", "mode": "regex"}),
    ("search_code", {"query": "middleware", "mode": "path"}),
    ("search_code", {"query": "compress the response writer", "mode": "hybrid"}),
    ("search_code", {"query": "throttle concurrent requests", "mode": "semantic"}),
    ("search_code", {"query": "url parameter from the request", "group_by": "file"}),
    ("search_code", {"query": "request id header", "group_by": "symbol", "format": "json"}),
    ("search_code", {"query": "recover from panic", "language": "go", "limit": 8, "format": "toon"}),
    ("search_symbols", {"query": "Mux"}),
    ("search_symbols", {"query": "New", "match": "prefix", "limit": 15}),
    ("search_symbols", {"query": "Routr", "match": "fuzzy"}),
    ("locate_symbol", {"name": "Chain"}),
    ("lookup_symbol", {"qualified_name": "Mux.ServeHTTP"}),
    ("get_symbol", {"symbol_id": "Mux", "include_source": True}),
    ("get_source_spans", {"symbol_id": "Chain", "with_text": True}),
    ("get_file_outline", {"path": "mux.go"}),
    ("get_file_outline", {"path": "middleware/compress.go", "format": "json"}),
    ("get_callers", {"symbol_id": "NewRouter"}),
    ("get_callers", {"symbol_id": "NewRouter", "include_tests": False}),
    ("get_callees", {"symbol_id": "Mux.ServeHTTP"}),
    ("get_references", {"symbol_id": "Context"}),
    ("get_implementations", {"symbol_id": "Router"}),
    ("get_dependencies", {"symbol_id": "Mux.Mount", "edge_type": "calls"}),
    ("get_dependents", {"symbol_id": "Mux"}),
    ("find_similar", {"symbol_id": "Chain"}),
    ("read_file", {"path": "mux.go", "line_start": 1, "line_end": 40}),
    ("search_files", {"pattern": "func New", "glob": "*.go", "max_results": 20}),
    ("search_files", {"pattern": r"http\.Handler\b", "is_regex": True, "context_lines": 1, "max_results": 15}),
    ("list_files", {"directory": "middleware", "pattern": "*.go"}),
    ("list_directory", {}),
    ("get_directory_tree", {"depth": 2}),
    ("get_repo_overview", {}),
    ("search_docs", {"query": "routing"}),
    ("get_context", {"task": "add a middleware that sets a request timeout", "budget": 3000}),
    ("code_research", {"query": "how does a request reach its handler", "depth": 2}),
    ("get_impact", {"range": "HEAD~3..HEAD"}),
    ("index_status", {}),
]

ATTRS = [
    ("search_code", {"query": "validate attribute values on init"}),
    ("search_code", {"query": "frozen instance error", "mode": "text"}),
    ("search_code", {"query": "attrib", "mode": "symbol"}),
    ("search_code", {"query": r"def _make_\w+\(", "mode": "regex"}),
    ("search_code", {"query": "validators", "mode": "path"}),
    ("search_code", {"query": "convert a class to a dict", "mode": "hybrid"}),
    ("search_code", {"query": "compare two instances for equality", "mode": "semantic"}),
    ("search_code", {"query": "slots class weakref", "group_by": "file"}),
    ("search_code", {"query": "default factory", "group_by": "symbol", "format": "json"}),
    ("search_code", {"query": "evolve a copy with changes", "language": "python", "limit": 8,
                     "format": "toon"}),
    ("search_symbols", {"query": "attrib"}),
    ("search_symbols", {"query": "_make_", "match": "prefix", "limit": 15}),
    ("search_symbols", {"query": "ClasBuilder", "match": "fuzzy"}),
    ("locate_symbol", {"name": "evolve"}),
    ("lookup_symbol", {"qualified_name": "attr._make._ClassBuilder.build_class"}),
    ("get_symbol", {"symbol_id": "attr._make.attrib", "include_source": True}),
    ("get_source_spans", {"symbol_id": "attr._funcs.asdict", "with_text": True}),
    ("get_file_outline", {"path": "src/attr/_make.py"}),
    ("get_file_outline", {"path": "src/attr/validators.py", "format": "json"}),
    ("get_callers", {"symbol_id": "attr._make.fields"}),
    ("get_callers", {"symbol_id": "attr._make.fields", "include_tests": False}),
    ("get_callees", {"symbol_id": "attr._make._ClassBuilder.build_class"}),
    ("get_references", {"symbol_id": "b2b28852078ef9c5"}),  # the class Attribute: a variable shares its name
    ("get_implementations", {"symbol_id": "attr._make._ClassBuilder"}),
    ("get_dependencies", {"symbol_id": "attr._funcs.asdict", "edge_type": "calls"}),
    ("get_dependents", {"symbol_id": "9e4c2f629be01fed"}),  # the class Factory, likewise
    ("find_similar", {"symbol_id": "attr._funcs.astuple"}),
    ("read_file", {"path": "src/attr/_funcs.py", "line_start": 1, "line_end": 60}),
    ("search_files", {"pattern": "def ", "glob": "src/attr/*.py", "max_results": 20}),
    ("search_files", {"pattern": r"raise \w+Error\(", "is_regex": True, "context_lines": 1,
                      "max_results": 15}),
    ("list_files", {"directory": "src/attr", "pattern": "*.py"}),
    ("list_directory", {"path": "src"}),
    ("get_directory_tree", {"depth": 2}),
    ("get_repo_overview", {}),
    ("search_docs", {"query": "how to write a validator"}),
    ("get_context", {"task": "make frozen classes hashable by default", "budget": 3000}),
    ("code_research", {"query": "how are slotted classes built", "depth": 2}),
    ("get_impact", {"range": "HEAD~3..HEAD"}),
    ("index_status", {}),
]

CALLS = {"chi": CHI, "attrs": ATTRS}


def stable(value):
    """The answer without the fields that vary from run to run."""
    if isinstance(value, dict):
        return {k: stable(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [stable(v) for v in value]
    if isinstance(value, str):
        return VOLATILE_IN_TEXT.sub(r'"\1":0', value)
    return value


def dump(path: Path, model) -> None:
    data = stable(model.model_dump(mode="json", by_alias=True, exclude_none=True))
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")


async def answer(python: str, name: str, clone: Path, store: Path, out: Path) -> int:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=python, cwd=str(clone),
        args=["-m", "codeagent", "serve", "--repo", str(clone), "--store", str(store), "--tools", "all"],
        # A fixed hash seed: get_context's "matches a, b, c" lists terms of equal weight in set
        # order, which otherwise changes from one server process to the next.
        env={**os.environ, "CODEAGENT_DAEMON": "0", "PYTHONUNBUFFERED": "1", "PYTHONHASHSEED": "0"})
    out.mkdir(parents=True, exist_ok=True)
    errors = 0
    async with Client(params, read_timeout_seconds=120) as client:
        dump(out / "00-tools-list.json", await client.list_tools())
        first_cursor = None
        for n, (tool, args) in enumerate(CALLS[name], 1):
            result = await client.call_tool(tool, args)
            errors += bool(result.is_error)
            dump(out / f"{n:02d}-{tool}.json", result)
            if n == 1:
                first_cursor = (result.structured_content or {}).get("next_cursor")
        if first_cursor:  # the next page of the first search, through its cursor
            n += 1
            dump(out / f"{n:02d}-search_code-page2.json",
                 await client.call_tool(CALLS[name][0][0], {**CALLS[name][0][1], "cursor": first_cursor}))
    return errors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", required=True, help="interpreter with the codeagent to serve")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repo", action="append", required=True, metavar="NAME=CLONE:STORE",
                    help=f"NAME one of {', '.join(CALLS)}")
    args = ap.parse_args()
    for spec in args.repo:
        name, _, paths = spec.partition("=")
        clone, _, store = paths.partition(":")
        errors = asyncio.run(answer(args.python, name, Path(clone), Path(store), args.out / name))
        files = len(list((args.out / name).glob("*.json")))
        print(f"{name}: {files} answers in {args.out / name} ({errors} tool errors)")


if __name__ == "__main__":
    main()
