"""Answer sizes of 8 ordinary MCP calls on two real repositories (the text block and the
structured content, in characters) and whether the expected thing is in the first answer;
the core tools/list's size. Usage (each a clone built with `codeagent build`):

    python bench/mcp_answer_sizes.py RICH_CLONE CHI_CLONE
"""
import asyncio, json, sys, statistics
from pathlib import Path

if sys.path and Path(sys.path[0]).resolve() == Path(__file__).resolve().parent:
    sys.path.pop(0)  # bench/mcp.py would shadow the mcp package
from mcp import Client
from codeagent.mcp_server.app import create_server
from codeagent.mcp_server.state import ServerConfig, ServerState

def compact(o): return json.dumps(o, separators=(",", ":"), ensure_ascii=False)

CALLS = {
 "rich": [("search_code", {"query": "render a table with columns"}, "rich/table.py"),
          ("search_symbols", {"query": "Console"}, "rich.console.Console"),
          ("get_file_outline", {"path": "rich/console.py"}, "rich.console.Console ["),
          ("get_callers", {"symbol_id": "rich.console.Console.print"}, "rich/"),
          ("read_file", {"path": "rich/console.py"}, "import"),
          ("search_files", {"pattern": "import"}, "import"),
          ("get_symbol", {"symbol_id": "rich.console.Console"}, "Console"),
          ("get_references", {"symbol_id": "rich.text.Text"}, "rich/")],
 "chi": [("search_code", {"query": "route middleware chain"}, "chain.go"),
         ("search_symbols", {"query": "Mux"}, "Mux"),
         ("get_file_outline", {"path": "mux.go"}, "Mux"),
         ("get_callers", {"symbol_id": "NewRouter"}, "_test.go"),
         ("read_file", {"path": "mux.go"}, "package chi"),
         ("search_files", {"pattern": "func"}, "func"),
         ("get_symbol", {"symbol_id": "Mux"}, "Mux"),
         ("get_references", {"symbol_id": "Context"}, ".go")],
}

async def main():
    rows = []
    for name, calls in CALLS.items():
        state = ServerState(ServerConfig(Path(ROOTS[name]), tools="all"))
        async with Client(create_server(state)) as c:
            if name == "rich":
                listed = await c.list_tools()
            for tool, args, expect in calls:
                r = await c.call_tool(tool, args)
                text = "".join(getattr(b, "text", "") for b in r.content)
                sc = compact(r.structured_content) if r.structured_content is not None else ""
                found = expect in text or expect in sc
                rows.append((name, tool, json.dumps(args), len(text), len(sc), len(text) + len(sc), found, r.is_error))
        state.close()
    for row in rows: print("\t".join(map(str, row)))
    print("median total", statistics.median(r[5] for r in rows), "max", max(r[5] for r in rows))
    print("median text", statistics.median(r[3] for r in rows), "median structured", statistics.median(r[4] for r in rows))
    state = ServerState(ServerConfig(Path(ROOTS["rich"]), tools="core"))
    async with Client(create_server(state)) as c:
        listed = await c.list_tools()
    print("tools/list core", len(compact(listed.model_dump(by_alias=True, exclude_none=True, mode="json"))))
ROOTS = dict(zip(("rich", "chi"), sys.argv[1:3]))
asyncio.run(main())
