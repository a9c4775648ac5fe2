"""`include_tests` of the graph tools: test, mock and fixture files (by file role) left out."""

from __future__ import annotations

import pytest

from mcp_helpers import memory_client, ok, run_cli

pytestmark = pytest.mark.anyio


async def test_callers_and_callees_can_leave_test_code_out(git_repo):
    git_repo.write_many({
        "pkg/__init__.py": "",
        "pkg/core.py": "def helper():\n    return 1\n\ndef main():\n    return helper()\n",
        "tests/test_core.py": "from pkg.core import helper\n\ndef test_helper():\n    assert helper() == 1\n",
    })
    git_repo.commit("init")
    run_cli("build", git_repo.path)
    async with memory_client(git_repo.path) as c:
        every = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.core.helper"}))
        assert {n["qualified_name"] for n in every["nodes"]} == {"pkg.core.main", "tests.test_core.test_helper"}
        no_tests = ok(await c.call_tool("get_callers", {"symbol_id": "pkg.core.helper", "include_tests": False}))
        assert {n["qualified_name"] for n in no_tests["nodes"]} == {"pkg.core.main"}
        out = ok(await c.call_tool("get_callees", {"symbol_id": "tests.test_core.test_helper",
                                                   "include_tests": False}))
        assert {n["qualified_name"] for n in out["nodes"]} == {"pkg.core.helper"}
