"""Characters of the compact `tools/list` answer, in total and per tool (description, input
schema, output schema, the rest), through the MCP SDK's in-memory client.

    python bench/tools_list.py REPO [--tools core|all] [--json OUT]

REPO is any built repository: the listing does not depend on its content.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

# in place of this folder, whose mcp.py would shadow the MCP SDK
sys.path[0] = str(Path(__file__).resolve().parents[1] / "tests" / "mcp_server")
from mcp_helpers import memory_client  # noqa: E402


def size(value) -> int:
    return len(json.dumps(value, separators=(",", ":")))


async def listing(repo: Path, tools: str) -> dict:
    async with memory_client(repo, tools=tools) as client:
        listed = await client.list_tools()
    return listed.model_dump(by_alias=True, exclude_none=True, mode="json")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("--tools", default="core", choices=("core", "all"))
    parser.add_argument("--json", dest="out", type=Path, default=None, help="write the listing here")
    opts = parser.parse_args()
    listed = asyncio.run(listing(opts.repo, opts.tools))
    print(f"tools/list ({opts.tools}): {size(listed)} characters")
    for tool in listed["tools"]:
        parts = {k: size(tool.get(k, "")) for k in ("description", "inputSchema", "outputSchema")}
        print(f"  {tool['name']:<20} {size(tool):>6}  " + "  ".join(f"{k} {v}" for k, v in parts.items())
              + f"  rest {size(tool) - sum(parts.values())}")
    if opts.out:
        opts.out.write_text(json.dumps(listed, indent=1))


if __name__ == "__main__":
    main()
