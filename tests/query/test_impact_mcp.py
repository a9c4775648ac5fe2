"""get_impact over MCP (a real client on the server object): listed once in the default
profile, answering as detect_changes too, and paging its dependents with a cursor."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from codeagent.indexer.build import BuildOptions, build
from repo_helpers import past_racy_window

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "mcp_server"))
from mcp_helpers import error_code, memory_client, ok  # noqa: E402

pytestmark = pytest.mark.anyio

CORE = "def shared(x):\n    return x\n"
USERS = "".join(f"def user_{i}(v):\n    return shared(v) + {i}\n\n\n" for i in range(40))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def test_get_impact_answers_the_work_tree_and_pages_its_dependents(git_repo) -> None:
    git_repo.write_many({"pkg/__init__.py": "", "pkg/core.py": CORE, "pkg/users.py": "from pkg.core import shared\n\n\n" + USERS,
                         "tests/test_users.py": "from pkg.users import user_1\n\n\ndef test_user():\n    assert user_1(1) == 2\n",
                         "tests/test_misc.py": "def test_misc():\n    assert 1\n"})
    git_repo.commit("one")
    build(BuildOptions(repo=git_repo.path, rev="main", jobs=1))
    git_repo.write("pkg/core.py", "def shared(x, y=0):\n    return x + y\n")
    past_racy_window()
    build(BuildOptions(repo=git_repo.path, jobs=1))
    async with memory_client(git_repo.path, tools="core") as c:
        names = [t.name for t in (await c.list_tools()).tools]
        assert names.count("get_impact") == 1 and "detect_changes" not in names
        full = ok(await c.call_tool("get_impact", {"max_tokens": 100_000}))  # the default pages
        assert [(x["name"], x["change"]) for x in full["changed"]] == [("shared", "signature_changed")]
        assert full["summary"]["dependents"] == 41 and len(full["dependents"]) == 41
        assert {d["flag"] for d in full["dependents"]} == {"signature_changed"}
        assert full["tests"][0]["path"] == "tests/test_users.py" and full["tests"][0]["reason"]
        assert full["metadata"]["ref"] == "worktree" and full["base"]["ref"] == "heads/main"
        alias = ok(await c.call_tool("detect_changes", {"depth": 1, "max_tokens": 100_000}))
        assert alias["changed"] == full["changed"] and all(d["depth"] == 1 for d in alias["dependents"])
        first = ok(await c.call_tool("get_impact", {"max_tokens": 1200}))
        assert first["truncated"] and 0 < len(first["dependents"]) < 41 and first["risk"]["level"]
        seen = [d["name"] for d in first["dependents"]]
        cursor = first["next_cursor"]
        while cursor:
            page = ok(await c.call_tool("get_impact", {"max_tokens": 1200, "cursor": cursor}))
            seen += [d["name"] for d in page["dependents"]]
            cursor = page.get("next_cursor")
        assert seen == [d["name"] for d in full["dependents"]]
        assert error_code(await c.call_tool("get_impact", {"range": "main.."})) == "invalid_parameter"
        assert error_code(await c.call_tool("get_impact", {"range": "nosuch..main"})) in ("index_missing", "not_found")
